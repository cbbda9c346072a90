#!/usr/bin/env bash
# The weight-streaming benchmark (issue 4) in one call on the GPU machine:
#   bench/streaming/run.sh OUTDIR
# Steps (each logged to OUTDIR/<step>.log with OUTDIR/<step>.rc = "status timeout_s wall_ms", or
# OUTDIR/<step>.skip = why it did not run; a failed step is reported and the run goes on):
#   export        bench/streaming/export_llama.py: LlamaStack fp16, 20 layers (8 GB), dynamic seq, external
#                 data; cached in $BENCH_CACHE while models.py / export.py / export_llama.py are unchanged
#   build         streamrt build --weight-streaming --profile hidden_states:1x1xH:1xTxH:1xTxH (timed)
#   stream_bench  streamrt_stream_bench PLAN over --seqs x --budgets -> OUTDIR/streamrt.jsonl
#   stream_bench_graph   the same with --cuda-graph (only with BENCH_CUDA_GRAPH=1)
#   torch_peer    bench/streaming/torch_peer.py: bandwidth, resident, prefetch loop, accelerate -> OUTDIR/torch.jsonl
#   report        bench/streaming/report.py -> OUTDIR/streaming.md, streaming.json, streaming.png (printed last)
# OUTDIR gets only small files (no model, no plan). Through the device tool:
#   run(command="BENCH_PACK_LOGS=1 bench/streaming/run.sh $OUT", carry=[".gpu"])
#
# Environment (all optional):
#   STREAMRT_BIN_DIR  where streamrt and streamrt_stream_bench are (default: .gpu/bin of this checkout, with
#                     the paths set by scripts/gpu-env, as scripts/gpu-check does)
#   BENCH_LAYERS      decoder layers (default 20: 8.05 GB of fp16 projection weights; 2 with BENCH_TINY=1)
#   BENCH_DEADLINE_S  seconds for the whole run, report included (default 520)
#   BENCH_ITERS / BENCH_WARMUP   timed / untimed runs per point (default 5 / 1)
#   BENCH_SEQS        sequence lengths (default 1,2048; 1,32 with BENCH_TINY=1)
#   BENCH_BUDGETS     budgets in percent (default 0,10,...,100)
#   BENCH_CACHE       exports and the plan (default /tmp/bench-streaming)
#   BENCH_TORCH_RESERVE_S  seconds kept for torch_peer when the streamrt steps run (default 170, at most a
#                     third of BENCH_DEADLINE_S)
#   BENCH_STREAMRT_EAGER=1 streamrt's sweep runs eagerly (default on CUDA: replayed as CUDA graphs, as deployed);
#   BENCH_CUDA_GRAPH=1     with BENCH_STREAMRT_EAGER=1: also sweep with --cuda-graph (when the time allows)
#   BENCH_KEEP_PLAN=1      keep the plan after the sweep (default: deleted)
#   BENCH_DEVICE      streamrt build --device (default cuda; cpu for tests)
#   BENCH_PACK_LOGS=1 pack the step logs (*.log, *.rc, *.skip, config / env / export JSON) into
#                     OUTDIR/logs.tgz, leaving at most 6 files (the device tool returns 8 at most)
#   BENCH_NO_TORCH=1  skip torch_peer (streamrt only, e.g. with STREAMRT_STEP_TIMES / STREAMRT_STREAM_TRACE
#                     set to files under OUTDIR and BENCH_STREAMRT_EAGER=1 to record per-step times and
#                     the copy / stall timeline of each point: see docs/weight-streaming.md)
#   BENCH_TINY=1      tiny model (tests)
#   PYTHON            python3
set -u
export PYTHONUNBUFFERED=1

OUTDIR=${1:?usage: bench/streaming/run.sh OUTDIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
mkdir -p "$OUTDIR" || exit 1
OUTDIR=$(cd "$OUTDIR" && pwd)
for f in "$OUTDIR"/*.jsonl "$OUTDIR"/*.log "$OUTDIR"/*.rc "$OUTDIR"/*.skip "$OUTDIR"/streaming.* \
         "$OUTDIR"/env.txt "$OUTDIR"/config.json "$OUTDIR"/export.json; do
  [ -e "$f" ] && rm -f "$f"  # results of an earlier run in the same folder
done

PY=${PYTHON:-python3}
TINY=${BENCH_TINY:-0}
CACHE=${BENCH_CACHE:-/tmp/bench-streaming}
ITERS=${BENCH_ITERS:-5}
WARMUP=${BENCH_WARMUP:-1}
DEVICE=${BENCH_DEVICE:-cuda}
if [ "$TINY" = 1 ]; then
  LAYERS=${BENCH_LAYERS:-2}; SEQS=${BENCH_SEQS:-1,32}; TINY_FLAG=(--tiny)
else
  LAYERS=${BENCH_LAYERS:-20}; SEQS=${BENCH_SEQS:-1,2048}; TINY_FLAG=()
fi
BUDGETS=${BENCH_BUDGETS:-0,10,20,30,40,50,60,70,80,90,100}
DEADLINE_S=${BENCH_DEADLINE_S:-520}
TORCH_RESERVE=${BENCH_TORCH_RESERVE_S:-$(( DEADLINE_S / 3 < 170 ? DEADLINE_S / 3 : 170 ))}
[ "${BENCH_NO_TORCH:-0}" = 1 ] && TORCH_RESERVE=0
REPORT_RESERVE=15
START=$(date +%s)
DEADLINE=$(( START + DEADLINE_S ))
MIN_SEQ=$(tr , '\n' <<< "$SEQS" | sort -n | head -1)
MAX_SEQ=$(tr , '\n' <<< "$SEQS" | sort -n | tail -1)

if [ -n "${STREAMRT_BIN_DIR:-}" ]; then
  BIN=$STREAMRT_BIN_DIR  # its libraries: found through rpath or the caller's LD_LIBRARY_PATH
elif [ -d "$ROOT/.gpu" ]; then
  # The bundle of scripts/gpu-bundle: scripts/gpu-env unpacks its libraries, sets LD_LIBRARY_PATH and BIN.
  pushd "$ROOT" > /dev/null && source scripts/gpu-env && popd > /dev/null
else
  BIN=$ROOT/.gpu/bin
fi

elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( DEADLINE - REPORT_RESERVE - $(date +%s) - ${1:-0} )); }  # [reserve for later steps]
say() { echo "[$(elapsed)s] $*"; }

# step NAME CAP_S RESERVE_S CMD...: CMD with a timeout of min(CAP_S, time left - RESERVE_S), output to
# OUTDIR/NAME.log, "status timeout_s wall_ms" to OUTDIR/NAME.rc; with under 10 s left, OUTDIR/NAME.skip.
step() {
  local name=$1 cap=$2 reserve=$3; shift 3
  local t; t=$(left "$reserve")
  if (( t < 10 )); then
    echo "skipped: time budget spent" > "$OUTDIR/$name.skip"; say "$name: skipped (time budget spent)"; return 1
  fi
  (( cap < t )) && t=$cap
  say "$name (timeout ${t}s): $*"
  local t0; t0=$(date +%s%N)
  timeout -k 10 "$t" "$@" > "$OUTDIR/$name.log" 2>&1
  local rc=$?
  echo "$rc $t $(( ($(date +%s%N) - t0) / 1000000 ))" > "$OUTDIR/$name.rc"
  if (( rc != 0 )); then say "$name: rc=$rc; last line: $(grep -v '^\s*$' "$OUTDIR/$name.log" | tail -1 | cut -c1-200)"
  else say "$name: done in $(( ($(date +%s%N) - t0) / 1000000000 ))s"; fi
  return $rc
}
skip() { echo "$2" > "$OUTDIR/$1.skip"; say "$1: $2"; }

# ---------------------------------------------------------------- environment
{
  echo "date: $(date -u +%FT%TZ), host: $(hostname), $(nproc) cores, $(free -g | awk '/^Mem/{print $2}') GiB memory"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader
  "$PY" -c "import torch, sys
try:
    import accelerate; acc = accelerate.__version__
except Exception as e:
    acc = 'missing (%s)' % type(e).__name__
print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, 'accelerate', acc)" 2>&1 | tail -1
  echo "streamrt: $BIN/streamrt ($("$BIN/streamrt" --version 2>&1 | head -1))"
  echo "disk free in $(dirname "$CACHE"): $(df -h --output=avail "$(dirname "$CACHE")" 2>/dev/null | tail -1 | tr -d ' ')"
} > "$OUTDIR/env.txt" 2>&1
cat "$OUTDIR/env.txt"
cat > "$OUTDIR/config.json" <<EOF
{"layers": $LAYERS, "tiny": $([ "$TINY" = 1 ] && echo true || echo false), "seqs": "$SEQS", "budgets": "$BUDGETS", "iters": $ITERS, "warmup": $WARMUP, "deadline_s": $DEADLINE_S, "device": "$DEVICE", "bin": "$BIN", "cache": "$CACHE"}
EOF
for b in streamrt streamrt_stream_bench; do
  [ -x "$BIN/$b" ] || say "warning: $BIN/$b is not executable: its steps will fail"
done

# ---------------------------------------------------------------- export (cached)
KEY=llama_l${LAYERS}_s${MAX_SEQ}$([ "$TINY" = 1 ] && echo _tiny)
MODEL_DIR=$CACHE/$KEY
SRC_HASH=$(cat "$ROOT/bench/models.py" "$ROOT/bench/export.py" "$HERE/export_llama.py" | md5sum | cut -c1-16)
mkdir -p "$CACHE" || exit 1
rm -rf "$CACHE"/*.partial  # an interrupted export
if [ -s "$MODEL_DIR/export.json" ] && [ "$(cat "$MODEL_DIR/source.hash" 2>/dev/null)" = "$SRC_HASH" ]; then
  say "export: cached in $MODEL_DIR"
  echo "cached in $MODEL_DIR" > "$OUTDIR/export.log"; echo "0 0 0" > "$OUTDIR/export.rc"
else
  rm -rf "$CACHE"/llama_l*  # other exports: the disk holds one 8 GB model and its plan comfortably
  step export 330 $(( TORCH_RESERVE + 60 )) "$PY" "$HERE/export_llama.py" "$MODEL_DIR" --layers "$LAYERS" \
    --max-seq "$MAX_SEQ" "${TINY_FLAG[@]}" && echo "$SRC_HASH" > "$MODEL_DIR/source.hash"
fi
[ -s "$MODEL_DIR/export.json" ] && cp "$MODEL_DIR/export.json" "$OUTDIR/export.json"

# ---------------------------------------------------------------- streamrt: build, sweep
PLAN=$CACHE/stream.plan
rm -f "$PLAN"
if [ -s "$MODEL_DIR/export.json" ]; then
  H=$("$PY" -c "import json, sys; print(json.load(open(sys.argv[1]))['config']['hidden'])" "$MODEL_DIR/export.json")
  PROFILE="hidden_states:1x${MIN_SEQ}x${H}:1x${MAX_SEQ}x${H}:1x${MAX_SEQ}x${H}"
  step build 300 $(( TORCH_RESERVE + 40 )) "$BIN/streamrt" build "$MODEL_DIR/model.onnx" -o "$PLAN" \
    --weight-streaming --device "$DEVICE" --profile "$PROFILE"
else
  skip build "failed: no exported model (see export.log)"
fi
if [ -s "$PLAN" ]; then
  # The export and the plan just wrote ~16 GB: flush them first, or their writeback competes with the
  # first points' host-to-device copies (and only streamrt's, which runs first).
  sync
  # streamrt runs as deployed: each point's runs replayed as a CUDA graph (BENCH_STREAMRT_EAGER=1: eager).
  # CUDA graphs exist only on CUDA: the CPU device (BENCH_DEVICE=cpu, the selftest) runs eagerly.
  GRAPH_FLAG=(--cuda-graph); [ "${BENCH_STREAMRT_EAGER:-0}" = 1 ] || [ "$DEVICE" != cuda ] && GRAPH_FLAG=()
  step stream_bench 300 "$TORCH_RESERVE" "$BIN/streamrt_stream_bench" "$PLAN" --input hidden_states --seqs "$SEQS" \
    --budgets "$BUDGETS" --iters "$ITERS" --warmup "$WARMUP" "${GRAPH_FLAG[@]}" --json "$OUTDIR/streamrt.jsonl"
  if [ "${BENCH_CUDA_GRAPH:-0}" = 1 ] && [ "${BENCH_STREAMRT_EAGER:-0}" = 1 ]; then
    if (( $(left "$TORCH_RESERVE") > 60 )); then
      step stream_bench_graph 200 "$TORCH_RESERVE" "$BIN/streamrt_stream_bench" "$PLAN" --input hidden_states \
        --seqs "$SEQS" --budgets "$BUDGETS" --iters "$ITERS" --warmup "$WARMUP" --cuda-graph \
        --json "$OUTDIR/streamrt_graph.jsonl"
    else
      skip stream_bench_graph "skipped: time budget spent"
    fi
  fi
  [ "${BENCH_KEEP_PLAN:-0}" = 1 ] || rm -f "$PLAN"
else
  skip stream_bench "failed: no plan (see build.log)"
fi

# ---------------------------------------------------------------- PyTorch peers
t=$(left)
if [ "${BENCH_NO_TORCH:-0}" = 1 ]; then
  skip torch_peer "skipped: BENCH_NO_TORCH=1"
elif (( t > 20 )); then
  sync
  step torch_peer "$t" 0 "$PY" "$HERE/torch_peer.py" --layers "$LAYERS" --max-seq "$MAX_SEQ" "${TINY_FLAG[@]}" \
    --seqs "$SEQS" --budgets "$BUDGETS" --iters "$ITERS" --warmup "$WARMUP" --json "$OUTDIR/torch.jsonl" \
    --deadline-s $(( t - 15 ))
else
  skip torch_peer "skipped: time budget spent"
fi

# ---------------------------------------------------------------- report
say "report"
"$PY" "$HERE/report.py" "$OUTDIR" --elapsed-s "$(elapsed)" > "$OUTDIR/report.log" 2>&1
rc=$?
if [ $rc = 0 ]; then cat "$OUTDIR/streaming.md"; else tail -20 "$OUTDIR/report.log"; fi
if [ "${BENCH_PACK_LOGS:-0}" = 1 ]; then
  (cd "$OUTDIR" && files=$(ls -d -- *.log *.rc *.skip config.json env.txt export.json 2>/dev/null)
    [ -n "$files" ] && tar czf logs.tgz $files && rm -f $files)
fi
say "done: $OUTDIR/streaming.md (report rc=$rc)"
exit $rc

#!/usr/bin/env bash
# Issue 16's benchmark on one GPU: transformers' Llama-3.2-1B- and Qwen2.5-0.5B-shaped models (random fp16
# weights) exported by torch.onnx (dynamo) with their attention_mask, streamrt against PyTorch eager,
# torch.compile and torch.compile(mode="reduce-overhead"). One call, within BENCH_DEADLINE_S:
#   bench/hf/run.sh OUTDIR            (device tool: run(command="bench/hf/run.sh $OUT", carry=[".gpu"]))
# Writes OUTDIR/hf.md (tables, printed at the end), hf.json, hf.png (when matplotlib imports), logs/.
#
# Points per model and batch (1, 8): prefill of 1, 512, 2048 tokens (no cache, logits of every position) and a
# decode step (1 token) after 512 and 2048 cached positions. Every step has a timeout; a point that fails or is
# not reached is a table cell "failed: ..." / "n/a: ..."; the report is always written.
#
# Order: inputs (.npy, inputs.py), 4 exports (model x prefill / decode, export.py, cached in $BENCH_CACHE) and
#   4 PyTorch processes per model (eager + torch.compile / reduce-overhead x prefill / decode, torch_peer.py) start
#   together; the PyTorch processes compile and warm every point until BENCH_COMPILE_S.
# streamrt, as soon as the exports are there: per point `streamrt run model.onnx --shapes <point> --cuda-graph`
#   (built in memory; again without --cuda-graph when that fails), outputs kept for the check; at the profile
#   point a plan file, a STREAMRT_PROFILE=1 run and `inspect`. Each streamrt process holds an flock that the
#   PyTorch processes take for their warm runs: streamrt shares the CPU with the compiles, never the GPU.
# Then, with nothing else running, each PyTorch process in turn times its points (eager checks streamrt's
#   outputs), and report.py writes the tables.
# Environment (all optional):
#   BENCH_DEADLINE_S (520)   the whole run, report included; BENCH_COMPILE_S (deadline - 250, at least 60): compiling
#   stops then
#   BENCH_TORCH_RESERVE_S (90)  kept after streamrt's runs for the PyTorch timings
#   BENCH_ITERS / BENCH_WARMUP (20 / 5)   timed / untimed runs per point and peer
#   BENCH_MODELS ("llama qwen"; also "llama8b": Llama-3.1-8B shape, 4 layers, head size 128), BENCH_BATCHES (1,8), BENCH_POINTS (prefill:1,prefill:512,prefill:2048,
#   decode:512,decode:2048), BENCH_IMPLS (eager,compile,ro), BENCH_PROFILE_POINT (b1:prefill:512)
#   BENCH_CHECK_MAX_MB (1300)  points whose outputs are larger are not checked (streamrt writes them as .npy)
#   BENCH_CACHE (/tmp/bench-hf)  exports (reused while models.py / export.py are unchanged) and inputs
#   BENCH_RUN_TIMEOUT_S (150) one streamrt run; BENCH_CUDA_GRAPH (1 on cuda): run streamrt with --cuda-graph
#   BENCH_DEVICE (cuda) / BENCH_TINY=1: CPU self-test (bench/hf/selftest.sh); STREAMRT_BIN_DIR; PYTHON
set -u
export PYTHONUNBUFFERED=1
export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-4}  # 8 compiling processes share the cores
OUTDIR=${1:?usage: bench/hf/run.sh OUTDIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd)
LOGS=$OUTDIR/logs
rm -rf "$LOGS" && mkdir -p "$LOGS" || exit 1
PY=${PYTHON:-python3}
TINY=${BENCH_TINY:-0}
DEVICE=${BENCH_DEVICE:-cuda}
CACHE=${BENCH_CACHE:-/tmp/bench-hf}
MODELS=${BENCH_MODELS:-llama qwen}
if [ "$TINY" = 1 ]; then
  BATCHES=${BENCH_BATCHES:-1,2}; POINTS=${BENCH_POINTS:-prefill:1,prefill:16,prefill:64,decode:16,decode:64}
  PROFILE_POINT=${BENCH_PROFILE_POINT:-b1:prefill:16}; TINY_FLAG=(--tiny)
else
  BATCHES=${BENCH_BATCHES:-1,8}; POINTS=${BENCH_POINTS:-prefill:1,prefill:512,prefill:2048,decode:512,decode:2048}
  PROFILE_POINT=${BENCH_PROFILE_POINT:-b1:prefill:512}; TINY_FLAG=()
fi
ITERS=${BENCH_ITERS:-20}
WARMUP=${BENCH_WARMUP:-5}
IMPLS=${BENCH_IMPLS:-eager,compile,ro}
CHECK_MAX=$(( ${BENCH_CHECK_MAX_MB:-1300} * 1000000 ))
START=$(date +%s)
DEADLINE=$(( START + ${BENCH_DEADLINE_S:-520} ))
REPORT_AT=$(( DEADLINE - 20 ))                              # everything but the report ends here
# Compiling stops 250 s before the deadline by default (270 s at the default 520): the streamrt runs, the PyTorch
# timings and the report took ~190 s after it in a two-model run (seventeenth session), so a later deadline
# lends its time to the compiles (a fixed 270 s left Qwen's batch-8 2048-token point uncompiled at 555).
COMPILE_S=${BENCH_COMPILE_S:-$(( ${BENCH_DEADLINE_S:-520} - 250 > 60 ? ${BENCH_DEADLINE_S:-520} - 250 : 60 ))}
COMPILE_UNTIL=$(( START + COMPILE_S ))
STREAMRT_UNTIL=$(( REPORT_AT - ${BENCH_TORCH_RESERVE_S:-90} ))
WORK=$CACHE/work.$$                                          # markers, lock, streamrt outputs of this run
rm -rf "$WORK" && mkdir -p "$WORK/out" || exit 1
trap 'rm -rf "$WORK"' EXIT

# streamrt: STREAMRT_BIN_DIR, else the carried bundle (.gpu, scripts/gpu-bundle: scripts/gpu-env sets
# LD_LIBRARY_PATH), else this checkout's build.
if [ -n "${STREAMRT_BIN_DIR:-}" ]; then BIN=$STREAMRT_BIN_DIR
elif [ -d "$ROOT/.gpu" ]; then pushd "$ROOT" > /dev/null && source scripts/gpu-env && popd > /dev/null
else BIN=$ROOT/build/bin; fi
SRT=$BIN/streamrt

FLOCK=$(command -v flock)  # util-linux; without it streamrt's runs do not wait for the PyTorch warm runs
say() { echo "[$(( $(date +%s) - START ))s] $*"; }
# step NAME UNTIL CAP [gpu] CMD...: CMD with a timeout of min(CAP, UNTIL - now) into logs/NAME.log, and
# "status timeout_s wall_ms budget_cut" into logs/NAME.rc (bench/report.py's Step reads them); logs/NAME.skip when no time is left.
step() {
  local name=$1 until=$2 t=$3; shift 3
  local left=$(( until - $(date +%s) )) clamped=0
  (( left < t )) && t=$left clamped=1
  if (( t < 3 )); then echo "n/a: time budget spent" > "$LOGS/$name.skip"; say "$name: skipped (time budget)"; return 1; fi
  # "gpu CMD": CMD holds $WORK/gpu.lock (waiting for it at most the same timeout)
  local lock=(); [ "$1" = gpu ] && { [ -n "$FLOCK" ] && lock=("$FLOCK" -w "$t" "$WORK/gpu.lock"); shift; }
  local t0; t0=$(date +%s%N)
  "${lock[@]}" timeout -k 5 "$t" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  # the 4th field: 1 when the step's timeout was cut to the time budget left (a timeout then means the budget ran out)
  echo "$rc $t $(( ($(date +%s%N) - t0) / 1000000 )) $clamped" > "$LOGS/$name.rc"
  (( rc != 0 )) && say "$name: rc=$rc: $(grep -v '^\s*$' "$LOGS/$name.log" | tail -1 | cut -c1-160)"
  return $rc
}
# bg NAME UNTIL CMD...: the same in the background (its pid in $BG_PID, the .rc written when it ends).
bg() {
  local name=$1 until=$2; shift 2
  ( step "$name" "$until" 100000 "$@" ) &
  BG_PID=$!
}

{
  echo "date: $(date -u +%FT%TZ)"; echo "host: $(hostname)"; echo "streamrt: $SRT"
  "$SRT" --version 2>&1 | head -1
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
  "$PY" -c "import sys, torch, transformers, onnx, onnxscript; print('python', sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__, 'onnx', onnx.__version__, 'onnxscript', onnxscript.__version__, 'cuda', torch.version.cuda)" 2>&1
} > "$LOGS/env.txt" 2>&1
cat "$LOGS/env.txt"
cat > "$LOGS/config.json" <<EOF
{"device": "$DEVICE", "tiny": $([ "$TINY" = 1 ] && echo true || echo false), "models": "$MODELS", "batches": "$BATCHES",
 "points": "$POINTS", "impls": "$IMPLS", "iters": $ITERS, "warmup": $WARMUP, "deadline_s": ${BENCH_DEADLINE_S:-520},
 "compile_s": $COMPILE_S, "profile_point": "$PROFILE_POINT", "check_max_mb": ${BENCH_CHECK_MAX_MB:-1300}}
EOF
[ -n "$FLOCK" ] || say "warning: no flock: streamrt's runs may overlap the PyTorch warm runs on the GPU" | tee -a "$LOGS/env.txt"
[ -x "$SRT" ] || say "warning: $SRT is not executable: every streamrt point will fail"

# ------------------------------------------------------------------ phase 1: inputs, exports, compiles
SRC_HASH=$(cat "$HERE/models.py" "$HERE/export.py" "$ROOT/bench/decode/export_llama_kv.py" | md5sum | cut -c1-16)
STAMP="$SRC_HASH $TINY $BATCHES $POINTS"
EXPORT_PIDS=(); TORCH_PIDS=(); TORCH_READY=()
mkdir -p "$CACHE/inputs" "$CACHE/export"
for m in $MODELS; do
  if [ "$(cat "$CACHE/inputs/$m/ready" 2>/dev/null)" = "$STAMP" ]; then say "inputs $m: cached"
  else
    rm -f "$CACHE/inputs/$m/ready"
    ( step "inputs_$m" "$REPORT_AT" 200 "$PY" "$HERE/inputs.py" "$m" "$CACHE/inputs/$m" --batches "$BATCHES" --points "$POINTS" \
        "${TINY_FLAG[@]}" && echo "$STAMP" > "$CACHE/inputs/$m/ready" ) &
  fi
  for kind in prefill decode; do
    dir=$CACHE/export/$m$([ "$TINY" = 1 ] && echo -tiny)
    if [ -s "$dir/$kind/export.json" ] && [ "$(cat "$dir/$kind/source.hash" 2>/dev/null)" = "$SRC_HASH" ]; then
      say "export $m $kind: cached in $dir/$kind"; cp "$dir/$kind/export.json" "$LOGS/export_${m}_$kind.json"; continue
    fi
    rm -rf "${dir:?}/$kind"
    bg "export_${m}_$kind" "$STREAMRT_UNTIL" "$PY" "$HERE/export.py" "$m" "$dir" --kinds "$kind" --device "$DEVICE" "${TINY_FLAG[@]}"
    EXPORT_PIDS+=("$BG_PID")
  done
  # PyTorch: one process per impl group and kind, so that their compiles run side by side
  for g in $(echo ",$IMPLS," | grep -qE ',(eager|compile),' && echo ",$IMPLS," | tr , '\n' | grep -E '^(eager|compile)$' | paste -sd,) \
           $(echo ",$IMPLS," | grep -q ',ro,' && echo ro); do
    for kind in prefill decode; do
      pts=$(echo "$POINTS" | tr , '\n' | grep "^$kind:" | paste -sd,)
      [ -n "$pts" ] || continue
      name=torch_${m}_${g//,/_}_$kind
      bg "$name" "$REPORT_AT" "$PY" "$HERE/torch_peer.py" --model "$m" --impls "$g" --batches "$BATCHES" \
        --points "$pts" --inputs "$CACHE/inputs/$m" --json "$LOGS/$name.jsonl" --iters "$ITERS" \
        --warmup "$WARMUP" --device "$DEVICE" "${TINY_FLAG[@]}" --compile-until "$COMPILE_UNTIL" \
        --deadline "$REPORT_AT" --ready "$WORK/ready_$name" --go "$WORK/go" --lock "$WORK/gpu.lock" \
        --streamrt-out "$WORK/out" --profile-point "$PROFILE_POINT"
      TORCH_PIDS+=("$BG_PID"); TORCH_READY+=("$WORK/ready_$name")
    done
  done
done
for p in "${EXPORT_PIDS[@]}"; do wait "$p"; done
for m in $MODELS; do for kind in prefill decode; do
  dir=$CACHE/export/$m$([ "$TINY" = 1 ] && echo -tiny)
  if [ -f "$LOGS/export_${m}_$kind.rc" ] && [ -s "$dir/$kind/export.json" ]; then
    echo "$SRC_HASH" > "$dir/$kind/source.hash"; cp "$dir/$kind/export.json" "$LOGS/export_${m}_$kind.json"
  fi
done; done
say "exports done"

# ------------------------------------------------------------------ streamrt, one point at a time
# Next to the PyTorch compiles on the CPU, never next to other GPU work: every streamrt process holds
# $WORK/gpu.lock, which torch_peer.py takes for its warm runs and its whole timing phase.
GRAPH=(); [ "${BENCH_CUDA_GRAPH:-$([ "$DEVICE" = cuda ] && echo 1)}" = 1 ] && GRAPH=(--cuda-graph)
RUN_TIMEOUT=${BENCH_RUN_TIMEOUT_S:-150}
# srt_run MODEL ARGS...: the timed run of point $key, with --cuda-graph; when that fails with an error about
# the graph or its capture, it runs again without.
srt_run() {
  step "srt_$key" "$STREAMRT_UNTIL" "$RUN_TIMEOUT" gpu "$SRT" run "$@" "${timing[@]}" "${GRAPH[@]}" "${out[@]}"
  local rc=$?
  if (( rc != 0 && rc != 124 && rc != 137 )) && [ ${#GRAPH[@]} -gt 0 ] && grep -qiE "graph|captur" "$LOGS/srt_$key.log"; then
    step "srtng_$key" "$STREAMRT_UNTIL" "$RUN_TIMEOUT" gpu "$SRT" run "$@" "${timing[@]}" "${out[@]}"
  fi
}
for m in $MODELS; do
  for b in ${BATCHES//,/ }; do
    for p in ${POINTS//,/ }; do
      kind=${p%%:*}; n=${p##*:}; key=${m}_b${b}_$kind$n
      onnx=$CACHE/export/$m$([ "$TINY" = 1 ] && echo -tiny)/$kind/model.onnx
      in=$CACHE/inputs/$m/$key
      if ! [ -s "$LOGS/export_${m}_$kind.json" ]; then echo "failed: no export (logs/export_${m}_$kind.log)" > "$LOGS/srt_$key.skip"; continue; fi
      if ! [ -f "$in/streamrt.args" ]; then echo "failed: no inputs (logs/inputs_$m.log)" > "$LOGS/srt_$key.skip"; continue; fi
      mapfile -t args < "$in/streamrt.args"
      out=(); (( $(cat "$in/output_bytes") <= CHECK_MAX )) && out=(--output-dir "$WORK/out/$key")
      timing=(--device "$DEVICE" --iterations "$ITERS" --warmup "$WARMUP")
      if [ "b$b:$kind:$n" = "$PROFILE_POINT" ]; then
        plan=$WORK/$key.plan
        if step "srtbuild_$key" "$STREAMRT_UNTIL" 240 gpu "$SRT" build "$onnx" -o "$plan" --device "$DEVICE" "${args[0]}" "${args[1]}"; then
          srt_run "$plan" "${args[@]:2}"
          step "srtprof_$key" "$STREAMRT_UNTIL" 60 gpu env STREAMRT_PROFILE=1 "$SRT" run "$plan" "${args[@]:2}" --device "$DEVICE" --iterations 10 --warmup 1
          step "srtinspect_$key" "$STREAMRT_UNTIL" 30 "$SRT" inspect "$plan"
        elif [ -f "$LOGS/srtbuild_$key.skip" ]; then
          cp "$LOGS/srtbuild_$key.skip" "$LOGS/srt_$key.skip"  # not built: the time budget, not a failure
        else
          echo "failed: build: $(grep -v '^\s*$' "$LOGS/srtbuild_$key.log" 2>/dev/null | tail -1 | cut -c1-200)" > "$LOGS/srt_$key.skip"
        fi
        rm -f "$plan"
      else
        srt_run "$onnx" "${args[@]}"
      fi
      say "streamrt $key: $(grep -ho 'median [0-9.]* ms' "$LOGS/srt_$key.log" "$LOGS/srtng_$key.log" 2>/dev/null | head -1)"
    done
  done
done

# ------------------------------------------------------------------ PyTorch timings, one process at a time
say "waiting for the PyTorch processes to compile (until +$(( COMPILE_UNTIL - START ))s)"
while :; do
  waiting=0
  for i in "${!TORCH_PIDS[@]}"; do
    [ -e "${TORCH_READY[$i]}" ] || ! kill -0 "${TORCH_PIDS[$i]}" 2> /dev/null || waiting=1
  done
  (( waiting == 0 || $(date +%s) > COMPILE_UNTIL + 20 )) && break
  sleep 1
done
touch "$WORK/go"   # nothing else runs now: each process times its points holding $WORK/gpu.lock
say "PyTorch timings"
for p in "${TORCH_PIDS[@]}"; do wait "$p"; done
du -sh "$WORK/out" 2> /dev/null | sed 's/^/streamrt outputs kept for the check: /'

say "report"
"$PY" "$HERE/report.py" "$OUTDIR" --logs "$LOGS" --elapsed-s "$(( $(date +%s) - START ))"
rc=$?
say "done: $OUTDIR/hf.md"
exit $rc

#!/usr/bin/env bash
# streamrt vs PyTorch (eager, torch.compile) on one GPU. Run on the GPU machine (LD_LIBRARY_PATH set for
# the streamrt binaries), from any directory:
#   bench/run_gpu.sh OUTDIR
# Writes OUTDIR/bench.json, OUTDIR/bench.md (table), OUTDIR/bench.png (when matplotlib imports) and
# OUTDIR/bench-logs.tgz (the log of every step: few files, for the device tool). A step that fails or
# runs out of time is recorded as
# "failed: <reason>" and the run goes on; the report is always written.
#
# Points (model batch precision): resnet50 1|32 fp32|fp16, gpt2 1x512 fp16|bf16, llama 1x512 fp16|bf16.
# Per point: export (cached per model under $BENCH_CACHE), streamrt build (timed), streamrt run with and
# without --cuda-graph, torch eager; torch.compile last, in what is left of the time budget.
#
# Environment (all optional):
#   STREAMRT          streamrt binary (default: .gpu/bin/streamrt of this checkout, else `streamrt` on PATH)
#   BENCH_CACHE       exported models (default /tmp/bench; reused when present)
#   BENCH_POINTS      points to run, "model:batch:precision ..." (default: the list above)
#   BENCH_NO_COMPILE  1 (or all): no torch.compile; or model names ("gpt2 llama") to skip just those
#   BENCH_DEADLINE_S  seconds for the whole run, report included (default 450)
#   BENCH_ITERS / BENCH_WARMUP   timed / untimed runs (default 50 / 10)
#   BENCH_DEVICE      cuda (default) or cpu (tests on a machine without a GPU)
#   BENCH_EXPORT_DEVICE  where models are traced for export: cuda (default with BENCH_DEVICE=cuda; falls
#                     back to cpu) or cpu
#   BENCH_TF32        1 (default): float32 points build with --tf32, as PyTorch runs its cuDNN convolutions
#                     by default (torch.backends.cudnn.allow_tf32 = True); 0: strict float32
#   BENCH_TINY=1      tiny GPT-2 / Llama configs (tests)
#   BENCH_RUN_TIMEOUT_S  limit of one streamrt run (default 150)
#   BENCH_KEEP_LOGS=1 keep OUTDIR/bench-logs/ unpacked too (default: only the .tgz)
#   BENCH_KEEP_PLANS=1  keep the built plans (default: deleted after their runs; they are large)
#   PYTHON            python3
set -u
export PYTHONUNBUFFERED=1

OUTDIR=${1:?usage: bench/run_gpu.sh OUTDIR}
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
mkdir -p "$OUTDIR" || exit 1
OUTDIR=$(cd "$OUTDIR" && pwd)
LOGS=$OUTDIR/bench-logs  # step logs and what the report needs; packed into bench-logs.tgz at the end
rm -rf "$LOGS" && mkdir -p "$LOGS" || exit 1

PY=${PYTHON:-python3}
CACHE=${BENCH_CACHE:-/tmp/bench}
DEVICE=${BENCH_DEVICE:-cuda}
EXPORT_DEVICE=${BENCH_EXPORT_DEVICE:-$DEVICE}
ITERS=${BENCH_ITERS:-50}
WARMUP=${BENCH_WARMUP:-10}
TINY=${BENCH_TINY:-0}
TF32=${BENCH_TF32:-1}
NO_COMPILE=${BENCH_NO_COMPILE:-}
POINTS=${BENCH_POINTS:-"resnet50:1:fp32 resnet50:1:fp16 resnet50:32:fp32 resnet50:32:fp16 gpt2:1:fp16 gpt2:1:bf16 llama:1:fp16 llama:1:bf16"}
START=$(date +%s)
DEADLINE=$(( START + ${BENCH_DEADLINE_S:-450} ))
REPORT_RESERVE=25  # seconds kept for writing the report
RUN_TIMEOUT=${BENCH_RUN_TIMEOUT_S:-150}

STREAMRT=${STREAMRT:-}
if [ -z "$STREAMRT" ]; then
  if [ -x "$ROOT/.gpu/bin/streamrt" ]; then STREAMRT=$ROOT/.gpu/bin/streamrt
  else STREAMRT=$(command -v streamrt || echo "$ROOT/.gpu/bin/streamrt"); fi
fi
TINY_FLAG=(); [ "$TINY" = 1 ] && TINY_FLAG=(--tiny)
# The bundle of scripts/gpu-bundle: its libraries travel packed; unpack them and put them on the path
# (as scripts/gpu-check does), in case the caller did not.
if [ "$STREAMRT" = "$ROOT/.gpu/bin/streamrt" ]; then
  [ -d "$ROOT/.gpu/lib" ] || { [ -f "$ROOT/.gpu/lib.tar.xz" ] && tar xJf "$ROOT/.gpu/lib.tar.xz" -C "$ROOT/.gpu"; }
  [ -d "$ROOT/.gpu/lib" ] && case ":${LD_LIBRARY_PATH:-}:" in *":$ROOT/.gpu/lib:"*) ;; *)
    TORCH_LIBS=$("$PY" -c 'import glob, os, site
print(":".join(sorted({d for sp in site.getsitepackages() for p in ("nvidia/*/lib", "nvidia/cu13/lib", "torch/lib") for d in glob.glob(os.path.join(sp, p))})))' 2>/dev/null)
    export LD_LIBRARY_PATH="$ROOT/.gpu/lib:/usr/local/cuda/lib64:${TORCH_LIBS}:${LD_LIBRARY_PATH:-}" ;;
  esac
fi

elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( DEADLINE - REPORT_RESERVE - $(date +%s) )); }
say() { echo "[$(elapsed)s] $*"; }

# step NAME CAP_S CMD...: runs CMD with a timeout of min(CAP_S, time left) into logs/NAME.log and its
# exit status and timeout into logs/NAME.rc; with no time left it writes logs/NAME.skip instead.
step() {
  local name=$1 cap=$2; shift 2
  local t; t=$(left)
  if (( t < 5 )); then
    echo "skipped: time budget spent" > "$LOGS/$name.skip"; say "$name: skipped (time budget spent)"; return 1
  fi
  (( cap < t )) && t=$cap
  say "$name (timeout ${t}s): $*"
  local t0; t0=$(date +%s%N)
  timeout -k 10 "$t" "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  echo "$rc $t $(( ($(date +%s%N) - t0) / 1000000 ))" > "$LOGS/$name.rc"  # status, timeout s, wall ms
  (( rc != 0 )) && say "$name: rc=$rc; last line: $(grep -v '^\s*$' "$LOGS/$name.log" | tail -1 | cut -c1-200)"
  return $rc
}
skip() { echo "$2" > "$LOGS/$1.skip"; say "$1: $2"; }

seq_of() { # model -> sequence length (decoders)
  case $1 in resnet50) echo "" ;; *) [ "$TINY" = 1 ] && echo 32 || echo 512 ;; esac
}
export_key() { # model batch -> cache key (one export per fixed shape)
  local s; s=$(seq_of "$1")
  echo "${1}_b${2}${s:+_s$s}$([ "$TINY" = 1 ] && echo _tiny)"
}
compile_skipped() { # model -> 0 when BENCH_NO_COMPILE names it (or says all)
  case " ${NO_COMPILE//,/ } " in *" 1 "*|*" all "*|*" yes "*|*" $1 "*) return 0 ;; esac
  return 1
}
uniq_words() { awk 'NF && !seen[$0]++' | paste -sd, -; }  # lines -> "a,b" (first occurrences)

# ---------------------------------------------------------------- environment
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(hostname)"
  echo "streamrt: $STREAMRT"
  "$STREAMRT" --version 2>&1 | head -1
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv,noheader
  "$PY" -c "import torch, onnx, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'onnx', onnx.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name() if torch.cuda.is_available() else 'no GPU')" 2>&1
} > "$LOGS/env.txt" 2>&1
cat "$LOGS/env.txt"
printf '%s\n' $POINTS > "$LOGS/points.txt"
cat > "$LOGS/config.json" <<EOF
{"device": "$DEVICE", "iters": $ITERS, "warmup": $WARMUP, "tiny": $([ "$TINY" = 1 ] && echo true || echo false), "deadline_s": ${BENCH_DEADLINE_S:-450}, "tf32": $([ "$TF32" = 1 ] && echo true || echo false), "no_compile": "$NO_COMPILE", "streamrt": "$STREAMRT", "cache": "$CACHE"}
EOF
[ -x "$STREAMRT" ] || say "warning: streamrt binary '$STREAMRT' is not executable: streamrt steps will fail"

# Exports are reused while bench/models.py and bench/export.py are unchanged.
SRC_HASH=$(cat "$BENCH_DIR/models.py" "$BENCH_DIR/export.py" | md5sum | cut -c1-16)
MODELS=$(for p in $POINTS; do echo "${p%%:*}"; done | uniq_words | tr , " ")
mkdir -p "$CACHE/plans"

# ---------------------------------------------------------------- per model: export, streamrt, torch eager
for model in $MODELS; do
  batches=$(for p in $POINTS; do IFS=: read -r m b q <<< "$p"; [ "$m" = "$model" ] && echo "$b"; done | uniq_words)
  precs=$(for p in $POINTS; do IFS=: read -r m b q <<< "$p"; [ "$m" = "$model" ] && echo "$q"; done | uniq_words)
  seq=$(seq_of "$model")

  for batch in ${batches//,/ }; do
    key=$(export_key "$model" "$batch")
    dir=$CACHE/$key
    if [ -s "$dir/export.json" ] && [ -s "$dir/model.onnx" ] && [ "$(cat "$dir/source.hash" 2>/dev/null)" = "$SRC_HASH" ]; then
      say "export $key: cached in $dir"
      cp "$dir/export.json" "$LOGS/export_$key.cached.json"
    elif rm -f "$dir/export.json" && step "export_$key" 300 "$PY" "$BENCH_DIR/export.py" "$model" "$dir" --batch "$batch" ${seq:+--seq "$seq"} \
        --device "$EXPORT_DEVICE" "${TINY_FLAG[@]}"; then
      grep '^{' "$LOGS/export_$key.log" | tail -1 > "$dir/export.json"
      echo "$SRC_HASH" > "$dir/source.hash"
    fi
  done

  for p in $POINTS; do
    IFS=: read -r m batch prec <<< "$p"
    [ "$m" = "$model" ] || continue
    key=$(export_key "$model" "$batch")
    pt=${model}_b${batch}_${prec}
    if ! [ -s "$CACHE/$key/export.json" ]; then
      for s in build run rungraph; do skip "${s}_$pt" "failed: no exported model (see bench-logs/export_$key.log)"; done
      continue
    fi
    plan=$CACHE/plans/$pt.plan
    flag=(); case $prec in fp16) flag=(--fp16) ;; bf16) flag=(--bf16) ;; fp32) [ "$TF32" = 1 ] && flag=(--tf32) ;; esac
    rm -f "$plan"
    if step "build_$pt" 300 "$STREAMRT" build "$CACHE/$key/model.onnx" -o "$plan" --device "$DEVICE" "${flag[@]}"; then
      step "run_$pt" "$RUN_TIMEOUT" "$STREAMRT" run "$plan" --device "$DEVICE" --iterations "$ITERS" --warmup "$WARMUP"
      if [ "$DEVICE" = cuda ]; then
        step "rungraph_$pt" "$RUN_TIMEOUT" "$STREAMRT" run "$plan" --device "$DEVICE" --iterations "$ITERS" --warmup "$WARMUP" --cuda-graph
      else
        skip "rungraph_$pt" "n/a: CUDA graphs need --device cuda"
      fi
    else
      for s in run rungraph; do skip "${s}_$pt" "failed: build failed (see bench-logs/build_$pt.log)"; done
    fi
    [ "${BENCH_KEEP_PLANS:-0}" = 1 ] || rm -f "$plan"
  done

  step "torch_eager_$model" 240 "$PY" "$BENCH_DIR/torch_peer.py" --model "$model" --batch "$batches" \
    --precision "$precs" --impl eager --iters "$ITERS" --warmup "$WARMUP" --device "$DEVICE" \
    ${seq:+--seq "$seq"} "${TINY_FLAG[@]}"
done

# ---------------------------------------------------------------- torch.compile, in the time left
n_compile=0
for model in $MODELS; do compile_skipped "$model" || n_compile=$(( n_compile + 1 )); done
for model in $MODELS; do
  if compile_skipped "$model"; then skip "torch_compile_$model" "n/a: skipped (BENCH_NO_COMPILE)"; continue; fi
  # Fair share of the time left; what a model does not use goes to the next ones.
  share=$(( $(left) / (n_compile > 0 ? n_compile : 1) ))
  n_compile=$(( n_compile - 1 ))
  if (( share < 30 )); then skip "torch_compile_$model" "n/a: time budget spent"; continue; fi
  batches=$(for p in $POINTS; do IFS=: read -r m b q <<< "$p"; [ "$m" = "$model" ] && echo "$b"; done | uniq_words)
  precs=$(for p in $POINTS; do IFS=: read -r m b q <<< "$p"; [ "$m" = "$model" ] && echo "$q"; done | uniq_words)
  seq=$(seq_of "$model")
  # The soft budget (compile time, checked per point and by an alarm) ends before the hard timeout.
  step "torch_compile_$model" "$share" "$PY" "$BENCH_DIR/torch_peer.py" --model "$model" --batch "$batches" \
    --precision "$precs" --impl compile --iters "$ITERS" --warmup "$WARMUP" --device "$DEVICE" \
    --compile-budget-s $(( share * 3 / 4 )) ${seq:+--seq "$seq"} "${TINY_FLAG[@]}"
done

# ---------------------------------------------------------------- report
say "report"
"$PY" "$BENCH_DIR/report.py" "$OUTDIR" --logs "$LOGS" --elapsed-s "$(elapsed)"
rc=$?
tar czf "$OUTDIR/bench-logs.tgz" -C "$OUTDIR" bench-logs && [ "${BENCH_KEEP_LOGS:-0}" = 1 ] || rm -rf "$LOGS"
say "done: $OUTDIR/bench.md"
exit $rc

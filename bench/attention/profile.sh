#!/usr/bin/env bash
# Nsight Compute profile of streamrt's attention kernel on one attn_bench.py case (GPU machine):
#   bench/attention/profile.sh OUTDIR CASE [KERNEL_REGEX] [-- STREAMRT_RUN_ARGS...]
# e.g. bench/attention/profile.sh $OUT llama1b_full8192 (through the device tool, carry [".gpu"]).
# Builds the case's model and inputs (attn_bench.py, a few iterations), profiles one launch of the kernel
# matching KERNEL_REGEX (attention_wgmma by default; attention_tc for the mma.sync kernel) with
# `ncu --set full`, and writes OUTDIR/CASE.details.txt (ncu's sections), OUTDIR/CASE.sass.csv (per
# instruction: executions, samples, stall reasons) and OUTDIR/CASE.sass.md (bench/tools/ncu_sass.py's
# report). KEY_MASK=1: the case with an all-ones int64 key_mask input. ncu locks the clocks: compare its
# durations with each other, not with the bench's.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?usage: bench/attention/profile.sh OUTDIR CASE [KERNEL_REGEX] [-- STREAMRT_RUN_ARGS...]}
CASE=${2:?usage: bench/attention/profile.sh OUTDIR CASE [KERNEL_REGEX] [-- STREAMRT_RUN_ARGS...]}
REGEX=attention_wgmma
shift 2
if [ $# -gt 0 ] && [ "$1" != "--" ]; then REGEX=$1; shift; fi
[ "${1:-}" = "--" ] && shift
command -v ncu > /dev/null || [ ! -x /usr/local/cuda/bin/ncu ] || PATH=$PATH:/usr/local/cuda/bin
command -v ncu > /dev/null || { echo "error: ncu is not on PATH (it is in /usr/local/cuda/bin on the GPU machine)" >&2; exit 2; }
[ -f .gpu/bin/streamrt ] && source scripts/gpu-env
STREAMRT=${STREAMRT:-${BIN:-.gpu/bin}/streamrt}
[ -x "$STREAMRT" ] || { echo "error: no streamrt binary at $STREAMRT (scripts/gpu-bundle, or set STREAMRT)" >&2; exit 2; }
WORK=${WORKDIR:-/tmp/attn-bench}
mkdir -p "$OUT"
KM=(); [ "${KEY_MASK:-0}" = 1 ] && KM=(--key-mask)
python3 bench/attention/attn_bench.py "$OUT/bench-$CASE" --streamrt "$STREAMRT" --cases "$CASE" --iters 5 --workdir "$WORK" "${KM[@]}" \
  > "$OUT/$CASE.bench.txt" 2>&1 || { echo "error: attn_bench.py failed for case '$CASE' (see $OUT/$CASE.bench.txt)" >&2; exit 1; }
W=$WORK/$CASE
inputs=()
names=(q k v); [ "${KEY_MASK:-0}" = 1 ] && names+=(key_mask)
for n in "${names[@]}"; do inputs+=("--input=$n=$W/$n.npy"); done
exec bench/tools/ncu_one_launch.sh "$OUT" "$CASE" "$REGEX" -- \
  "$STREAMRT" run "$W/model.onnx" --device cuda --iterations 1 --warmup 0 "${inputs[@]}" "$@"

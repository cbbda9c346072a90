#!/usr/bin/env bash
# Nsight Compute profile of one group GEMM launch (GPU machine, after scripts/gpu-bundle):
#   bench/tools/group_gemm_profile.sh OUTDIR [SHAPE] [ROWS] [COLS]
# e.g. bench/tools/group_gemm_profile.sh $OUT llama-gateup 2048 256 (device tool, carry [".gpu"]).
# Runs streamrt_group_gemm_bench at that point for one launch of the width under `ncu --set full` and writes
# OUTDIR/NAME.details.txt (ncu's sections: SM and memory throughput, L2 hit rate, warp stalls),
# OUTDIR/NAME.sass.csv and OUTDIR/NAME.sass.md (bench/tools/ncu_sass.py: what each instruction waits on).
# ncu locks the clocks: compare its durations with each other, not with the bench's.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?usage: bench/tools/group_gemm_profile.sh OUTDIR [SHAPE] [ROWS] [COLS]}
SHAPE=${2:-llama-gateup}
ROWS=${3:-2048}
COLS=${4:-256}
[ -f .gpu/bin/streamrt_group_gemm_bench ] && source scripts/gpu-env
BENCH=${BENCH:-${BIN:-.gpu/bin}/streamrt_group_gemm_bench}
[ -x "$BENCH" ] || { echo "error: no bench binary at $BENCH (scripts/gpu-bundle, or set BENCH)" >&2; exit 2; }
# The bench's first group launch is its warm-up call: the one profiled.
exec bench/tools/ncu_one_launch.sh "$OUT" "$SHAPE-$ROWS-$COLS" group_gemm_kernel -- \
  "$BENCH" --shapes "$SHAPE" --rows "$ROWS" --cols "$COLS" --iters 1

#!/usr/bin/env bash
# One launch of the kernel matching REGEX in COMMAND under `ncu --set full`, and its reports (GPU machine):
#   bench/tools/ncu_one_launch.sh OUTDIR NAME REGEX -- COMMAND [ARGS...]
# Writes OUTDIR/NAME.ncu-rep, .ncu.log, .details.txt (ncu's sections), .sass.csv (per instruction:
# executions, samples, stall reasons) and .sass.md (bench/tools/ncu_sass.py's report), and prints the
# headline metrics. Used by bench/attention/profile.sh and bench/tools/group_gemm_profile.sh. ncu locks the
# clocks: compare its durations with each other, not with a bench's.
set -uo pipefail
cd "$(dirname "$0")/../.."
usage="usage: bench/tools/ncu_one_launch.sh OUTDIR NAME REGEX -- COMMAND [ARGS...]"
OUT=${1:?$usage} NAME=${2:?$usage} REGEX=${3:?$usage}
shift 3
[ "${1:-}" = "--" ] && shift || { echo "error: $usage" >&2; exit 2; }
[ $# -gt 0 ] || { echo "error: $usage" >&2; exit 2; }
command -v ncu > /dev/null || [ ! -x /usr/local/cuda/bin/ncu ] || PATH=$PATH:/usr/local/cuda/bin
command -v ncu > /dev/null || { echo "error: ncu is not on PATH (it is in /usr/local/cuda/bin on the GPU machine)" >&2; exit 2; }
mkdir -p "$OUT"
ncu --kernel-name "regex:$REGEX" --launch-count 1 --set full --import-source no -f -o "$OUT/$NAME" "$@" \
  > "$OUT/$NAME.ncu.log" 2>&1 || { echo "error: ncu failed (see $OUT/$NAME.ncu.log)" >&2; exit 1; }
[ -f "$OUT/$NAME.ncu-rep" ] || { echo "error: no kernel matched '$REGEX' (see $OUT/$NAME.ncu.log)" >&2; exit 1; }
ncu -i "$OUT/$NAME.ncu-rep" --page details > "$OUT/$NAME.details.txt"
ncu -i "$OUT/$NAME.ncu-rep" --page source --csv --print-source sass > "$OUT/$NAME.sass.csv"
python3 bench/tools/ncu_sass.py "$OUT/$NAME.sass.csv" > "$OUT/$NAME.sass.md"
grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|L2 Hit Rate|Issue Slots Busy|Executed Instructions  " \
  "$OUT/$NAME.details.txt"
head -20 "$OUT/$NAME.sass.md"

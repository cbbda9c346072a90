#!/usr/bin/env bash
# Tests bench/hf/run.sh without a GPU: tiny Llama / Qwen2 configs (2 layers, hidden 64), real exports, a real
# CPU build of streamrt (STREAMRT_BIN_DIR, default build/bin), PyTorch on the CPU.
#   bench/hf/selftest.sh [WORKDIR]        (SELFTEST_COMPILE=0 leaves torch.compile out of pass 2)
# Pass 1: every point of both models, eager only: streamrt's numbers, its outputs checked against PyTorch,
#   the plan's layers at the profile point. Pass 2 (exports from the cache): llama at batch 1 with torch.compile
#   and reduce-overhead (CPU inductor), --cuda-graph forced on the CPU (streamrt refuses: the run is retried
#   without), streamrt failing at one point and hanging at another (testdata/streamrt): failed cells, a report.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${1:-$(mktemp -d /tmp/hf-selftest.XXXXXX)}
mkdir -p "$WORK" || exit 1
PY=${PYTHON:-python3}
BIN=${STREAMRT_BIN_DIR:-$ROOT/build/bin}
fails=0
check() { # description, command...
  local what=$1; shift
  if "$@" > /dev/null 2>&1; then echo "ok:   $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
row() { grep -E "^\| $2 \| $3 \| $4 \|" "$1/hf.md"; }
json() { "$PY" -c "import json, sys; d = json.load(open('$1/hf.json')); sys.exit(0 if ($2) else 1)"; }
common=(BENCH_TINY=1 BENCH_DEVICE=cpu BENCH_CACHE="$WORK/cache" BENCH_ITERS=3 BENCH_WARMUP=1 PYTHON="$PY")

# ---- pass 1
env "${common[@]}" STREAMRT_BIN_DIR="$BIN" BENCH_IMPLS=eager "$HERE/run.sh" "$WORK/out1" > "$WORK/out1.log" 2>&1
rc=$?
O=$WORK/out1
check "pass 1: run.sh exits 0" test $rc = 0
check "pass 1: hf.md and hf.json written" test -s "$O/hf.md" -a -s "$O/hf.json"
check "pass 1: 20 rows" json "$O" "len(d['rows']) == 20"
check "pass 1: streamrt and eager measured everywhere" json "$O" \
  "all('median_ms' in r['streamrt'] and 'median_ms' in r['eager'] for r in d['rows'])"
check "pass 1: every point checked, top-1 >= 99 %, logits within 1e-2" json "$O" \
  "all(r['check']['top1_agree'] >= 0.99 and r['check']['logits_max_abs_err'] < 1e-2 for r in d['rows'])"
check "pass 1: decode presents checked" json "$O" \
  "all(r['check']['present_max_abs_err'] < 1e-2 for r in d['rows'] if r['kind'] == 'decode')"
check "pass 1: 4 exports" json "$O" "all('nodes' in e for e in d['exports'].values()) and len(d['exports']) == 4"
check "pass 1: one fused Attention per layer at the profile point" json "$O" \
  "all(p['streamrt']['plan_layers'].get('Attention') == 2 for p in d['profiles'].values())"
check "pass 1: PyTorch profile table" grep -q "PyTorch eager (torch.profiler" "$O/hf.md"
check "pass 1: qwen row" row "$O" "Qwen2.5-0.5B" 2 "decode @64"
check "pass 1: exports cached" test -s "$WORK/cache/export/qwen-tiny/decode/source.hash"

# ---- pass 2
impls=eager,compile,ro; [ "${SELFTEST_COMPILE:-1}" = 0 ] && impls=eager
env "${common[@]}" STREAMRT_BIN_DIR="$HERE/testdata" FAKE_REAL_STREAMRT="$BIN/streamrt" BENCH_IMPLS=$impls \
  BENCH_MODELS=llama BENCH_BATCHES=1 BENCH_POINTS=prefill:1,prefill:16,decode:16,decode:64 BENCH_CUDA_GRAPH=1 \
  BENCH_RUN_TIMEOUT_S=8 FAKE_FAIL=llama_b1_decode16/ FAKE_HANG=llama_b1_decode64/ BENCH_PROFILE_POINT=none \
  "$HERE/run.sh" "$WORK/out2" > "$WORK/out2.log" 2>&1
rc=$?
O=$WORK/out2
check "pass 2: run.sh exits 0" test $rc = 0
check "pass 2: exports reused" grep -q "export llama prefill: cached" "$WORK/out2.log"
check "pass 2: --cuda-graph refused, run again without" json "$O" \
  "d['rows'][0]['streamrt']['cuda_graph'] is False and 'CUDA graphs need' in d['rows'][0]['streamrt']['note']"
check "pass 2: failure reason in the table" grep -qE "^\| Llama-3.2-1B \| 1 \| decode @16 \| failed: error: unsupported: node 'Foo_3'" "$O/hf.md"
check "pass 2: hanging point timed out" grep -qE "^\| Llama-3.2-1B \| 1 \| decode @64 \| failed: timed out after 8s" "$O/hf.md"
check "pass 2: PyTorch still measured at the failed points" json "$O" "'median_ms' in d['rows'][2]['eager']"
if [ "$impls" != eager ]; then
  check "pass 2: torch.compile and reduce-overhead measured" json "$O" \
    "all('median_ms' in r['compile'] and 'median_ms' in r['ro'] for r in d['rows'])"
  check "pass 2: speedup vs reduce-overhead computed" json "$O" "'x_ro' in d['rows'][0]"
fi
# A step stopped by the time budget (its timeout cut to what was left: .rc's 4th field) reads as n/a, one
# that ran into its own timeout as failed (bench/report.py's Step).
L=$WORK/steps; mkdir -p "$L"
echo "124 21 21635 1" > "$L/cut.rc"; echo "124 150 150020 0" > "$L/own.rc"; echo "124 8 8001" > "$L/old.rc"
step_error() { "$PY" -c "import sys; sys.path.insert(0, '$ROOT/bench'); from report import Step; print(Step('$L', '$1').error)"; }
check "a budget-cut timeout is n/a" test "$(step_error cut)" = "n/a: time budget spent (stopped after 21s)"
check "a step's own timeout is a failure" test "$(step_error own)" = "failed: timed out after 150s"
check "a 3-field .rc still reads" test "$(step_error old)" = "failed: timed out after 8s"
echo "$fails failed; logs: $WORK"
exit $(( fails > 0 ))

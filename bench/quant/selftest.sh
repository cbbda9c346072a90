#!/usr/bin/env bash
# Tests bench/quant/run.sh without a GPU: the tiny 1b / 8b models (2 layers, hidden 256), real exports, a real
# CPU build of streamrt (STREAMRT_BIN_DIR, default build/bin), the Python package for accuracy.py
# (STREAMRT_PYTHONPATH, else what `import streamrt` finds, e.g. the .venv of `make test-python`).
#   bench/quant/selftest.sh [WORKDIR]
# Pass 1: every point, every build, accuracy and the report. Pass 2 (exports and plans from pass 1's cache): a
# 30 s deadline, too short for every point: the rest are "n/a: deadline" in the table and the run still ends
# with a report before the deadline.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
WORK=${1:-$(mktemp -d /tmp/quant-selftest.XXXXXX)}
mkdir -p "$WORK" || exit 1
PY=${PYTHON:-python3}
BIN=${STREAMRT_BIN_DIR:-$ROOT/build/bin}
fails=0
check() { # description, command...
  local what=$1; shift
  if "$@" > /dev/null 2>&1; then echo "ok:   $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
# jsonl FILE PYTHON-EXPRESSION over `rows` (the file's records)
jsonl() {
  "$PY" -c "import json, sys; rows = [json.loads(l) for l in open('$1') if l.strip()]; sys.exit(0 if ($2) else 1)"
}
common=(BENCH_TINY=1 BENCH_DEVICE=cpu BENCH_CACHE="$WORK/cache" STREAMRT_BIN_DIR="$BIN" PYTHON="$PY"
        ${STREAMRT_PYTHONPATH:+STREAMRT_PYTHONPATH="$STREAMRT_PYTHONPATH"})

# ---- pass 1
env "${common[@]}" BENCH_DEADLINE_S=1500 "$HERE/run.sh" "$WORK/out1" > "$WORK/out1.log" 2>&1
rc=$?
O=$WORK/out1
check "pass 1: run.sh exits 0" test $rc = 0
check "pass 1: quant.md written" test -s "$O/quant.md"
check "pass 1: 2 exports" jsonl "$O/exports.jsonl" "len(rows) == 2 and {r['model'] for r in rows} == {'1b', '8b'}"
check "pass 1: 6 plans built, int8 / int4 compress every MatMul of the 2-layer models" jsonl "$O/builds.jsonl" \
  "len(rows) == 6 and all('error' not in r for r in rows) and \
   all(r.get('steps_quantized', 0) >= 15 for r in rows if r['scheme'] != 'fp16')"
check "pass 1: int4 plan < int8 plan < fp16 plan" jsonl "$O/builds.jsonl" \
  "all(b['int4'] < b['int8'] < b['fp16'] for b in [{r['scheme']: r['plan_bytes'] for r in rows if r['label'] == m} \
   for m in ('1b', '8b')])"
check "pass 1: 18 decode points measured" jsonl "$O/decode.jsonl" \
  "len([r for r in rows if 'median_ms' in r]) == 18 and not any('error' in r for r in rows)"
# Budget 0 streams every streamable weight, compressed; 100 % streams nothing; 50 % about half.
check "pass 1: streamed bytes per token: int4 < int8 < fp16 at budget 0, none at 100 %" jsonl "$O/decode.jsonl" \
  "all((lambda d: d['int4/0'] < d['int8/0'] < d['fp16/0'] and d['fp16/100%'] == d['int4/100%'] == 0 \
        and 0 < d['int8/50%'] < d['int8/0'])({r['label'].split('/', 1)[1]: r['bytes_streamed_per_step'] \
        for r in rows if r['label'].startswith(m + '/')}) for m in ('1b', '8b'))"
check "pass 1: greedy tokens identical at every budget of a plan" jsonl "$O/decode.jsonl" \
  "all(len({str(r['tokens']) for r in rows if r['label'].rsplit('/', 1)[0] == p}) == 1 \
       for p in {r['label'].rsplit('/', 1)[0] for r in rows})"
check "pass 1: bandwidth measured per model" jsonl "$O/bandwidth.jsonl" "len(rows) == 2 and all('gbps' in r for r in rows)"
check "pass 1: accuracy of int8 and int4 over 257 steps" jsonl "$O/accuracy.jsonl" \
  "sorted(r['scheme'] for r in rows) == ['int4', 'int8'] and all(r['steps'] == 257 for r in rows)"
check "pass 1: int8 closer to fp16 than int4" jsonl "$O/accuracy.jsonl" \
  "(lambda d: d['int8']['mean_abs_err'] < d['int4']['mean_abs_err'] and d['int8']['top1_agree'] >= 0.9)( \
   {r['scheme']: r for r in rows})"
check "pass 1: table rows for every point" test "$(grep -cE '^\| Llama-3' "$O/quant.md")" -ge 26
check "pass 1: goals section" grep -q "^### Goals" "$O/quant.md"
check "pass 1: no n/a in a complete run" bash -c "! grep -q 'n/a' '$O/quant.md'"

# ---- pass 2
start=$(date +%s)
env "${common[@]}" BENCH_DEADLINE_S=30 "$HERE/run.sh" "$WORK/out2" > "$WORK/out2.log" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
O=$WORK/out2
check "pass 2: run.sh exits 0" test $rc = 0
check "pass 2: exports and plans reused" jsonl "$O/builds.jsonl" "all(r.get('cached') or 'n/a' in r.get('error', '') for r in rows)"
check "pass 2: ends by its deadline (${took}s of 30)" test $took -le 30
check "pass 2: skipped points shown as n/a: deadline" grep -q "n/a: deadline" "$O/quant.md"
echo "$fails failed; logs: $WORK"
exit $(( fails > 0 ))

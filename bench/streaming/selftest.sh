#!/usr/bin/env bash
# Tests the weight-streaming benchmark without a GPU:
#   PYTHON=/path/to/python-with-torch-accelerate-onnx bench/streaming/selftest.sh [WORKDIR]
# 1. report.py on made-up results with known answers (bound, ratios, goals, errors of failed points);
# 2. run.sh end to end on the tiny model: a real export, fake streamrt binaries (testdata/bin), torch_peer.py
#    on the CPU (prefetch loop without streams, accelerate cpu_offload), report and plot; then again with
#    the export cached and the sweep killed midway, and with a failing build; torch_peer past its deadline.
# With SELFTEST_STREAMRT_BIN_DIR=DIR (a CPU build's bin/ with streamrt and streamrt_stream_bench), also
# 3. run.sh with the real streamrt on the CPU.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=${1:-$(mktemp -d /tmp/streaming-selftest.XXXXXX)}
mkdir -p "$WORK" || exit 1
PY=${PYTHON:-python3}
FAKE_BIN=$HERE/testdata/bin
fails=0
check() { # description, command...
  local what=$1; shift
  if "$@" > /dev/null 2>&1; then echo "ok:   $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
has() { grep -qF -- "$2" "$1"; }
row() { grep -qE "^\| $2" "$1"; }  # file, regex of the row's cells after "| "
lines() { [ "$(grep -c "$2" "$1")" = "$3" ]; }  # file, pattern, count

# ---------------------------------------------------------------- 1. report.py on known numbers
R=$WORK/report
rm -rf "$R" && mkdir -p "$R"
echo '{"streamable_bytes": 10000000000}' > "$R/fake.plan"
# streamrt: latency = max(resident, (100 - pct) % of 10 GB at 10 GB/s) x 1.02, resident = 2 + seq / 16 ms;
# seq 2048 at 30 % is 1.2x slower; seq 1 at 50 % fails.
FAKE_BW_GBPS=10 FAKE_SLOW=2048:30 FAKE_FAIL_POINT=1:50 "$FAKE_BIN/streamrt_stream_bench" "$R/fake.plan" \
  --seqs 1,2048 --json "$R/streamrt.jsonl" > "$R/stream_bench.log" 2>&1
echo "$? 300 1000" > "$R/stream_bench.rc"
"$PY" - "$R/torch.jsonl" <<'EOF'
import json, sys
recs = [{"impl": "h2d_bandwidth", "gbps": 10.0, "max_gbps": 11.0, "bytes": 1 << 30, "n": 5, "median_ms": 107.4}]
for seq, resident in ((1, 2.0625), (2048, 130.0)):
    recs.append({"impl": "torch_resident", "seq": seq, "budget_pct": 100, "median_ms": resident * 1.1})
    for pct in range(0, 101, 10):
        ms = max(resident, (100 - pct) * 10.0) * 1.1
        if (seq, pct) == (1, 70):
            ms = 50.0  # faster than streamrt (306 ms): the prefetch goal fails here
        recs.append({"impl": "torch_prefetch", "seq": seq, "budget_pct": pct, "median_ms": ms, "check": "exact",
                     "streamable_bytes": 10**10, "budget_bytes": 10**8 * pct})
recs.append({"impl": "torch_prefetch", "seq": 2048, "budget_pct": 60, "median_ms": 440.0, "check": "max_abs_diff=0.5",
             "streamable_bytes": 10**10, "budget_bytes": 6 * 10**9})
recs.append({"impl": "accelerate_cpu_offload", "seq": 1, "median_ms": 1500.0, "check": "exact"})
recs.append({"impl": "accelerate_cpu_offload", "seq": 2048, "median_ms": 1400.0, "check": "exact"})
with open(sys.argv[1], "w") as f:
    f.writelines(json.dumps(r) + "\n" for r in recs)
EOF
"$PY" "$HERE/report.py" "$R" > "$R/report.out" 2>&1
check "report.py on made-up results: exit 0" test $? = 0
M=$R/streaming.md
check "seq 2048 at 0 %: 10 GB out, 1020 ms vs bound 1000 (1.02x), 1.08x vs prefetch, 1.37x vs accelerate: miss" \
  row "$M" "0 \| 10.00 GB \| 1020.00 \| 890.00 \| 1000.00 \| 1.02x \| 1100.00 \| 1.08x \| 1400.00 \| 1.37x \| yes \| yes \| \*\*no\*\* \|"
check "seq 2048 at 30 %: 1.2x slow point misses the bound (856.8 / 700 = 1.22x)" \
  row "$M" "30 \| 7.00 GB \| 856.80 \|[^|]*\| 700.00 \| 1.22x \| 770.00 \| 0.90x \| 1400.00 \| 1.63x \| \*\*no\*\* \| \*\*no\*\* \| yes \|"
check "seq 2048 at 90 %: bound is the resident latency (132.6 ms)" \
  row "$M" "90 \| 1.00 GB \| 132.60 \| 2.60 \| 132.60 \| 1.00x \|"
check "seq 2048 at 60 %: a prefetch output that differs is shown" has "$M" "440.00 (max_abs_diff=0.5)"
check "seq 1 at 50 %: the tool's per-point error" \
  row "$M" "50 \| 5.00 GB \| failed: out of memory: cudaMalloc of 123 bytes \|"
check "seq 1 at 10 %: negligible compute (2.1 ms of a 900 ms bound): accelerate not judged" \
  row "$M" "10 \| 9.00 GB \| 918.00 \|[^|]*\| 900.00 \| 1.02x \| 990.00 \| 1.08x \| 1500.00 \| 1.63x \| yes \| yes \| n/a \|"
check "seq 1 at 70 %: slower than the prefetch loop" \
  row "$M" "70 \| 3.00 GB \| 306.00 \|[^|]*\| 300.00 \| 1.02x \| 50.00 \| 0.16x \|[^|]*\|[^|]*\| yes \| \*\*no\*\* \|"
check "seq 1 at 100 %: bound = resident 2.104 ms" row "$M" "100 \| 0.00 GB \| 2.104 \|[^|]*\| 2.104 \| 1.00x \|"
check "goal 1 summary: fails at seq 2048 30 %, not measured at seq 1 50 %" \
  grep -qE "within 5% of the bound.*\*\*fails\*\*.*missed at seq 2048: 30 % \(1.22x\); not measured at seq 1: 50 %" "$M"
check "goal 2 summary: misses at seq 1 70 % and seq 2048 30 %" \
  grep -qE "never slower.*\*\*fails\*\*.*missed at seq 1: 70 % \(0.16x\); seq 2048: 30 % \(0.90x\)" "$M"
check "goal 3 summary: negligible points not judged" grep -qE "1.5x faster.*points where compute is negligible are not judged" "$M"
check "bandwidth in the header" has "$M" "Pinned host-to-device bandwidth: 10.00 GB/s"
check "streaming.json rows" "$PY" -c "import json; d=json.load(open('$R/streaming.json')); assert len(d['rows']['2048']) == 11"
if "$PY" -c "import matplotlib" 2> /dev/null; then
  check "plot written" test -s "$R/streaming.png"
else
  check "no matplotlib: said in the report" has "$M" "no plot: matplotlib"
fi

# ---------------------------------------------------------------- 2. run.sh, tiny model, fake streamrt
run_bench() { # OUTDIR, then environment assignments for this run
  local out=$1; shift
  env "$@" PYTHON="$PY" STREAMRT_BIN_DIR="$FAKE_BIN" BENCH_CACHE="$WORK/cache" BENCH_TINY=1 BENCH_DEVICE=cpu \
    BENCH_ITERS=2 "$HERE/run.sh" "$out" > "$out.log" 2>&1
}
O=$WORK/run1
run_bench "$O" FAKE_BW_GBPS=0.01
check "run.sh exits 0" test $? = 0
check "run.sh prints the table last" grep -qE "^\| 100 \|" "$O.log"
check "export: tiny model with a dynamic seq and external data" \
  "$PY" -c "import json; d=json.load(open('$O/export.json')); assert d['external_files'] >= 1 and d['config']['layers'] == 2"
check "build got the profile hidden_states:1x1x256:1x32x256:1x32x256" has "$O.log" "--profile hidden_states:1x1x256:1x32x256:1x32x256"
check "streamrt: 22 points" lines "$O/streamrt.jsonl" '"impl": "streamrt"' 22
check "torch prefetch: 22 points, all equal to the resident output" lines "$O/torch.jsonl" '"impl": "torch_prefetch".*"check": "exact"' 22
check "accelerate: 2 points, equal to the resident output" lines "$O/torch.jsonl" '"impl": "accelerate_cpu_offload".*"check": "exact"' 2
check "bandwidth measured (host memcpy on the CPU)" grep -qE '"impl": "h2d_bandwidth", .*"gbps": [0-9.]+' "$O/torch.jsonl"
check "table seq 1: 11 rows" "$PY" -c "
import re; t = open('$O/streaming.md').read().split('## seq 1')[1].split('## seq 32')[0]
assert len(re.findall(r'^\| \d+ \|', t, re.M)) == 11"
check "table seq 32 has streamrt, bound, prefetch and accelerate numbers" \
  grep -qE "^\| 0 \| 3.162 MB \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+x \| [0-9.]+ \| [0-9.]+x \| [0-9.]+ \| [0-9.]+x \|" "$O/streaming.md"
check "OUTDIR holds no model or plan" test -z "$(find "$O" -name '*.onnx*' -o -name '*.plan' -o -size +2M)"
check "plan deleted after the sweep" test ! -e "$WORK/cache/stream.plan"

O=$WORK/run2  # export cached; the sweep is killed after 13 points
run_bench "$O" FAKE_CRASH_AFTER=13
check "second run: export from the cache" has "$O/export.log" "cached in"
check "killed sweep: its status in the missing points" \
  grep -qE "^\| 30 \| [^|]* \| failed: killed \(exit status 137\) after [0-9]+s \(stream_bench\)" "$O/streaming.md"
check "killed sweep: the points before it are kept" lines "$O/streamrt.jsonl" '"impl": "streamrt"' 13

O=$WORK/run3  # the build fails
run_bench "$O" FAKE_FAIL_BUILD=1 BENCH_DEADLINE_S=100 BENCH_TORCH_RESERVE_S=10
check "failing build: run.sh still writes the report" test -s "$O/streaming.md"
check "failing build: streamrt cells name the build error" has "$O/streaming.md" "failed: error: unsupported: node 'Foo_3' (op Foo) (build)"
check "failing build: the sweep is marked as skipped" has "$O/stream_bench.skip" "failed: no plan"
check "failing build: torch numbers still there" grep -qE "^\| 50 \| [^|]* \| failed: [^|]* \| - \| n/a \| - \| [0-9.]+ \|" "$O/streaming.md"

# torch_peer past its deadline: what is left is recorded as skipped, the rest is measured.
T=$WORK/deadline.jsonl
rm -f "$T"
"$PY" "$HERE/torch_peer.py" --tiny --seqs 1,32 --budgets 0,50,100 --iters 2 --deadline-s 0.5 --json "$T" > /dev/null 2>&1
check "torch_peer deadline: exit 0" test $? = 0
check "torch_peer deadline: resident measured" lines "$T" '"impl": "torch_resident", "median_ms": [0-9]' 2
check "torch_peer deadline: prefetch points skipped" lines "$T" '"impl": "torch_prefetch".*"skipped: deadline"' 6
check "torch_peer deadline: accelerate skipped" lines "$T" '"impl": "accelerate_cpu_offload".*"skipped: deadline"' 2

# BENCH_PACK_LOGS=1: at most 8 files come back from the device tool; the logs go into one archive.
O=$WORK/packed
run_bench "$O" BENCH_PACK_LOGS=1
check "packed: run.sh exits 0" test $? = 0
check "packed: at most 8 files" test "$(ls "$O" | wc -l)" -le 8
check "packed: the report is kept" test -s "$O/streaming.md"
check "packed: the step logs are in logs.tgz" sh -c "tar tzf '$O/logs.tgz' | grep -qx build.log"

# ---------------------------------------------------------------- 3. real streamrt on the CPU (optional)
if [ -n "${SELFTEST_STREAMRT_BIN_DIR:-}" ]; then
  O=$WORK/real
  env PYTHON="$PY" STREAMRT_BIN_DIR="$SELFTEST_STREAMRT_BIN_DIR" BENCH_CACHE="$WORK/cache" BENCH_TINY=1 \
    BENCH_DEVICE=cpu BENCH_ITERS=2 "$HERE/run.sh" "$O" > "$O.log" 2>&1
  check "real streamrt: build with the profile" test "$(cut -d' ' -f1 "$O/build.rc")" = 0
  check "real streamrt: 22 points" lines "$O/streamrt.jsonl" '"impl": "streamrt"' 22
  check "real streamrt: report" grep -qE "^\| 0 \| [^|]* \| [0-9.]+ \|" "$O/streaming.md"
fi

echo "selftest: $fails failure(s); outputs under $WORK"
exit $(( fails > 0 ))

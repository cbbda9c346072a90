#!/usr/bin/env bash
# Tests bench/run_gpu.sh without a GPU: tiny GPT-2 / Llama exports (real), a fake streamrt binary
# (bench/testdata/fake_streamrt) whose build fails, run hangs or prints no latency for chosen points, and
# torch_peer on a device it cannot use. Checks that every failure lands in bench.md / bench.json as
# "failed: ..." and that the run still finishes with a report; then runs again to check the export cache.
#   PYTHON=/path/to/python-with-torch bench/selftest.sh [WORKDIR]
set -u
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
WORK=${1:-$(mktemp -d /tmp/bench-selftest.XXXXXX)}
mkdir -p "$WORK" || exit 1
PY=${PYTHON:-python3}
fails=0
check() { # description, command...
  local what=$1; shift
  if "$@" > /dev/null 2>&1; then echo "ok:   $what"; else echo "FAIL: $what"; fails=$((fails + 1)); fi
}
run_bench() {
  PYTHON=$PY STREAMRT=$BENCH_DIR/testdata/fake_streamrt BENCH_CACHE=$WORK/cache BENCH_TINY=1 \
    BENCH_DEVICE=${DEVICE:-cuda} BENCH_ITERS=5 BENCH_WARMUP=1 BENCH_RUN_TIMEOUT_S=5 BENCH_DEADLINE_S=300 \
    BENCH_NO_COMPILE=1 BENCH_KEEP_LOGS=1 BENCH_POINTS="gpt2:1:fp16 gpt2:1:bf16 llama:1:fp16 llama:2:bf16" \
    FAKE_FAIL_BUILD=llama_b2 FAKE_HANG_RUN=gpt2_b1_bf16 FAKE_GARBLE_RUN=llama_b1_fp16 \
    "$BENCH_DIR/run_gpu.sh" "$1" > "$1.log" 2>&1
}
has() { grep -qF -- "$2" "$1"; }
row() { grep -E "^\| $2 \| $3 \| $4 \|" "$1/bench.md"; }

# Pass 1: the device is "cuda" (fake streamrt), which this machine's torch cannot use.
run_bench "$WORK/out1"; rc=$?
O=$WORK/out1
check "run_gpu.sh exits 0" test $rc = 0
check "bench.md written" test -s "$O/bench.md"
check "bench.json parses" "$PY" -c "import json,sys; d=json.load(open('$O/bench.json')); assert len(d['points'])==4"
check "gpt2 fp16: streamrt median" row "$O" gpt2 1x32 fp16
check "gpt2 fp16: 2.500 / 1.250 ms, build 1.23 s" grep -qE '^\| gpt2 \| 1x32 \| fp16 \| 1.23 \| 2.500 \| 1.250 \|' "$O/bench.md"
check "gpt2 bf16: hung runs time out" grep -qE '^\| gpt2 \| 1x32 \| bf16 \| 1.23 \| failed: timed out after 5s \| failed: timed out after 5s' "$O/bench.md"
check "llama fp16: garbled run output" grep -qE '^\| llama \| 1x32 \| fp16 \| 1.23 \| failed: no latency line' "$O/bench.md"
check "llama 2 bf16: build error reported" grep -qE "^\| llama \| 2x32 \| bf16 \| failed: error: unsupported: node 'Foo_3'" "$O/bench.md"
check "llama 2 bf16: runs skipped after failed build" grep -qE '^\| llama \| 2x32 \| bf16 \|[^|]*\| failed: build failed' "$O/bench.md"
check "torch eager on a missing GPU: failed" grep -qE '^\| gpt2 \| 1x32 \| fp16 \|([^|]*\|){3} failed:' "$O/bench.md"
check "torch.compile skipped by BENCH_NO_COMPILE" has "$O/bench.md" "n/a: skipped (BENCH_NO_COMPILE)"
check "op types listed" has "$O/bench.md" "LayerNormalization"
check "exports cached" test -s "$WORK/cache/llama_b2_s32_tiny/export.json"
check "logs packed" tar tzf "$O/bench-logs.tgz" bench-logs/build_llama_b2_bf16.log

# Pass 2: CPU torch (real measurements), exports from the cache.
DEVICE=cpu run_bench "$WORK/out2"
O=$WORK/out2
check "second run reuses the exports" test -s "$O/bench-logs/export_gpt2_b1_s32_tiny.cached.json"
check "torch eager measured on the CPU" grep -qE '^\| gpt2 \| 1x32 \| fp16 \|([^|]*\|){3} [0-9.]+ \|' "$O/bench.md"
check "speedup computed" grep -qE '^\| gpt2 \| 1x32 \| fp16 \|([^|]*\|){5} [0-9.]+x \|' "$O/bench.md"
check "no CUDA graph on the CPU" has "$O/bench.md" "n/a: CUDA graphs need --device cuda"

echo "selftest: $fails failure(s); outputs under $WORK"
exit $(( fails > 0 ))

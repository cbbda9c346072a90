#!/usr/bin/env bash
# Issue 19's benchmark (compressed weight streaming) on one GPU, in one call within BENCH_DEADLINE_S:
#   bench/quant/run.sh OUTDIR        (device tool: run(command="bench/quant/run.sh $OUT", carry=[".gpu"]))
#   python3 bench/quant/report.py OUTDIR [--minilm bench/quant/results/minilm.jsonl]   (run.sh calls it last)
# Models (bench/quant/export.py, random fp16 weights, KV-cache step in the optimum layout, cached in
# $BENCH_CACHE): "1b" = the Llama-3.2-1B shape (2.47 GB), "8b" = the Llama-3-8B shape at 14 layers (8.2 GB).
# Plans (plans.py build): --weight-streaming, fp16 / --weight-quant int8 / int4 (group 128); profile 1..32
# new tokens, 1..576 cached positions. Points: examples/greedy_decode after a random 512-position cache
# (--past 512) at budgets 0, 100 % (resident), 50 %; the pinned host-to-device bandwidth (plans.py bandwidth)
# measured before each model's points gives the bound. Accuracy (accuracy.py, the Python package from .gpu/py,
# scripts/gpu-python-bundle): the 1b model's int8 / int4 logits against fp16 over 256 teacher-forced steps.
#
# Order: both exports start at once in the background (weights made on the GPU, exported on the CPU, niced); the
# GPU queue (builds, bandwidth, decode points, accuracy: one at a time) does 1b as soon as its export is there: builds,
# budget 0, 100 %, accuracy, 50 %; then 8b: each scheme's build and its budget-0 point, then 100 %, 50 %.
# A point that no longer fits before the deadline is written as "n/a: deadline" and shown so in the table;
# decode points run while an export still runs are marked in points.jsonl (the report flags them).
# OUTDIR: decode.jsonl (greedy_decode's lines, label MODEL/SCHEME/BUDGET), points.jsonl, builds.jsonl,
# bandwidth.jsonl, accuracy.jsonl, exports.jsonl, quant.md / quant.png (report.py), logs/.
# Environment: BENCH_DEADLINE_S (530), BENCH_MODELS ("1b 8b"), BENCH_SCHEMES ("fp16 int8 int4"; fp8 too),
# BENCH_BUDGETS ("0 100% 50%"), BENCH_ACC_STEPS (256), BENCH_CACHE (/tmp/bench-quant), BENCH_DEVICE (cuda), BENCH_CUDA_GRAPH (1 on cuda: greedy_decode --cuda-graph),
# BENCH_TINY=1 (CPU self-test sizes: bench/quant/selftest.sh), STREAMRT_BIN_DIR, STREAMRT_PYTHONPATH, PYTHON,
# BENCH_STREAM_AHEAD=0 (greedy_decode --no-stream-ahead: each token copies all its own weights; by default a token's
# end copies the next token's first weights).
set -u
export PYTHONUNBUFFERED=1
OUTDIR=${1:?usage: bench/quant/run.sh OUTDIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd)
LOGS=$OUTDIR/logs
rm -rf "$LOGS" && mkdir -p "$LOGS" || exit 1
rm -f "$OUTDIR"/{decode,points,builds,bandwidth,accuracy,exports}.jsonl
PY=${PYTHON:-python3}
TINY=${BENCH_TINY:-0}
DEVICE=${BENCH_DEVICE:-cuda}
GRAPH=(); [ "${BENCH_CUDA_GRAPH:-$([ "$DEVICE" = cuda ] && echo 1)}" = 1 ] && GRAPH=(--cuda-graph)
[ "${BENCH_STREAM_AHEAD:-1}" = 0 ] && GRAPH+=(--no-stream-ahead)
CACHE=${BENCH_CACHE:-/tmp/bench-quant}
MODELS=${BENCH_MODELS:-1b 8b}
SCHEMES=${BENCH_SCHEMES:-fp16 int8 int4}
BUDGETS=${BENCH_BUDGETS:-0 100% 50%}
ACC_STEPS=${BENCH_ACC_STEPS:-256}
START=$(date +%s)
DEADLINE=$(( START + ${BENCH_DEADLINE_S:-530} ))
STOP_AT=$(( DEADLINE - 10 ))  # the report runs after this
if [ "$TINY" = 1 ]; then
  TINY_FLAG=(--tiny); SUFFIX=-tiny; PAST=48; MAX_NEW=32; MAX_PAST=320
  declare -A TOKENS=([1b]=8 [8b]=8) NEED_BUILD=([1b]=20 [8b]=20) NEED_RUN=([1b]=10 [8b]=10)
else
  TINY_FLAG=(); SUFFIX=; PAST=512; MAX_NEW=32; MAX_PAST=576
  # Seconds a step is given at most (its timeout) and needs at least to be started.
  declare -A TOKENS=([1b]=16 [8b]=9) NEED_BUILD=([1b]=40 [8b]=120) NEED_RUN=([1b]=20 [8b]=40)
fi
mkdir -p "$CACHE" || exit 1

if [ -n "${STREAMRT_BIN_DIR:-}" ]; then BIN=$STREAMRT_BIN_DIR
elif [ -d "$ROOT/.gpu" ]; then pushd "$ROOT" > /dev/null && source scripts/gpu-env && popd > /dev/null
else BIN=$ROOT/build/bin; fi
export STREAMRT_BIN_DIR=$BIN
# The Python package (accuracy.py): STREAMRT_PYTHONPATH, else the carried .gpu/py, else whatever imports.
PKG=${STREAMRT_PYTHONPATH:-}
[ -z "$PKG" ] && [ -d "$ROOT/.gpu/py/streamrt" ] && PKG=$ROOT/.gpu/py

say() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$LOGS/run.log" >&2; }
left() { echo $(( STOP_AT - $(date +%s) )); }
jline() { echo "$2" >> "$OUTDIR/$1.jsonl"; }  # FILE JSON

# ---- exports: both start now, in the background
declare -A EXPORT_PID ONNX
for m in $MODELS; do
  dir=$CACHE/model-$m$SUFFIX
  ONNX[$m]=$dir/model.onnx
  if [ -f "${ONNX[$m]}" ]; then
    say "export $m: cached ($dir)"
    jline exports "$(cat "$dir/export.json")"
    continue
  fi
  say "export $m: started"
  # Weights made on the GPU, exported on the CPU, niced: the GPU queue times points meanwhile.
  nice -n 10 "$PY" "$HERE/export.py" "$m" "$dir" "${TINY_FLAG[@]}" --init-device "$DEVICE" > "$LOGS/export-$m.json" \
    2> "$LOGS/export-$m.log" &
  EXPORT_PID[$m]=$!
done
busy() {  # the exports still running
  local out=
  for m in "${!EXPORT_PID[@]}"; do kill -0 "${EXPORT_PID[$m]}" 2>/dev/null && out+="export-$m "; done
  echo "${out% }"
}
wait_export() {  # MODEL: 0 when its ONNX file is there
  local m=$1 pid=${EXPORT_PID[$1]:-}
  while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; do
    if (( $(left) < ${NEED_BUILD[$m]} )); then
      say "export $m: not done before the deadline, stopped"; kill "$pid" 2>/dev/null
      break
    fi
    sleep 2
  done
  [ -n "$pid" ] && wait "$pid" 2>/dev/null && cat "$LOGS/export-$m.json" >> "$OUTDIR/exports.jsonl"
  if [ -f "${ONNX[$m]}" ]; then say "export $m: ready"; return 0; fi
  say "export $m: failed (logs/export-$m.log)"; tail -5 "$LOGS/export-$m.log" >&2
  return 1
}

plan_of() { echo "$CACHE/$1$SUFFIX-$2.plan"; }
build() {  # MODEL SCHEME
  local m=$1 s=$2 plan t
  plan=$(plan_of "$m" "$s")
  if [ -f "$plan" ] && [ "$plan" -nt "$BIN/streamrt" ] && [ "$plan" -nt "${ONNX[$m]}" ]; then
    jline builds "{\"label\": \"$m\", \"scheme\": \"$s\", \"cached\": true, \"plan_bytes\": $(stat -c %s "$plan")}"
    return 0
  fi
  rm -f "$plan"
  t=$(left)
  if (( t < ${NEED_BUILD[$m]} )); then
    jline builds "{\"label\": \"$m\", \"scheme\": \"$s\", \"error\": \"n/a: deadline\"}"; say "build $m $s: skipped (deadline)"
    return 1
  fi
  say "build $m $s"
  "$PY" "$HERE/plans.py" build "${ONNX[$m]}" "$plan" --scheme "$s" --device "$DEVICE" --max-new $MAX_NEW \
    --opt-past $PAST --max-past $MAX_PAST --timeout "$t" --label "$m" --json "$OUTDIR/builds.jsonl" \
    --log "$LOGS/build-$m-$s.log" > /dev/null
  local rc=$?
  say "build $m $s: $(tail -1 "$OUTDIR/builds.jsonl" | cut -c1-160)"
  return $rc
}
bandwidth() {  # LABEL
  (( $(left) < 15 )) && { jline bandwidth "{\"impl\": \"h2d_bandwidth\", \"label\": \"$1\", \"error\": \"n/a: deadline\"}"; return; }
  jline points "{\"label\": \"bandwidth/$1\", \"busy\": \"$(busy)\"}"
  local t; t=$(left); (( t > 60 )) && t=60
  timeout "$t" "$PY" "$HERE/plans.py" bandwidth --label "$1" --json "$OUTDIR/bandwidth.jsonl" > /dev/null 2>> "$LOGS/bandwidth.log"
  say "bandwidth ($1): $(tail -1 "$OUTDIR/bandwidth.jsonl")"
}
decode() {  # MODEL SCHEME BUDGET
  local m=$1 s=$2 b=$3 plan label t rc bz t0
  plan=$(plan_of "$m" "$s"); label="$m/$s/$b"
  t=$(left)
  if [ ! -f "$plan" ]; then
    jline decode "{\"impl\": \"streamrt\", \"label\": \"$label\", \"error\": \"n/a: no plan\"}"; return
  fi
  if (( t < ${NEED_RUN[$m]} )); then
    jline decode "{\"impl\": \"streamrt\", \"label\": \"$label\", \"error\": \"n/a: deadline\"}"; say "$label: skipped (deadline)"
    return
  fi
  (( t > 120 )) && t=120
  local log=$LOGS/decode-${label//\//-}.log
  log=${log//%/pct}
  bz=$(busy); t0=$(date +%s.%N)
  timeout "$t" "$BIN/streamrt_greedy_decode" "$plan" --past $PAST --new-tokens "${TOKENS[$m]}" --budget "$b" \
    --device "$DEVICE" "${GRAPH[@]}" --json "$OUTDIR/decode.jsonl" --label "$label" > "$log" 2>&1
  rc=$?
  jline points "{\"label\": \"$label\", \"rc\": $rc, \"wall_s\": $(awk "BEGIN {print $(date +%s.%N) - $t0}"), \"busy\": \"$bz\"}"
  if [ $rc != 0 ]; then
    local why="exit $rc"; [ $rc = 124 ] && why="timed out after ${t}s"
    why="$why: $(grep -E '^error' "$log" | tail -1 | tr '"\\' "'/" | cut -c1-150)"
    jline decode "{\"impl\": \"streamrt\", \"label\": \"$label\", \"error\": \"failed: $why\"}"
  fi
  say "$label: $(grep -E '^decode' "$log" | cut -c1-150) (rc $rc${bz:+, during $bz})"
}
accuracy() {  # MODEL
  local m=$1 spec= s t
  for s in $SCHEMES; do [ -f "$(plan_of "$m" "$s")" ] && spec+="$s=$(plan_of "$m" "$s"),"; done
  t=$(left)
  if (( t < 30 )) || [[ "$spec" != *fp16=* ]]; then
    for s in $SCHEMES; do
      [ "$s" != fp16 ] && jline accuracy "{\"label\": \"$m\", \"scheme\": \"$s\", \"error\": \"n/a: $( (( t < 30 )) && echo deadline || echo 'no fp16 plan')\"}"
    done
    return
  fi
  (( t > 150 )) && t=150
  say "accuracy $m: $ACC_STEPS steps"
  PYTHONPATH="$PKG${PYTHONPATH:+:$PYTHONPATH}" timeout "$t" "$PY" "$HERE/accuracy.py" --plans "${spec%,}" \
    --device "$DEVICE" --steps "$ACC_STEPS" --label "$m" --json "$OUTDIR/accuracy.jsonl" > /dev/null 2> "$LOGS/accuracy-$m.log"
  local rc=$?
  if [ $rc = 124 ]; then
    for s in $SCHEMES; do
      [ "$s" != fp16 ] && jline accuracy "{\"label\": \"$m\", \"scheme\": \"$s\", \"error\": \"failed: timed out after ${t}s\"}"
    done
  fi
  say "accuracy $m: rc $rc $(grep -c . "$OUTDIR/accuracy.jsonl" 2>/dev/null) lines"
}

# ---- the GPU queue
for m in $MODELS; do
  if ! wait_export "$m"; then
    for s in $SCHEMES; do for b in $BUDGETS; do decode "$m" "$s" "$b"; done; done
    continue
  fi
  bandwidth "$m"
  first=${BUDGETS%% *}; rest=${BUDGETS#"$first"}
  if [ "$m" = 1b ]; then
    for s in $SCHEMES; do build "$m" "$s"; done
    for s in $SCHEMES; do decode "$m" "$s" "$first"; done
    for b in $rest; do
      for s in $SCHEMES; do decode "$m" "$s" "$b"; done
      [ "$b" = 100% ] && accuracy "$m"
    done
    [[ " $rest " == *" 100% "* ]] || accuracy "$m"
  else
    # the larger model's builds are long: each scheme's most important point right after its build
    for s in $SCHEMES; do build "$m" "$s"; decode "$m" "$s" "$first"; done
    for b in $rest; do for s in $SCHEMES; do decode "$m" "$s" "$b"; done; done
  fi
done
for m in "${!EXPORT_PID[@]}"; do kill "${EXPORT_PID[$m]}" 2>/dev/null; done
say "points done; report"
minilm=$HERE/results/minilm.jsonl
"$PY" "$HERE/report.py" "$OUTDIR" $([ -f "$minilm" ] && echo "--minilm $minilm") > "$LOGS/report.log" 2>&1 \
  || { say "report failed"; tail -5 "$LOGS/report.log" >&2; }
cat "$OUTDIR/quant.md" 2>/dev/null
say "done"

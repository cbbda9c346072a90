#!/usr/bin/env bash
# The decode benchmark of issue 15 on the GPU machine: a transformers Llama at the Llama-3-8B shape (fp16,
# random weights, KV cache, torch.onnx dynamo export with external data), run by examples/greedy_decode
# with --budget auto while a second process (hog.py) leaves only 1, 2, 4, 8 GiB of the GPU free, and with the
# GPU empty. Two calls, so each stays within the device tool's 10 minutes:
#   bench/decode/run.sh streamrt OUTDIR   export (cached in $BENCH_CACHE) + build + streamrt at every point
#   bench/decode/run.sh torch OUTDIR      bandwidth + PyTorch prefetch loop + accelerate at every point
#   python3 bench/decode/report.py OUTDIR  (here or there) -> OUTDIR/decode.md, decode.png
# Points per free-memory level: a 2048-token prefill in pieces of BENCH_PREFILL_CHUNK (256) tokens (then 8
# greedy steps after it: decode at past 2048) and
# 8 greedy steps after a random 512-position cache. OUTDIR gets small files only (JSON lines and logs).
# Environment: BENCH_LAYERS (14: 8.2 GB), BENCH_FREE (1GiB,2GiB,4GiB,8GiB,empty), BENCH_TINY=1 (CPU self-test),
# BENCH_CACHE (/tmp/bench-decode), BENCH_DEVICE (cuda), BENCH_CUDA_GRAPH (1 on cuda: greedy_decode --cuda-graph), BENCH_KV_IN_PLACE=1 (build with --kv-cache-in-place:
# one cache buffer per pair, new rows written in place; JSON lines labelled "<point>-inplace"), PYTHON.
set -u
export PYTHONUNBUFFERED=1
WHAT=${1:?usage: bench/decode/run.sh streamrt|torch OUTDIR}
OUTDIR=${2:?usage: bench/decode/run.sh streamrt|torch OUTDIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd)
PY=${PYTHON:-python3}
TINY=${BENCH_TINY:-0}
CACHE=${BENCH_CACHE:-/tmp/bench-decode}
DEVICE=${BENCH_DEVICE:-cuda}
GRAPH=(); [ "${BENCH_CUDA_GRAPH:-$([ "$DEVICE" = cuda ] && echo 1)}" = 1 ] && GRAPH=(--cuda-graph)
STEPS=8
if [ "$TINY" = 1 ]; then
  LAYERS=${BENCH_LAYERS:-2}; PREFILL=60; PAST=30; TINY_FLAG=(--tiny); FREE=${BENCH_FREE:-empty}
else
  LAYERS=${BENCH_LAYERS:-14}; PREFILL=2048; PAST=512; TINY_FLAG=(); FREE=${BENCH_FREE:-1GiB,2GiB,4GiB,8GiB,empty}
fi
if [ -n "${STREAMRT_BIN_DIR:-}" ]; then
  BIN=$STREAMRT_BIN_DIR
elif [ -d "$ROOT/.gpu" ]; then
  pushd "$ROOT" > /dev/null && source scripts/gpu-env && popd > /dev/null
else
  BIN=$ROOT/build/bin
fi
log() { echo "[$(date +%T)] $*" | tee -a "$OUTDIR/run.log" >&2; }

if [ "$WHAT" = torch ]; then
  log "torch peers: layers $LAYERS, free $FREE"
  "$PY" "$HERE/decode_peer.py" --free "$FREE" --layers "$LAYERS" "${TINY_FLAG[@]}" --steps $STEPS \
    --prefill $PREFILL --pasts $PAST --bandwidth --json "$OUTDIR/torch.jsonl" --deadline-s "${BENCH_DEADLINE_S:-540}" \
    2> "$OUTDIR/torch.log"
  log "torch peers: exit $?"; tail -3 "$OUTDIR/torch.log" >&2
  exit 0
fi

MODEL=$CACHE/model-$LAYERS${TINY_FLAG:+-tiny}
if [ ! -f "$MODEL/model.onnx" ]; then
  log "export: $LAYERS layers"
  "$PY" "$HERE/export_llama_kv.py" "$MODEL" --layers "$LAYERS" "${TINY_FLAG[@]}" > "$OUTDIR/export.json" 2> "$OUTDIR/export.log" \
    || { log "export failed"; tail -20 "$OUTDIR/export.log" >&2; exit 1; }
  rm -f "$MODEL"-chunk*.plan
fi
cp "$MODEL/export.json" "$OUTDIR/export.json" 2>/dev/null
# Profiles: 1..CHUNK new tokens (the prompt runs in pieces of CHUNK: activations are planned for a piece),
# 1..PREFILL+64 cached positions, the mask over both (the ranges agree: shape inference runs the graph's own
# index arithmetic at the max); opt = one token after PREFILL.
CHUNK=${BENCH_PREFILL_CHUNK:-$([ "$TINY" = 1 ] && echo 16 || echo 256)}
KV_FLAG=(); KV_SUFFIX=
if [ "${BENCH_KV_IN_PLACE:-0}" = 1 ]; then KV_FLAG=(--kv-cache-in-place); KV_SUFFIX=-inplace; fi
PLAN=$MODEL-chunk$CHUNK$KV_SUFFIX.plan
PROFILES=$("$PY" - "$MODEL/model.onnx" $PREFILL $CHUNK <<'PYEOF'
import sys, onnx
m = onnx.load(sys.argv[1], load_external_data=False)
prefill, seq = int(sys.argv[2]), int(sys.argv[3]); past = prefill + 64
out = [f"input_ids:1x1:1x1:1x{seq}", f"position_ids:1x1:1x1:1x{seq}", f"attention_mask:1x2:1x{prefill + 1}:1x{seq + past}"]
for i in m.graph.input:
    if i.name.startswith("past_key_values."):
        h, d = (x.dim_value for x in (i.type.tensor_type.shape.dim[1], i.type.tensor_type.shape.dim[3]))
        out.append(f"{i.name}:1x{h}x1x{d}:1x{h}x{prefill}x{d}:1x{h}x{past}x{d}")
print(" ".join("--profile " + p for p in out))
PYEOF
)
if [ ! -f "$PLAN" ]; then
  log "build"
  # shellcheck disable=SC2086
  /usr/bin/time -v "$BIN/streamrt" build "$MODEL/model.onnx" -o "$PLAN" --device "$DEVICE" --weight-streaming "${KV_FLAG[@]}" $PROFILES \
    > "$OUTDIR/build.log" 2>&1 || { log "build failed"; tail -30 "$OUTDIR/build.log" >&2; rm -f "$PLAN"; exit 1; }
  "$BIN/streamrt" inspect "$PLAN" --budget 0 > "$OUTDIR/inspect.log" 2>&1
fi
grep -E "built|nodes|weights|streaming|KV cache" "$OUTDIR/build.log" | head -7 >&2
grep -E "memory contract|scratch|streamed per run" "$OUTDIR/inspect.log" >&2
PROMPT=$("$PY" -c "import sys; sys.path.insert(0, '$HERE'); from decode_peer import prompt_ids; import json; \
c = json.load(open('$MODEL/export.json'))['config']; print(','.join(map(str, prompt_ids($PREFILL, c['vocab_size']))))" 2>/dev/null)
JSON=$OUTDIR/streamrt$KV_SUFFIX.jsonl
rm -f "$JSON"
for point in ${FREE//,/ }; do
  HOG=
  if [ "$point" != empty ] && [ "$DEVICE" = cuda ]; then
    coproc HOGP { exec "$PY" "$HERE/hog.py" --leave "$point"; }
    read -r line <&"${HOGP[0]}"; HOG=$HOGP_PID
    log "free $point: hog says $line"
  fi
  for args in "--prompt $PROMPT --repeat 3 --new-tokens $((STEPS + 2))" "--past $PAST --new-tokens $((STEPS + 1))"; do
    # shellcheck disable=SC2086
    timeout 120 "$BIN/streamrt_greedy_decode" "$PLAN" $args --budget auto --device "$DEVICE" "${GRAPH[@]}" --json "$JSON" \
      --label "$point$KV_SUFFIX" >> "$OUTDIR/streamrt$KV_SUFFIX.log" 2>&1 || log "free $point: streamrt_greedy_decode exit $? (${args:0:12}...)"
  done
  tail -5 "$OUTDIR/streamrt$KV_SUFFIX.log" | grep -v "^tokens" >&2
  [ -n "$HOG" ] && { kill "$HOG"; wait "$HOG" 2>/dev/null; }
done
log "streamrt: done"

#!/usr/bin/env bash
# One streamrt build, two sets of `streamrt run` flags, run alternately on issue 16's exports: what a run-time
# switch (--no-programmatic-launch, --no-few-row-kernel, --attention-kernel ...) gains or costs at each point, both
# variants on the same machine within the same minutes.
#   bench/hf/ab.sh OUTDIR "FLAGS_A" "FLAGS_B" [KEY...]
#   e.g. bench/hf/ab.sh $OUT/ab "" "--no-programmatic-launch" llama_b1_prefill1 llama_b8_prefill1
# KEY: MODEL_bBATCH_KINDN as run.sh names its points (llama_b8_prefill1, qwen_b1_decode2048); default: Llama's
# one-token and decode @2048 points at batches 1 and 8. Each point is built into a plan once, then run
# --iterations AB_ITERS times with A's flags, then B's, AB_ROUNDS times over (--cuda-graph on CUDA).
# AB_LIB_A / AB_LIB_B = new | alt: with a bundle made by `scripts/gpu-bundle --keep-alt`, run that variant on this
# build's library (new, the default) or the earlier one's (.gpu/alt): two builds A/B'd with the same flags. The plans
# are built once, with this build's library.
# AB_PLANS: a folder whose plans (KEY.plan) are reused and where missing ones are kept (default OUTDIR/work: each
# call builds its own), so several A/Bs of one build share their builds.
# AB_BUILD=each: a builder change instead: A's plans are built with A's library and B's with B's (AB_PLANS/A, /B),
# the build logs' times and tactics lines printed too. AB_SRT_A / AB_SRT_B: the CLI that builds them (default: this
# build's; an alt library needs its own CLI where the BuildReport layout changed).
# Environment: AB_ROUNDS (2), AB_ITERS (200), BENCH_CACHE (/tmp/bench-hf: run.sh's exports are reused; missing
# ones are made), BENCH_DEVICE (cuda), BENCH_TINY=1 (the tiny configs), STREAMRT_BIN_DIR, PYTHON.
# Writes OUTDIR/ab.md (median ms of every run, B / A of their means) and prints it; exits 1 when a run failed.
set -u
OUTDIR=${1:?usage: bench/hf/ab.sh OUTDIR FLAGS_A FLAGS_B [KEY...]}
FLAGS_A=${2?usage: bench/hf/ab.sh OUTDIR FLAGS_A FLAGS_B [KEY...]}
FLAGS_B=${3?usage: bench/hf/ab.sh OUTDIR FLAGS_A FLAGS_B [KEY...]}
shift 3
KEYS=("$@")
[ ${#KEYS[@]} -gt 0 ] || KEYS=(llama_b1_prefill1 llama_b8_prefill1 llama_b1_decode2048 llama_b8_decode2048)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${PYTHON:-python3}
CACHE=${BENCH_CACHE:-/tmp/bench-hf}
DEVICE=${BENCH_DEVICE:-cuda}
ROUNDS=${AB_ROUNDS:-2}
ITERS=${AB_ITERS:-200}
TINY=(); SUFFIX=""; [ "${BENCH_TINY:-0}" = 1 ] && TINY=(--tiny) && SUFFIX=-tiny
mkdir -p "$OUTDIR" && OUTDIR=$(cd "$OUTDIR" && pwd) || exit 1
WORK=$OUTDIR/work; mkdir -p "$WORK"
PLANS=${AB_PLANS:-$WORK}; mkdir -p "$PLANS"
# streamrt: STREAMRT_BIN_DIR, else the carried GPU bundle (scripts/gpu-bundle), else build/bin.
if [ -n "${STREAMRT_BIN_DIR:-}" ]; then BIN=$STREAMRT_BIN_DIR
elif [ -x "$ROOT/.gpu/bin/streamrt" ]; then pushd "$ROOT" > /dev/null && source scripts/gpu-env && popd > /dev/null
else BIN=$ROOT/build/bin; fi
SRT=$BIN/streamrt
[ -x "$SRT" ] || { echo "error: no streamrt at $SRT (STREAMRT_BIN_DIR)" >&2; exit 2; }
GRAPH=(); [ "$DEVICE" = cuda ] && GRAPH=(--cuda-graph)
LIB_A=${AB_LIB_A:-new} LIB_B=${AB_LIB_B:-new}
for lib in "$LIB_A" "$LIB_B"; do
  case "$lib" in
    new) ;;
    alt) declare -F use_lib > /dev/null && [ -f "$ROOT/.gpu/alt/lib/libstreamrt.so.0" ] ||
           { echo "error: AB_LIB_A / AB_LIB_B = alt needs a bundle with .gpu/alt (scripts/gpu-bundle --keep-alt)" >&2; exit 2; } ;;
    *) echo "error: AB_LIB_A / AB_LIB_B: new or alt, got '$lib'" >&2; exit 2 ;;
  esac
done
# Puts library new or alt on the path (gpu-env's use_lib runs relative to the checkout's root).
lib_for() { declare -F use_lib > /dev/null || return 0
  pushd "$ROOT" > /dev/null && use_lib "$1"; popd > /dev/null; }
read -r -a A <<< "$FLAGS_A"
read -r -a B <<< "$FLAGS_B"

# A key's parts: model, batch, kind, tokens.
parse() { [[ "$1" =~ ^([a-z0-9]+)_b([0-9]+)_(prefill|decode)([0-9]+)$ ]] || return 1
  m=${BASH_REMATCH[1]}; b=${BASH_REMATCH[2]}; kind=${BASH_REMATCH[3]}; n=${BASH_REMATCH[4]}; }
for key in "${KEYS[@]}"; do parse "$key" || { echo "error: '$key' is not MODEL_bBATCH_KINDN (llama_b8_prefill1)" >&2; exit 2; }; done

# Exports and inputs that are missing, each model's in one go.
# (parse sets m for each key: the model of this pass is `model`.)
for model in $(for key in "${KEYS[@]}"; do parse "$key"; echo "$m"; done | sort -u); do
  batches=(); points=()
  for key in "${KEYS[@]}"; do parse "$key"; [ "$m" = "$model" ] || continue; batches+=("$b"); points+=("$kind:$n"); done
  for kind in prefill decode; do
    dir=$CACHE/export/$model$SUFFIX
    printf '%s\n' "${points[@]}" | grep -q "^$kind:" || continue
    [ -s "$dir/$kind/model.onnx" ] && continue
    "$PY" "$HERE/export.py" "$model" "$dir" --kinds "$kind" --device "$DEVICE" "${TINY[@]}" > "$WORK/export_${model}_$kind.log" 2>&1 ||
      { echo "error: export of $model $kind failed (see $WORK/export_${model}_$kind.log)" >&2; exit 1; }
  done
  "$PY" "$HERE/inputs.py" "$model" "$WORK/inputs/$model" --batches "$(printf '%s\n' "${batches[@]}" | sort -un | paste -sd,)" \
    --points "$(printf '%s\n' "${points[@]}" | sort -u | paste -sd,)" "${TINY[@]}" > "$WORK/inputs_$model.log" 2>&1 ||
    { echo "error: inputs of $model failed (see $WORK/inputs_$model.log)" >&2; exit 1; }
done

median() { grep -oE 'median [0-9.]+ ms' "$1" | head -1 | grep -oE '[0-9.]+' || echo failed; }
rc=0
lines=("| point | A ms (each round) | B ms (each round) | B / A |" "|---|---|---|---|")
builds=("| point | plan | build | tactics |" "|---|---|---|---|")
for key in "${KEYS[@]}"; do
  parse "$key"
  in=$WORK/inputs/$m/$key
  [ -s "$in/streamrt.args" ] || { lines+=("| $key | failed: no inputs ($in/streamrt.args) | | |"); rc=1; continue; }
  mapfile -t args < "$in/streamrt.args"
  # build_plan VARIANT LIB CLI PLAN: PLAN unless it exists; false (and a table line) when the build fails
  build_plan() {
    [ -s "$4" ] && return 0
    mkdir -p "$(dirname "$4")"; lib_for "$2"
    local log=$WORK/build_${key}$1.log
    if ! "$3" build "$CACHE/export/$m$SUFFIX/$kind/model.onnx" -o "$4" --device "$DEVICE" "${args[0]}" "${args[1]}" > "$log" 2>&1; then
      lines+=("| $key | failed: build$1 ($(tail -1 "$log" | cut -c1-120)) | | |"); rc=1; return 1
    fi
    builds+=("| $key | $1 | $(grep -oE 'in [0-9.]+ ms' "$log" | head -1) | $(grep -E '^ *tactics:' "$log" | sed 's/^ *//') |")
  }
  if [ "${AB_BUILD:-once}" = each ]; then
    plan_A=$PLANS/A/$key.plan plan_B=$PLANS/B/$key.plan
    build_plan A "$LIB_A" "${AB_SRT_A:-$SRT}" "$plan_A" && build_plan B "$LIB_B" "${AB_SRT_B:-$SRT}" "$plan_B" || continue
  else
    plan_A=$PLANS/$key.plan plan_B=$PLANS/$key.plan
    build_plan "" new "$SRT" "$plan_A" || continue
  fi
  ta=(); tb=()
  for ((r = 1; r <= ROUNDS; ++r)); do
    for v in A B; do
      declare -n flags=$v
      if [ $v = A ]; then lib_for "$LIB_A"; plan=$plan_A; else lib_for "$LIB_B"; plan=$plan_B; fi
      "$SRT" run "$plan" "${args[@]:2}" --device "$DEVICE" --iterations "$ITERS" --warmup 10 "${GRAPH[@]}" "${flags[@]}" \
        > "$WORK/run_${key}_$v$r.log" 2>&1 || rc=1
      t=$(median "$WORK/run_${key}_$v$r.log")
      [ "$t" = failed ] && rc=1
      if [ $v = A ]; then ta+=("$t"); else tb+=("$t"); fi
      unset -n flags
    done
  done
  ratio=$("$PY" -c "import sys; a, b = (sys.argv[1].split(), sys.argv[2].split())
try: print(f'{sum(map(float, b)) / len(b) / (sum(map(float, a)) / len(a)):.3f}')
except ValueError: print('-')" "${ta[*]}" "${tb[*]}")
  lines+=("| $key | ${ta[*]} | ${tb[*]} | $ratio |")
done
{
  echo "# bench/hf/ab.sh: A = \`${FLAGS_A:-(no flags)}\` ($LIB_A library), B = \`${FLAGS_B:-(no flags)}\` ($LIB_B library)"
  echo
  echo "- $(date -u +%Y-%m-%dT%H:%M:%SZ), $("$SRT" --version 2>/dev/null | head -1), device $DEVICE, $ITERS iterations a run, $ROUNDS rounds (A then B)"
  echo
  printf '%s\n' "${lines[@]}"
  [ ${#builds[@]} -gt 2 ] && { echo; printf '%s\n' "${builds[@]}"; }
} | tee "$OUTDIR/ab.md"
exit $rc

#!/usr/bin/env bash
# Where the time goes, streamrt next to PyTorch eager, for bench points (run on the GPU machine):
#   bench/profile_gpu.sh OUTDIR [model:batch:precision[:build flags] ...]
# e.g. bench/profile_gpu.sh /tmp/prof resnet50:32:fp16 resnet50:32:fp32:--tf32 gpt2:1:fp16
# Per point: export (as bench/run_gpu.sh, cached under $BENCH_CACHE), build, one --profile-ops
# run (per-op GPU time) and PyTorch's profiler table (bench/torch_profile.py) into OUTDIR/<point>.txt.
# PROFILE_NO_TORCH=1 leaves PyTorch out.
set -u
OUT=${1:?usage: bench/profile_gpu.sh OUTDIR [points...]}; shift
POINTS=${*:-"resnet50:32:fp16 resnet50:32:fp32:--tf32 gpt2:1:fp16"}
BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$BENCH_DIR")
CACHE=${BENCH_CACHE:-/tmp/bench}
PY=${PYTHON:-python3}
STREAMRT=${STREAMRT:-$ROOT/.gpu/bin/streamrt}
mkdir -p "$OUT" "$CACHE/plans"
for p in $POINTS; do
  IFS=: read -r model batch prec flags <<< "$p"
  seq=""; [ "$model" != resnet50 ] && seq=512
  key=${model}_b${batch}${seq:+_s$seq}
  [ -s "$CACHE/$key/model.onnx" ] || "$PY" "$BENCH_DIR/export.py" "$model" "$CACHE/$key" --batch "$batch" \
    ${seq:+--seq "$seq"} --device cuda > "$OUT/export_$key.log" 2>&1 || { echo "export $key failed"; continue; }
  pflag=(); case $prec in fp16) pflag=(--fp16) ;; bf16) pflag=(--bf16) ;; esac
  name=${model}_b${batch}_${prec}${flags//[^a-z0-9]/_}
  plan=$CACHE/plans/$name.plan
  {
    echo "== $p"
    "$STREAMRT" build "$CACHE/$key/model.onnx" -o "$plan" --device cuda "${pflag[@]}" $flags 2>&1 | tail -3
    "$STREAMRT" run "$plan" --device cuda --iterations 20 --warmup 5 2>&1 | tail -3
    "$STREAMRT" run "$plan" --device cuda --profile-ops --iterations 10 --warmup 0 2>&1 | tail -60
    [ "${PROFILE_NO_TORCH:-0}" = 1 ] || "$PY" "$BENCH_DIR/torch_profile.py" --model "$model" --batch "$batch" ${seq:+--seq "$seq"} --precision "$prec" 2>&1
  } > "$OUT/$name.txt"
  rm -f "$plan"
  echo "profiled $p -> $OUT/$name.txt"
done

#!/usr/bin/env bash
# The main job: build an engine from a model shipped in the repo, run it, show outputs and latency.
set -euo pipefail
BUILD=${1:-build}
CLI="$BUILD/bin/streamrt"
MODELS=tests/fixtures/models
mkdir -p "$BUILD/demo"

echo "== build: torchvision squeezenet1_1 (ONNX) -> engine plan"
"$CLI" build "$MODELS/squeezenet1_1/model.onnx" -o "$BUILD/demo/squeezenet.plan"
echo
echo "== run it on the reference input (outputs written as .npy)"
"$CLI" run "$BUILD/demo/squeezenet.plan" --input "input=$MODELS/squeezenet1_1/test_data_set_0/input_0.pb" \
  --output-dir "$BUILD/demo/out" --iterations 10 --warmup 2
echo
echo "== build and run a GPT-style decoder with dynamic batch and sequence length"
"$CLI" build "$MODELS/tiny_gpt/model.onnx" -o "$BUILD/demo/tiny_gpt.plan" --profile input_ids:1x1:1x16:4x64
"$CLI" run "$BUILD/demo/tiny_gpt.plan" --iterations 10
echo
echo "== check both against the reference outputs (ONNX backend-test layout)"
"$CLI" onnx-test "$MODELS"
echo
echo "== models as people export them: transformers architectures through torch.onnx (tests/corpus/transformers)"
"$CLI" onnx-test tests/corpus/transformers -q --no-skip --rtol 1e-3 --atol 1e-4

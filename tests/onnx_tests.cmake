# The ONNX backend-test runner over Debian's libonnx-testdata node tests and over the
# real-model fixtures committed in tests/fixtures/models. A failing case fails the test; a node
# test that skips must use an op streamrt lacks or be listed with its reason in
# tests/onnx_node_skips.txt (the closing line says how many skipped).
set(STREAMRT_ONNX_NODE_DIR /usr/share/libonnx-testdata/data/node)
if(EXISTS ${STREAMRT_ONNX_NODE_DIR})
  add_test(NAME onnx_node_tests
           COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_ONNX_NODE_DIR} -q -j 2
                   --expected-skips ${CMAKE_SOURCE_DIR}/tests/onnx_node_skips.txt
                   --json ${CMAKE_BINARY_DIR}/onnx_node_results.json)
  set_tests_properties(onnx_node_tests PROPERTIES TIMEOUT 1200 LABELS onnx)
else()
  message(WARNING "libonnx-testdata is not installed: the ONNX node tests will not run")
endif()
add_test(NAME onnx_model_fixtures
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${CMAKE_SOURCE_DIR}/tests/fixtures/models -j 2
                 --rtol 1e-3 --atol 1e-4)
set_tests_properties(onnx_model_fixtures PROPERTIES TIMEOUT 1200 LABELS onnx)
# The same built in half precision (tolerances of scripts/gpu-check's models check).
add_test(NAME onnx_model_fixtures_as_fp16
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${CMAKE_SOURCE_DIR}/tests/fixtures/models -j 2 --fp16
                 --rtol 5e-2 --atol 5e-2)
add_test(NAME onnx_model_fixtures_as_bf16
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${CMAKE_SOURCE_DIR}/tests/fixtures/models -j 2 --bf16
                 --rtol 5e-2 --atol 5e-2)
set_tests_properties(onnx_model_fixtures_as_fp16 onnx_model_fixtures_as_bf16 PROPERTIES TIMEOUT 1200 LABELS onnx)
# The attention cases of scripts/make_attention_cases.py (tests/fixtures/attention/README.md): the
# builder fuses each MatMul-Softmax-MatMul chain into one Attention node. float16 cases and the
# --fp16 / --bf16 builds use DESIGN.md's tolerances for those types.
set(STREAMRT_ATTENTION_DIR ${CMAKE_SOURCE_DIR}/tests/fixtures/attention)
add_test(NAME onnx_attention_fp32
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_ATTENTION_DIR}/fp32 -j 2 --rtol 1e-4 --atol 1e-5)
add_test(NAME onnx_attention_fp16
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_ATTENTION_DIR}/fp16 -j 2 --rtol 1e-3 --atol 2.5e-3)
add_test(NAME onnx_attention_as_fp16
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_ATTENTION_DIR} -j 2 --fp16 --rtol 1e-3 --atol 2.5e-3)
add_test(NAME onnx_attention_as_bf16
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_ATTENTION_DIR} -j 2 --bf16 --rtol 1e-2 --atol 2e-2)
set_tests_properties(onnx_attention_fp32 onnx_attention_fp16 onnx_attention_as_fp16 onnx_attention_as_bf16
                     PROPERTIES TIMEOUT 600 LABELS onnx)
# The CUDA kernel against the CPU one; without a GPU every case reports "skip ... no CUDA device".
add_test(NAME onnx_attention_cuda
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_ATTENTION_DIR} -j 2 --device cuda --against-cpu
                 --rtol 1e-3 --atol 2.5e-3)
add_test(NAME onnx_attention_cuda_bf16
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_ATTENTION_DIR}/fp32 -j 2 --device cuda --against-cpu
                 --bf16 --rtol 1e-2 --atol 2e-2)
set_tests_properties(onnx_attention_cuda onnx_attention_cuda_bf16 PROPERTIES TIMEOUT 600 LABELS "onnx;gpu")
# The transformers corpus (tests/corpus/transformers/README.md) and the opset-23 function ops
# (scripts/make_function_op_cases.py): real exports, so every case must run (--no-skip).
set(STREAMRT_CORPUS_DIR ${CMAKE_SOURCE_DIR}/tests/corpus/transformers)
set(STREAMRT_FUNCTION_OPS_DIR ${CMAKE_SOURCE_DIR}/tests/fixtures/function_ops)
add_test(NAME onnx_transformers_corpus
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_CORPUS_DIR} -j 2 --no-skip --rtol 1e-3 --atol 1e-4)
add_test(NAME onnx_function_ops
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_FUNCTION_OPS_DIR} -j 2 --no-skip --rtol 1e-4 --atol 1e-5)
# PyTorch's nn.LSTM / GRU / RNN through the TorchScript exporter (scripts/make_recurrent_cases.py).
set(STREAMRT_RECURRENT_DIR ${CMAKE_SOURCE_DIR}/tests/fixtures/recurrent)
add_test(NAME onnx_recurrent
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_RECURRENT_DIR} -j 2 --no-skip --rtol 1e-4 --atol 1e-5)
# The corpus in reduced precision on the CPU too (the CUDA runs below need a GPU): the precision pass
# must leave no float32 value beside a converted one (DeepSeek-V3's ConstantOfShape without `value`).
add_test(NAME onnx_transformers_corpus_fp16
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_CORPUS_DIR} -j 2 --no-skip --fp16 --rtol 2e-2 --atol 2e-2)
add_test(NAME onnx_transformers_corpus_bf16
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_CORPUS_DIR} -j 2 --no-skip --bf16 --rtol 5e-2 --atol 5e-2)
set_tests_properties(onnx_transformers_corpus onnx_transformers_corpus_fp16 onnx_transformers_corpus_bf16
                     onnx_function_ops onnx_recurrent PROPERTIES TIMEOUT 1200 LABELS onnx)
# Pre-quantized weights (scripts/make_quant_import_cases.py): DequantizeLinear / MatMulNBits read as
# compressed WeightOnlyMatMul steps, against onnxruntime's outputs; float16 cases at float16's rounding.
set(STREAMRT_QUANT_IMPORT_DIR ${CMAKE_SOURCE_DIR}/tests/fixtures/quant_import)
add_test(NAME onnx_quant_import
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_QUANT_IMPORT_DIR}/fp32 ${STREAMRT_QUANT_IMPORT_DIR}/models
                 -j 2 --no-skip --rtol 1e-4 --atol 1e-5)
add_test(NAME onnx_quant_import_fp16
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_QUANT_IMPORT_DIR}/fp16 -j 2 --no-skip
                 --rtol 1e-3 --atol 1e-4)
set_tests_properties(onnx_quant_import onnx_quant_import_fp16 PROPERTIES TIMEOUT 600 LABELS onnx)
add_test(NAME onnx_quant_import_cuda
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_QUANT_IMPORT_DIR} -j 2 --device cuda --against-cpu
                 --rtol 1e-3 --atol 2.5e-3)
set_tests_properties(onnx_quant_import_cuda PROPERTIES TIMEOUT 600 LABELS "onnx;gpu")
add_test(NAME onnx_transformers_corpus_cuda
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_CORPUS_DIR} ${STREAMRT_FUNCTION_OPS_DIR} ${STREAMRT_RECURRENT_DIR} -j 2
                 --device cuda --no-skip --rtol 1e-3 --atol 1e-4)
add_test(NAME onnx_transformers_corpus_cuda_fp16
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_CORPUS_DIR} ${STREAMRT_FUNCTION_OPS_DIR} ${STREAMRT_RECURRENT_DIR} -j 2
                 --device cuda --fp16 --no-skip --rtol 2e-2 --atol 2e-2)
add_test(NAME onnx_transformers_corpus_cuda_bf16
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_CORPUS_DIR} ${STREAMRT_FUNCTION_OPS_DIR} ${STREAMRT_RECURRENT_DIR} -j 2
                 --device cuda --bf16 --no-skip --rtol 5e-2 --atol 5e-2)
set_tests_properties(onnx_transformers_corpus_cuda onnx_transformers_corpus_cuda_fp16
                     onnx_transformers_corpus_cuda_bf16 PROPERTIES TIMEOUT 1200 LABELS "onnx;gpu")
# The CUDA backend on the node tests (label gpu: without a GPU every case skips as "no CUDA device").
if(EXISTS ${STREAMRT_ONNX_NODE_DIR})
  add_test(NAME onnx_node_tests_cuda
           COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_ONNX_NODE_DIR} -q -j 2 --device cuda
                   --expected-skips ${CMAKE_SOURCE_DIR}/tests/onnx_node_skips.txt)
  set_tests_properties(onnx_node_tests_cuda PROPERTIES TIMEOUT 1200 LABELS "onnx;gpu")
endif()
# docs/ops.md is generated (`make docs`): it must match what this build registers. Its CUDA column
# needs a CUDA build.
if(STREAMRT_CUDA_ENABLED)
  add_test(NAME docs_ops_md_current
           COMMAND ${CMAKE_COMMAND} -DCLI=$<TARGET_FILE:streamrt_cli> -DSRC=${CMAKE_SOURCE_DIR}
                   -P ${CMAKE_SOURCE_DIR}/scripts/check_ops_doc.cmake)
  set_tests_properties(docs_ops_md_current PROPERTIES LABELS cli)
endif()

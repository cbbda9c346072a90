# The ONNX backend-test runner over Debian's libonnx-testdata node tests and over the
# real-model fixtures committed in tests/fixtures/models. A failing case fails the test;
# unsupported ops count as skipped (the closing line says how many).
set(STREAMRT_ONNX_NODE_DIR /usr/share/libonnx-testdata/data/node)
if(EXISTS ${STREAMRT_ONNX_NODE_DIR})
  add_test(NAME onnx_node_tests
           COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${STREAMRT_ONNX_NODE_DIR} -q -j 2
                   --json ${CMAKE_BINARY_DIR}/onnx_node_results.json)
  set_tests_properties(onnx_node_tests PROPERTIES TIMEOUT 1200 LABELS onnx)
else()
  message(WARNING "libonnx-testdata is not installed: the ONNX node tests will not run")
endif()
add_test(NAME onnx_model_fixtures
         COMMAND $<TARGET_FILE:streamrt_cli> onnx-test ${CMAKE_SOURCE_DIR}/tests/fixtures/models -j 2
                 --rtol 1e-3 --atol 1e-4)
set_tests_properties(onnx_model_fixtures PROPERTIES TIMEOUT 1200 LABELS onnx)

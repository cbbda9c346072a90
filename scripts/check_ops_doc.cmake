# ctest docs_ops_md_current: docs/ops.md equals `streamrt ops --markdown --expected-skips
# tests/onnx_node_skips.txt` of this build. Regenerate with `make docs`.
execute_process(COMMAND ${CLI} ops --markdown --expected-skips tests/onnx_node_skips.txt
                WORKING_DIRECTORY ${SRC} OUTPUT_VARIABLE generated RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "streamrt ops --markdown failed (${rc})")
endif()
file(READ ${SRC}/docs/ops.md committed)
if(NOT generated STREQUAL committed)
  message(FATAL_ERROR "docs/ops.md is out of date: run `make docs` (streamrt ops --markdown --expected-skips tests/onnx_node_skips.txt > docs/ops.md)")
endif()

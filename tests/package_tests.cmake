# The C++ package (issue 17): install this build into a fresh prefix, build a consumer project
# (tests/package/consumer) against it with find_package(streamrt), run it on a shipped model; the
# library has its soname, the installed headers include only public headers, the CLI runs. Not in
# sanitizer builds (a consumer without the sanitizer runtime cannot load that library).
if(STREAMRT_SANITIZE)
  return()
endif()
set(_pkg ${CMAKE_BINARY_DIR}/package-test)
add_test(NAME package_install_and_consume
  COMMAND ${CMAKE_COMMAND} -E env CMAKE_BUILD_PARALLEL_LEVEL=2
          sh -c "rm -rf '${_pkg}' && \
                 '${CMAKE_COMMAND}' --install '${CMAKE_BINARY_DIR}' --prefix '${_pkg}/prefix' > /dev/null && \
                 '${CMAKE_COMMAND}' -S '${CMAKE_CURRENT_SOURCE_DIR}/package/consumer' -B '${_pkg}/build' \
                   -DCMAKE_PREFIX_PATH='${_pkg}/prefix' -DCMAKE_BUILD_TYPE=Release > /dev/null && \
                 '${CMAKE_COMMAND}' --build '${_pkg}/build' > /dev/null && \
                 '${_pkg}/build/consumer' '${CMAKE_SOURCE_DIR}/tests/fixtures/models/mlp/model.onnx' input 2x784 logits \
                   | grep -q 'output logits dims 2 first' && \
                 test -L '${_pkg}/prefix/${CMAKE_INSTALL_LIBDIR}/libstreamrt.so' && \
                 test -e '${_pkg}/prefix/${CMAKE_INSTALL_LIBDIR}/libstreamrt.so.${PROJECT_VERSION_MAJOR}' && \
                 ! grep -rlE '#include \"(core|ir|ops|plan|runtime|builder|backends)/' '${_pkg}/prefix/include/streamrt' && \
                 '${_pkg}/prefix/bin/streamrt' ops > /dev/null")
set_tests_properties(package_install_and_consume PROPERTIES TIMEOUT 600 LABELS cli)

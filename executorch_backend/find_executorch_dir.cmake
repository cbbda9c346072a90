# streamrt_find_executorch_dir(PYTHON OUT): the installed executorch wheel's share/cmake folder
# (holding executorch-config.cmake) as `PYTHON` imports it (no torch needed), or "" when there is none.
function(streamrt_find_executorch_dir python out)
  execute_process(
    COMMAND ${python} -c "import executorch, os; print([os.path.join(p, 'share', 'cmake') for p in executorch.__path__ if os.path.isfile(os.path.join(p, 'share', 'cmake', 'executorch-config.cmake'))][0])"
    WORKING_DIRECTORY "${CMAKE_BINARY_DIR}" OUTPUT_VARIABLE dir OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc
    ERROR_QUIET)
  if(NOT rc EQUAL 0)
    set(dir "")
  endif()
  set(${out} "${dir}" PARENT_SCOPE)
endfunction()

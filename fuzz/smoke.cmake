# Runs one libFuzzer binary for a few seconds over a copy of its seed corpus (the seeds in git
# stay as they are; new inputs go to the copy). libFuzzer exits non-zero on a crash, a leak, an
# input that runs past -timeout, or one that needs more than -rss_limit_mb, and so does this.
#   cmake -DFUZZER=<binary> -DCORPUS=<seed dir> -DWORK=<scratch dir> -DSECONDS=5 -P smoke.cmake
foreach(var FUZZER CORPUS WORK SECONDS)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "smoke.cmake: -D${var}=... is missing")
  endif()
endforeach()
get_filename_component(name ${FUZZER} NAME)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/corpus ${WORK}/artifacts)
if(EXISTS ${CORPUS})
  file(COPY ${CORPUS}/ DESTINATION ${WORK}/corpus)
endif()
message(STATUS "fuzz-smoke: ${name} for ${SECONDS} s over a copy of ${CORPUS}")
# The process limit is a guard against libFuzzer itself hanging: it stops on its own after
# -max_total_time plus the last input (at most -timeout).
math(EXPR guard "${SECONDS} * 4 + 120")
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -rss_limit_mb=2048 -timeout=10
          -print_final_stats=1 -artifact_prefix=${WORK}/artifacts/ ${WORK}/corpus
  RESULT_VARIABLE rc TIMEOUT ${guard})
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "fuzz-smoke: ${name} failed (${rc}); the input that did it is in ${WORK}/artifacts/")
endif()

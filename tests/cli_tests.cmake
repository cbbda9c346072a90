# CLI tests: `streamrt` given bad input must exit non-zero (not crash) with a clear message,
# and build -> inspect -> run must work end to end on the mlp fixture.
#
# This file has two roles. Included by tests/CMakeLists.txt, it registers the ctest tests.
# Run as a script (cmake -DEXPECT=fail|pass -DREGEX=... [-DFILE=path] -P cli_tests.cmake -- CMD...),
# it runs CMD and checks: the exit status (non-zero for fail, zero for pass; a signal is always a
# failure), that stdout+stderr match REGEX, and that FILE exists afterwards.

if(CMAKE_SCRIPT_MODE_FILE)
  set(cmd)
  set(after_dashes OFF)
  math(EXPR last "${CMAKE_ARGC} - 1")
  foreach(i RANGE 0 ${last})
    if(after_dashes)
      list(APPEND cmd "${CMAKE_ARGV${i}}")
    elseif(CMAKE_ARGV${i} STREQUAL "--")
      set(after_dashes ON)
    endif()
  endforeach()
  if(NOT cmd)
    message(FATAL_ERROR "cli_tests.cmake: no command given after --")
  endif()
  if(FILE)
    file(REMOVE "${FILE}")
  endif()
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(JOIN " " shown ${cmd})
  message("$ ${shown}\n${out}${err}exit: ${rc}")
  if(NOT rc MATCHES "^[0-9]+$")
    message(FATAL_ERROR "the command did not exit normally (${rc})")
  endif()
  if(EXPECT STREQUAL "fail" AND rc EQUAL 0)
    message(FATAL_ERROR "expected a non-zero exit status")
  elseif(EXPECT STREQUAL "pass" AND NOT rc EQUAL 0)
    message(FATAL_ERROR "expected exit status 0")
  endif()
  if(DEFINED REGEX AND NOT "${out}${err}" MATCHES "${REGEX}")
    message(FATAL_ERROR "the output does not match '${REGEX}'")
  endif()
  if(FILE AND NOT EXISTS "${FILE}")
    message(FATAL_ERROR "'${FILE}' was not written")
  endif()
  return()
endif()

set(STREAMRT_CLI_TMP ${CMAKE_BINARY_DIR}/cli_tests)
file(MAKE_DIRECTORY ${STREAMRT_CLI_TMP}/empty_dir)
set(STREAMRT_CLI_MLP ${CMAKE_SOURCE_DIR}/tests/fixtures/models/mlp)
set(STREAMRT_CLI_FIXTURES ${CMAKE_SOURCE_DIR}/tests/fixtures/models)
set(STREAMRT_CLI_CORPUS ${CMAKE_SOURCE_DIR}/fuzz/corpus)
set(STREAMRT_CLI_PROFILE --profile input:1x784:4x784:8x784)  # mlp's input is f32[batch,784]

# streamrt_cli_test(NAME <fail|pass> REGEX [FILE path] [FIXTURES_SETUP x] [FIXTURES_REQUIRED x] [BIN target] ARGS ...)
# BIN: another program than the CLI (an example).
function(streamrt_cli_test name expect regex)
  cmake_parse_arguments(T "" "FILE;FIXTURES_SETUP;FIXTURES_REQUIRED;BIN" "ARGS" ${ARGN})
  if(NOT T_BIN)
    set(T_BIN streamrt_cli)
  endif()
  set(defs -DEXPECT=${expect} -DREGEX=${regex})
  if(T_FILE)
    list(APPEND defs -DFILE=${T_FILE})
  endif()
  add_test(NAME cli_${name}
           COMMAND ${CMAKE_COMMAND} ${defs} -P ${CMAKE_CURRENT_LIST_FILE} -- $<TARGET_FILE:${T_BIN}> ${T_ARGS})
  set_tests_properties(cli_${name} PROPERTIES LABELS cli TIMEOUT 120)
  if(T_FIXTURES_SETUP)
    set_tests_properties(cli_${name} PROPERTIES FIXTURES_SETUP ${T_FIXTURES_SETUP})
  endif()
  if(T_FIXTURES_REQUIRED)
    set_tests_properties(cli_${name} PROPERTIES FIXTURES_REQUIRED ${T_FIXTURES_REQUIRED})
  endif()
endfunction()

# --- bad input: non-zero exit, a message that says what and where ------------------------
streamrt_cli_test(build_missing_model fail "IoError: cannot open ONNX model '.*no_such_model\\.onnx'"
  ARGS build ${STREAMRT_CLI_TMP}/no_such_model.onnx -o ${STREAMRT_CLI_TMP}/never.plan)
streamrt_cli_test(build_garbage_onnx fail "InvalidModel: .*corrupt_garbage\\.onnx: not a valid ONNX model"
  ARGS build ${STREAMRT_CLI_CORPUS}/onnx/corrupt_garbage.onnx -o ${STREAMRT_CLI_TMP}/never.plan)
streamrt_cli_test(build_onnx_with_cycle fail "InvalidModel: .*cycle through node"
  ARGS build ${STREAMRT_CLI_CORPUS}/onnx/corrupt_cycle.onnx -o ${STREAMRT_CLI_TMP}/never.plan)
streamrt_cli_test(build_unsupported_ops fail "Unsupported: .*NoSuchOp \\(node 'add'\\).*AlsoMissing \\(node 'relu'\\)"
  ARGS build ${STREAMRT_CLI_CORPUS}/onnx/unsupported_ops.onnx -o ${STREAMRT_CLI_TMP}/never.plan)
streamrt_cli_test(run_garbage_plan fail "InvalidPlan: .*corrupt_bad_magic\\.plan.*bad magic"
  ARGS run ${STREAMRT_CLI_CORPUS}/plan/corrupt_bad_magic.plan)
streamrt_cli_test(run_truncated_plan fail "InvalidPlan: .*corrupt_truncated_weights\\.plan"
  ARGS run ${STREAMRT_CLI_CORPUS}/plan/corrupt_truncated_weights.plan)
streamrt_cli_test(inspect_garbage_plan fail "InvalidPlan: .*corrupt_garbage_metadata\\.plan"
  ARGS inspect ${STREAMRT_CLI_CORPUS}/plan/corrupt_garbage_metadata.plan)
streamrt_cli_test(inspect_missing_plan fail "IoError: .*no_such\\.plan"
  ARGS inspect ${STREAMRT_CLI_TMP}/no_such.plan)
streamrt_cli_test(unknown_option fail "--bogus"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --bogus)
streamrt_cli_test(no_subcommand fail "subcommand is required" ARGS)
streamrt_cli_test(bad_iterations fail "--iterations" ARGS run ${STREAMRT_CLI_MLP}/model.onnx --iterations 0)
streamrt_cli_test(shapes_bad_dims fail "InvalidArgument: bad dims '1xQ' in 'input:1xQ'"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --shapes input:1xQ)
streamrt_cli_test(shapes_no_name fail "InvalidArgument: bad shape spec '1x784'"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --shapes 1x784)
streamrt_cli_test(shapes_not_an_input fail "InvalidArgument: --shapes names 'nope', which is not a model input"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --shapes nope:1x784)
streamrt_cli_test(profile_three_parts fail "InvalidArgument: bad profile 'input:1x784:4x784'"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --profile input:1x784:4x784)
streamrt_cli_test(profile_bad_dims fail "InvalidArgument: bad dims '4x-784'"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --profile input:1x784:4x-784:8x784)
streamrt_cli_test(input_outside_profile fail "input 'input': dims 5x784 are outside the optimization profile \\[1x784 \\.\\. 4x784\\]"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx --profile input:1x784:2x784:4x784
       --input input=${STREAMRT_CLI_MLP}/test_data_set_1/input_0.pb)
# run model.onnx --input: dynamic dims come from the given input (no --shapes / --profile needed).
streamrt_cli_test(run_onnx_dims_from_input pass "logits: float32 5x10"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx --input input=${STREAMRT_CLI_MLP}/test_data_set_1/input_0.pb --iterations 1)
streamrt_cli_test(run_onnx_input_not_in_model fail "InvalidArgument: --input names 'nope', which is not an input of the model"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx --input input=${STREAMRT_CLI_MLP}/test_data_set_0/input_0.pb
       --input nope=${STREAMRT_CLI_MLP}/test_data_set_0/input_0.pb)
# Every subcommand's --help ends with examples.
foreach(sub build run inspect onnx-test ops compile refit cache)
  streamrt_cli_test(help_examples_${sub} pass "Examples:\n  streamrt ${sub}" ARGS ${sub} --help)
endforeach()
streamrt_cli_test(input_wrong_rank fail "input 'input': dims 2x1x28x28 are outside the optimization profile"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE}
       --input input=${STREAMRT_CLI_FIXTURES}/lenet_bn/test_data_set_0/input_0.pb)
streamrt_cli_test(input_wrong_dtype fail "input 'input' is float32, the file holds int64"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --input input=${STREAMRT_CLI_FIXTURES}/tiny_gpt/test_data_set_0/input_0.pb)
streamrt_cli_test(input_missing_file fail "IoError: cannot open '.*no_such_input\\.npy'"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --input input=${STREAMRT_CLI_TMP}/no_such_input.npy)
streamrt_cli_test(input_bad_npy fail "InvalidArgument: .*corrupt_bad_magic\\.npy: not a \\.npy file"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --input input=${STREAMRT_CLI_CORPUS}/npy/corrupt_bad_magic.npy)
streamrt_cli_test(input_long_npy_header fail "Unsupported: .*regress_long_descr\\.npy: numpy dtype"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --input input=${STREAMRT_CLI_CORPUS}/npy/regress_long_descr.npy)
streamrt_cli_test(input_not_an_input fail "--input names 'nope', which is not an input"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --input nope=${STREAMRT_CLI_MLP}/test_data_set_0/input_0.pb)
streamrt_cli_test(input_without_name fail "bad --input 'just_a_file\\.npy'"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --input just_a_file.npy)
streamrt_cli_test(onnx_test_empty_dir fail "no test cases \\(model\\.onnx\\) under '.*empty_dir'"
  ARGS onnx-test ${STREAMRT_CLI_TMP}/empty_dir)

# --- calibrated weight quantization (GPTQ over --calibration-dir samples) -------------------
set(STREAMRT_CLI_CALIBRATION ${CMAKE_SOURCE_DIR}/tests/fixtures/calibration/mlp)  # 2 samples of input [4, 784]
streamrt_cli_test(build_calibrated_int4 pass "calibration: 2 samples; 3 steps quantized by GPTQ"
  FILE ${STREAMRT_CLI_TMP}/mlp_gptq.plan
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/mlp_gptq.plan --device cpu ${STREAMRT_CLI_PROFILE}
       --weight-quant int4:32 --calibration-dir ${STREAMRT_CLI_CALIBRATION})
streamrt_cli_test(build_calibrated_one_sample pass "calibration: 1 samples; 3 steps quantized by GPTQ"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/mlp_gptq1.plan --device cpu ${STREAMRT_CLI_PROFILE}
       --weight-quant int8 --calibration-dir ${STREAMRT_CLI_CALIBRATION}/0)
streamrt_cli_test(build_fp8_calibrated pass "weight quantization fp8: 3 MatMul / Gemm steps read compressed weights.*calibration: 2 samples; 3 steps quantized by GPTQ"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/mlp_fp8.plan --device cpu ${STREAMRT_CLI_PROFILE}
       --weight-quant fp8 --calibration-dir ${STREAMRT_CLI_CALIBRATION})
streamrt_cli_test(build_fp8_with_group fail "InvalidArgument: --weight-quant: weight quantization 'fp8:32': expected none, int8, fp8, int4"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --device cpu --weight-quant fp8:32)
streamrt_cli_test(build_calibration_without_scheme fail "InvalidArgument: --calibration-dir needs --weight-quant"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --device cpu
       --calibration-dir ${STREAMRT_CLI_CALIBRATION})
streamrt_cli_test(build_calibration_missing_dir fail "InvalidArgument: --calibration-dir: '.*no_such_dir' is not a folder"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --device cpu --weight-quant int8
       --calibration-dir ${STREAMRT_CLI_TMP}/no_such_dir)
streamrt_cli_test(build_calibration_empty_dir fail "InvalidArgument: --calibration-dir: '.*empty_dir' holds neither"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --device cpu --weight-quant int8
       --calibration-dir ${STREAMRT_CLI_TMP}/empty_dir)
streamrt_cli_test(build_calibration_outside_profile fail "calibration sample 0: input 'input': dims 4x784 are outside the optimization profile"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --device cpu --shapes input:2x784
       --weight-quant int8 --calibration-dir ${STREAMRT_CLI_CALIBRATION})

# --- end to end: build with a profile, inspect as JSON, run and write the output ------------
streamrt_cli_test(build_mlp pass "built .*mlp_profile\\.plan"
  FILE ${STREAMRT_CLI_TMP}/mlp_profile.plan FIXTURES_SETUP cli_mlp_plan
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/mlp_profile.plan
       ${STREAMRT_CLI_PROFILE})
streamrt_cli_test(inspect_mlp_json pass "\"memory_plan\".*\"arena_bytes\""
  FIXTURES_REQUIRED cli_mlp_plan ARGS inspect ${STREAMRT_CLI_TMP}/mlp_profile.plan --json)
streamrt_cli_test(inspect_mlp_text pass "input +float32 +dims \\[-1,784\\] +profile min \\[1,784\\] opt \\[4,784\\] max \\[8,784\\]"
  FIXTURES_REQUIRED cli_mlp_plan ARGS inspect ${STREAMRT_CLI_TMP}/mlp_profile.plan)
streamrt_cli_test(run_mlp_output_dir pass "logits: float32 5x10"
  FILE ${STREAMRT_CLI_TMP}/out/logits.npy FIXTURES_REQUIRED cli_mlp_plan
  ARGS run ${STREAMRT_CLI_TMP}/mlp_profile.plan --input input=${STREAMRT_CLI_MLP}/test_data_set_1/input_0.pb
       --output-dir ${STREAMRT_CLI_TMP}/out --iterations 1 --warmup 0)

# --- programs (.pte): compile with a graph break, inspect, run with backend options -----------
# The graph-break model (two engines around Softmax, tests/unit/delegate_test_util.h) is written
# by a unit test into the build tree.
set(STREAMRT_CLI_BREAK ${STREAMRT_CLI_TMP}/graph_break.onnx)
set(STREAMRT_CLI_PTE ${STREAMRT_CLI_TMP}/graph_break.pte)
add_test(NAME cli_write_graph_break_model
         COMMAND streamrt_tests --gtest_filter=DelegateFixture.WriteGraphBreakModel)
set_tests_properties(cli_write_graph_break_model PROPERTIES LABELS cli FIXTURES_SETUP cli_break_model)
streamrt_cli_test(compile_graph_break pass "engine brk_engine0: 3 nodes.*512 KiB streamable.*engine brk_engine1: 4 nodes.*768 KiB streamable.*portable kernel calls: Softmax.*baked weight_streaming_budget=1000001"
  FILE ${STREAMRT_CLI_PTE} FIXTURES_REQUIRED cli_break_model FIXTURES_SETUP cli_break_pte
  ARGS compile ${STREAMRT_CLI_BREAK} -o ${STREAMRT_CLI_PTE} --device cpu --weight-streaming --fallback-ops Softmax
       --weight-streaming-budget 1000001)
streamrt_cli_test(compile_both_budget_keys fail "InvalidArgument: .*both weight_streaming_budget .* and weight_streaming_budget_per_engine"
  FIXTURES_REQUIRED cli_break_model
  ARGS compile ${STREAMRT_CLI_BREAK} -o ${STREAMRT_CLI_TMP}/never.pte --device cpu --weight-streaming
       --weight-streaming-budget 1GiB --weight-streaming-budget-per-engine 1GiB)
streamrt_cli_test(compile_malformed_budget fail "InvalidArgument: compile: weight_streaming_budget_per_engine: invalid weight-streaming budget \"8gb\""
  FIXTURES_REQUIRED cli_break_model
  ARGS compile ${STREAMRT_CLI_BREAK} -o ${STREAMRT_CLI_TMP}/never.pte --device cpu --weight-streaming-budget-per-engine 8gb)
streamrt_cli_test(compile_unknown_fallback_op fail "InvalidArgument: --fallback-ops names 'Softmx', which is not an op"
  FIXTURES_REQUIRED cli_break_model
  ARGS compile ${STREAMRT_CLI_BREAK} -o ${STREAMRT_CLI_TMP}/never.pte --device cpu --fallback-ops Relu,Softmx)
streamrt_cli_test(compile_missing_model fail "IoError: cannot open ONNX model '.*no_such_model\\.onnx'"
  ARGS compile ${STREAMRT_CLI_TMP}/no_such_model.onnx -o ${STREAMRT_CLI_TMP}/never.pte --device cpu)
streamrt_cli_test(inspect_pte_text pass "engine 'brk_engine0' for cpu: inputs \\[x\\], outputs \\[h3\\], streamable 512 KiB.*compile spec weight_streaming_budget = 1000001.*engine 'brk_engine1'"
  FIXTURES_REQUIRED cli_break_pte ARGS inspect ${STREAMRT_CLI_PTE})
streamrt_cli_test(inspect_pte_json pass "\"streamable_bytes\": 786432.*\"kernel\": \"Softmax\""
  FIXTURES_REQUIRED cli_break_pte ARGS inspect ${STREAMRT_CLI_PTE} --json)
streamrt_cli_test(run_pte_baked_budget pass "engine 0: weight-streaming budget 390.63 KiB of 512 KiB streamable.*engine 1: weight-streaming budget 585.94 KiB of 768 KiB.*y: float32 1x256"
  FILE ${STREAMRT_CLI_TMP}/pte_out/y.npy FIXTURES_REQUIRED cli_break_pte
  ARGS run ${STREAMRT_CLI_PTE} --iterations 1 --warmup 0 --output-dir ${STREAMRT_CLI_TMP}/pte_out)
streamrt_cli_test(run_pte_load_time_budget pass "engine 0: weight-streaming budget 64 KiB of 512 KiB.*engine 1: weight-streaming budget 64 KiB of 768 KiB"
  FIXTURES_REQUIRED cli_break_pte
  ARGS run ${STREAMRT_CLI_PTE} --iterations 1 --backend-option StreamRTBackend:weight_streaming_budget_per_engine=64KiB)
streamrt_cli_test(run_pte_malformed_budget fail "InvalidArgument: .*weight_streaming_budget: invalid weight-streaming budget \"lots\""
  FIXTURES_REQUIRED cli_break_pte
  ARGS run ${STREAMRT_CLI_PTE} --backend-option StreamRTBackend:weight_streaming_budget=lots)
streamrt_cli_test(run_pte_unknown_option fail "InvalidArgument: .*unknown option 'weight_streaming_budgt'"
  FIXTURES_REQUIRED cli_break_pte
  ARGS run ${STREAMRT_CLI_PTE} --backend-option StreamRTBackend:weight_streaming_budgt=1GiB)
streamrt_cli_test(run_pte_bad_backend_option fail "bad --backend-option 'weight_streaming_budget=1GiB' \\(expected Backend:key=value"
  FIXTURES_REQUIRED cli_break_pte ARGS run ${STREAMRT_CLI_PTE} --backend-option weight_streaming_budget=1GiB)
streamrt_cli_test(run_pte_input_not_an_input fail "--input names 'nope', which is not an input"
  FIXTURES_REQUIRED cli_break_pte
  ARGS run ${STREAMRT_CLI_PTE} --input nope=${STREAMRT_CLI_MLP}/test_data_set_0/input_0.pb)
streamrt_cli_test(run_pte_wrong_input fail "InvalidArgument: method 'forward' input 0 'x' is float32 1x784, expected float32 1x256"
  FIXTURES_REQUIRED cli_break_pte
  ARGS run ${STREAMRT_CLI_PTE} --input x=${STREAMRT_CLI_MLP}/test_data_set_0/input_0.pb)
streamrt_cli_test(run_garbage_pte fail "InvalidProgram: program '.*corrupt_bad_magic\\.pte': not a streamrt program \\(bad magic\\)"
  ARGS run ${STREAMRT_CLI_CORPUS}/program/corrupt_bad_magic.pte)
streamrt_cli_test(run_pte_missing_backend fail "NotFound: method 'forward' delegate 0 \\('StubBackend'\\): no backend named 'StubBackend' is registered"
  ARGS run ${STREAMRT_CLI_CORPUS}/program/valid_sample.pte)
streamrt_cli_test(run_missing_pte fail "IoError: .*no_such\\.pte"
  ARGS run ${STREAMRT_CLI_TMP}/no_such.pte)
streamrt_cli_test(inspect_garbage_pte fail "InvalidProgram: program '.*corrupt_read_before_write\\.pte'.*before any instruction writes it"
  ARGS inspect ${STREAMRT_CLI_CORPUS}/program/corrupt_read_before_write.pte)

# --- refit and weight-stripped plans (tiny models from tests/fixtures/refit) ----------------
set(STREAMRT_CLI_REFIT ${CMAKE_SOURCE_DIR}/tests/fixtures/refit)
set(STREAMRT_CLI_TINY --device cpu --profile x:1x4:2x4:4x4)  # tiny_*.onnx: x f32[batch,4]
streamrt_cli_test(build_stripped pass "built .*tiny_stripped\\.plan"
  FILE ${STREAMRT_CLI_TMP}/tiny_stripped.plan FIXTURES_SETUP cli_tiny_stripped
  ARGS build ${STREAMRT_CLI_REFIT}/tiny_a.onnx -o ${STREAMRT_CLI_TMP}/tiny_stripped.plan ${STREAMRT_CLI_TINY} --strip-weights)
streamrt_cli_test(run_stripped_plan fail "InvalidState: engine 'tiny' was built without weights; refit it"
  FIXTURES_REQUIRED cli_tiny_stripped ARGS run ${STREAMRT_CLI_TMP}/tiny_stripped.plan --iterations 1 --warmup 0)
streamrt_cli_test(refit_stripped pass "refitted 2 weights \\(60 B\\) of .*tiny_stripped\\.plan from .*tiny_b\\.onnx"
  FILE ${STREAMRT_CLI_TMP}/tiny_refitted.plan FIXTURES_REQUIRED cli_tiny_stripped FIXTURES_SETUP cli_tiny_refitted
  ARGS refit ${STREAMRT_CLI_TMP}/tiny_stripped.plan --from ${STREAMRT_CLI_REFIT}/tiny_b.onnx -o ${STREAMRT_CLI_TMP}/tiny_refitted.plan)
streamrt_cli_test(run_refitted_plan pass "y: float32 2x3"
  FIXTURES_REQUIRED cli_tiny_refitted ARGS run ${STREAMRT_CLI_TMP}/tiny_refitted.plan --iterations 1 --warmup 0)
streamrt_cli_test(refit_missing_from_file fail "IoError: .*cannot open ONNX model '.*no_such_weights\\.onnx'"
  FIXTURES_REQUIRED cli_tiny_stripped
  ARGS refit ${STREAMRT_CLI_TMP}/tiny_stripped.plan --from ${STREAMRT_CLI_TMP}/no_such_weights.onnx -o ${STREAMRT_CLI_TMP}/never.plan)
streamrt_cli_test(refit_without_from fail "--from is required"
  ARGS refit ${STREAMRT_CLI_TMP}/tiny_stripped.plan -o ${STREAMRT_CLI_TMP}/never.plan)
streamrt_cli_test(refit_missing_plan fail "IoError: cannot open '.*no_such\\.plan'"
  ARGS refit ${STREAMRT_CLI_TMP}/no_such.plan --from ${STREAMRT_CLI_REFIT}/tiny_b.onnx -o ${STREAMRT_CLI_TMP}/never.plan)
streamrt_cli_test(refit_garbage_plan fail "InvalidPlan: .*corrupt_bad_magic\\.plan.*bad magic"
  ARGS refit ${STREAMRT_CLI_CORPUS}/plan/corrupt_bad_magic.plan --from ${STREAMRT_CLI_REFIT}/tiny_b.onnx -o ${STREAMRT_CLI_TMP}/never.plan)
streamrt_cli_test(refit_name_mismatch fail "InvalidArgument: .*plan weight 'B' \\(float32 3\\) is not a weight of '.*tiny_renamed\\.onnx'"
  FIXTURES_REQUIRED cli_tiny_stripped
  ARGS refit ${STREAMRT_CLI_TMP}/tiny_stripped.plan --from ${STREAMRT_CLI_REFIT}/tiny_renamed.onnx -o ${STREAMRT_CLI_TMP}/never.plan)
streamrt_cli_test(refit_other_architecture fail "InvalidArgument: .*plan weight 'W' is float32 3x4, in '.*tiny_wide\\.onnx' it is float32 5x4"
  FIXTURES_REQUIRED cli_tiny_stripped
  ARGS refit ${STREAMRT_CLI_TMP}/tiny_stripped.plan --from ${STREAMRT_CLI_REFIT}/tiny_wide.onnx -o ${STREAMRT_CLI_TMP}/never.plan)

# --- engine cache: miss, hit, a changed option, list / prune / clear, bad input -------------
set(STREAMRT_CLI_CACHE ${STREAMRT_CLI_TMP}/engine_cache)
add_test(NAME cli_cache_reset COMMAND ${CMAKE_COMMAND} -E rm -rf ${STREAMRT_CLI_CACHE})
set_tests_properties(cli_cache_reset PROPERTIES LABELS cli FIXTURES_SETUP cli_cache_reset)
streamrt_cli_test(cache_build_miss pass "cache: miss [0-9a-f]+ \\(first build of this model\\). stored in"
  FIXTURES_REQUIRED cli_cache_reset FIXTURES_SETUP cli_cache_miss
  ARGS build ${STREAMRT_CLI_REFIT}/tiny_a.onnx -o ${STREAMRT_CLI_TMP}/cached_a.plan ${STREAMRT_CLI_TINY} --cache-dir ${STREAMRT_CLI_CACHE})
streamrt_cli_test(cache_build_hit pass "cache: hit [0-9a-f]+ in .*weights refitted from the model"
  FIXTURES_REQUIRED cli_cache_miss FIXTURES_SETUP cli_cache_hit
  ARGS build ${STREAMRT_CLI_REFIT}/tiny_b.onnx -o ${STREAMRT_CLI_TMP}/cached_b.plan ${STREAMRT_CLI_TINY} --cache-dir ${STREAMRT_CLI_CACHE})
streamrt_cli_test(cache_build_option_changed pass "cache: miss [0-9a-f]+ \\(builder option changed: float_precision\\)"
  FIXTURES_REQUIRED cli_cache_hit FIXTURES_SETUP cli_cache_fp16
  ARGS build ${STREAMRT_CLI_REFIT}/tiny_b.onnx -o ${STREAMRT_CLI_TMP}/cached_b16.plan ${STREAMRT_CLI_TINY} --fp16 --cache-dir ${STREAMRT_CLI_CACHE})
streamrt_cli_test(cache_list pass "engine cache .*: 2 entries.*key +size +created +last use +engine\n[0-9a-f]+ .* tiny"
  FIXTURES_REQUIRED cli_cache_fp16 FIXTURES_SETUP cli_cache_listed ARGS cache list --cache-dir ${STREAMRT_CLI_CACHE})
streamrt_cli_test(cache_prune pass "prune: 2 entries removed"
  FIXTURES_REQUIRED cli_cache_listed FIXTURES_SETUP cli_cache_pruned
  ARGS cache prune --cache-dir ${STREAMRT_CLI_CACHE} --cache-max-size 1)
streamrt_cli_test(cache_clear pass "clear: 0 entries removed"
  FIXTURES_REQUIRED cli_cache_pruned ARGS cache clear --cache-dir ${STREAMRT_CLI_CACHE})
streamrt_cli_test(cache_bad_max_size fail "InvalidArgument: --cache-max-size '10GB': expected a size in bytes"
  ARGS build ${STREAMRT_CLI_REFIT}/tiny_a.onnx -o ${STREAMRT_CLI_TMP}/never.plan ${STREAMRT_CLI_TINY}
       --cache-dir ${STREAMRT_CLI_TMP}/never_cache --cache-max-size 10GB)
streamrt_cli_test(cache_max_size_percent fail "InvalidArgument: --cache-max-size '50%'"
  ARGS cache prune --cache-dir ${STREAMRT_CLI_CACHE} --cache-max-size 50%)
streamrt_cli_test(cache_dir_is_a_file fail "IoError: cannot create directory '.*tiny_a\\.onnx/entries'"
  ARGS build ${STREAMRT_CLI_REFIT}/tiny_a.onnx -o ${STREAMRT_CLI_TMP}/never.plan ${STREAMRT_CLI_TINY}
       --cache-dir ${STREAMRT_CLI_REFIT}/tiny_a.onnx)
streamrt_cli_test(cache_unknown_subcommand fail "unknown cache subcommand 'frob' \\(expected list, prune or clear\\)"
  ARGS cache frob)
streamrt_cli_test(cache_no_subcommand fail "cache needs a subcommand: list, prune or clear" ARGS cache)
streamrt_cli_test(cache_list_missing_dir fail "NotFound: no engine cache at '.*no_such_cache'"
  ARGS cache list --cache-dir ${STREAMRT_CLI_TMP}/no_such_cache)
streamrt_cli_test(cache_list_bad_option fail "not expected: --bogus" ARGS cache list --bogus)

# --- a folder that is not a cache (a project with tmp/, models/ and entries/ of its own files) is
# refused by build, list, prune and clear, and every file in it stays byte for byte.
set(STREAMRT_CLI_PROJECT ${STREAMRT_CLI_TMP}/project)
add_test(NAME cli_cache_project_reset COMMAND ${CMAKE_COMMAND} -E rm -rf ${STREAMRT_CLI_PROJECT})
set_tests_properties(cli_cache_project_reset PROPERTIES LABELS cli FIXTURES_SETUP cli_cache_project_reset)
foreach(sub tmp models entries)
  add_test(NAME cli_cache_project_setup_${sub}
           COMMAND ${CMAKE_COMMAND} -E copy_directory ${STREAMRT_CLI_REFIT} ${STREAMRT_CLI_PROJECT}/${sub})
  set_tests_properties(cli_cache_project_setup_${sub} PROPERTIES LABELS cli
                       FIXTURES_REQUIRED cli_cache_project_reset FIXTURES_SETUP cli_cache_project)
endforeach()
set(STREAMRT_CLI_NOT_A_CACHE "InvalidArgument: '[^']*project' is not a streamrt engine cache: it is not empty, has no STREAMRT_CACHE marker")
streamrt_cli_test(cache_project_build fail "${STREAMRT_CLI_NOT_A_CACHE}"
  FIXTURES_REQUIRED cli_cache_project FIXTURES_SETUP cli_cache_project_used
  ARGS build ${STREAMRT_CLI_REFIT}/tiny_a.onnx -o ${STREAMRT_CLI_TMP}/never.plan ${STREAMRT_CLI_TINY} --cache-dir ${STREAMRT_CLI_PROJECT})
foreach(cmd list prune clear)
  streamrt_cli_test(cache_project_${cmd} fail "${STREAMRT_CLI_NOT_A_CACHE}"
    FIXTURES_REQUIRED cli_cache_project FIXTURES_SETUP cli_cache_project_used
    ARGS cache ${cmd} --cache-dir ${STREAMRT_CLI_PROJECT})
endforeach()
foreach(sub tmp models entries)
  add_test(NAME cli_cache_project_intact_${sub}
           COMMAND ${CMAKE_COMMAND} -E compare_files ${STREAMRT_CLI_REFIT}/tiny_a.onnx ${STREAMRT_CLI_PROJECT}/${sub}/tiny_a.onnx)
  set_tests_properties(cli_cache_project_intact_${sub} PROPERTIES LABELS cli FIXTURES_REQUIRED cli_cache_project_used)
endforeach()
# --- weight streaming: build with --weight-streaming, --budget on run and inspect ------------
streamrt_cli_test(build_mlp_weight_streaming pass "weight streaming: [1-9][0-9]* weights streamable"
  FILE ${STREAMRT_CLI_TMP}/mlp_ws.plan FIXTURES_SETUP cli_mlp_ws_plan
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/mlp_ws.plan ${STREAMRT_CLI_PROFILE}
       --weight-streaming --device cpu)
streamrt_cli_test(build_weight_streaming_fp16 fail "InvalidArgument: weight streaming needs a strongly typed network"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan ${STREAMRT_CLI_PROFILE}
       --weight-streaming --fp16 --device cpu)
streamrt_cli_test(run_budget_zero pass "budget 0 B of [0-9.]+ [KM]iB streamable.*streamed [0-9.]+ [KM]iB in [1-9]"
  FIXTURES_REQUIRED cli_mlp_ws_plan ARGS run ${STREAMRT_CLI_TMP}/mlp_ws.plan --budget 0 --iterations 1 --warmup 0)
streamrt_cli_test(run_budget_auto pass "weight streaming: budget .* \\(100\\.0%\\)"
  FIXTURES_REQUIRED cli_mlp_ws_plan ARGS run ${STREAMRT_CLI_TMP}/mlp_ws.plan --budget auto --iterations 1 --warmup 0)
streamrt_cli_test(run_budget_decimal_unit fail "InvalidArgument: invalid weight-streaming budget \"5GB\": decimal unit"
  FIXTURES_REQUIRED cli_mlp_ws_plan ARGS run ${STREAMRT_CLI_TMP}/mlp_ws.plan --budget 5GB)
streamrt_cli_test(run_budget_sign fail "invalid weight-streaming budget \"-1\": a sign is not allowed"
  FIXTURES_REQUIRED cli_mlp_ws_plan ARGS run ${STREAMRT_CLI_TMP}/mlp_ws.plan --budget -1)
streamrt_cli_test(run_budget_over_100_percent fail "invalid weight-streaming budget \"101%\""
  FIXTURES_REQUIRED cli_mlp_ws_plan ARGS run ${STREAMRT_CLI_TMP}/mlp_ws.plan --budget 101%)
streamrt_cli_test(run_budget_not_streamable pass "has no streamable weights .*--budget 50% ignored"
  FIXTURES_REQUIRED cli_mlp_plan ARGS run ${STREAMRT_CLI_TMP}/mlp_profile.plan --budget 50% --iterations 1 --warmup 0)
streamrt_cli_test(inspect_budget pass "resident: .* streamed per run: .* scratch"
  FIXTURES_REQUIRED cli_mlp_ws_plan ARGS inspect ${STREAMRT_CLI_TMP}/mlp_ws.plan --budget 50%)
# --stream-chunk: weights above it split into chunk steps; a slot holds one chunk (here 64 rows of fc1,
# 196 KiB: chunks are whole 64-row units); bad sizes refused.
streamrt_cli_test(build_mlp_stream_chunk pass "streamable, [0-9.]+ [KM]iB. [1-9][0-9]* steps split into chunks of 64 KiB"
  FILE ${STREAMRT_CLI_TMP}/mlp_chunks.plan FIXTURES_SETUP cli_mlp_chunks_plan
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/mlp_chunks.plan ${STREAMRT_CLI_PROFILE}
       --weight-streaming --stream-chunk 64KiB --device cpu)
streamrt_cli_test(inspect_stream_chunk_contract pass "streamed per run: 912 KiB in 6 weights. scratch 392 KiB per context \\(slots of 196 KiB\\).*memory contract: runs in [0-9.]+ [KM]iB"
  FIXTURES_REQUIRED cli_mlp_chunks_plan ARGS inspect ${STREAMRT_CLI_TMP}/mlp_chunks.plan --budget 0)
streamrt_cli_test(build_stream_chunk_bad fail "InvalidArgument: .*\"64MB\": decimal unit"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan ${STREAMRT_CLI_PROFILE}
       --weight-streaming --stream-chunk 64MB --device cpu)
streamrt_cli_test(build_stream_chunk_auto fail "InvalidArgument: --stream-chunk 'auto': expected a size"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan ${STREAMRT_CLI_PROFILE}
       --weight-streaming --stream-chunk auto --device cpu)
# examples/greedy_decode over the transformers corpus's KV-cache Llama (dynamo export): the greedy ids
# after a prompt are onnxruntime's for the same loop (presents fed back as pasts, a masked-out first
# cache position); a cache beyond the profile and a plan without the decoder's inputs are refused by name.
set(STREAMRT_DECODE_PROFILE --profile input_ids:1x1:1x1:1x1 --profile position_ids:1x1:1x1:1x1
    --profile attention_mask:1x2:1x9:1x64)
foreach(kv 0.key 0.value 1.key 1.value)
  list(APPEND STREAMRT_DECODE_PROFILE --profile past_key_values.${kv}:1x2x1x8:1x2x8x8:1x2x63x8)
endforeach()
streamrt_cli_test(build_llama_decode pass "built .*llama_decode\\.plan"
  FILE ${STREAMRT_CLI_TMP}/llama_decode.plan FIXTURES_SETUP cli_llama_decode_plan
  ARGS build ${CMAKE_SOURCE_DIR}/tests/corpus/transformers/llama_decode_dynamo/model.onnx
       -o ${STREAMRT_CLI_TMP}/llama_decode.plan --device cpu --weight-streaming ${STREAMRT_DECODE_PROFILE})
streamrt_cli_test(greedy_decode_matches_onnxruntime pass "decode 5 tokens after 1 cached.*tokens: 111 232 50 253 232 50"
  BIN streamrt_greedy_decode FIXTURES_REQUIRED cli_llama_decode_plan
  ARGS ${STREAMRT_CLI_TMP}/llama_decode.plan --prompt 5 --new-tokens 6 --device cpu)
# A two-token prompt where the profile takes one new token runs as two steps (chunked prefill): onnxruntime's ids.
streamrt_cli_test(greedy_decode_chunked_prompt pass "prefill 2 tokens.*tokens: 210 203 121 7 119 68"
  BIN streamrt_greedy_decode FIXTURES_REQUIRED cli_llama_decode_plan
  ARGS ${STREAMRT_CLI_TMP}/llama_decode.plan --prompt 5,6 --new-tokens 6 --device cpu)
streamrt_cli_test(greedy_decode_past_outside_profile fail "input 'attention_mask': dims 1x101 are outside the optimization profile"
  BIN streamrt_greedy_decode FIXTURES_REQUIRED cli_llama_decode_plan
  ARGS ${STREAMRT_CLI_TMP}/llama_decode.plan --past 100 --device cpu)
streamrt_cli_test(greedy_decode_past_overflow fail "--past, --prompt-len and --new-tokens take at most"
  BIN streamrt_greedy_decode FIXTURES_REQUIRED cli_llama_decode_plan
  ARGS ${STREAMRT_CLI_TMP}/llama_decode.plan --past 9223372036854775807 --device cpu)
streamrt_cli_test(greedy_decode_not_a_decoder fail "input 'input' is not one of input_ids"
  BIN streamrt_greedy_decode FIXTURES_REQUIRED cli_mlp_ws_plan ARGS ${STREAMRT_CLI_TMP}/mlp_ws.plan --prompt 1)
streamrt_cli_test(greedy_decode_bad_budget fail "budget"
  BIN streamrt_greedy_decode FIXTURES_REQUIRED cli_llama_decode_plan
  ARGS ${STREAMRT_CLI_TMP}/llama_decode.plan --prompt 5 --budget lots --device cpu)
# The same decoder built with --kv-cache-in-place: one buffer of the capacity (63 + 1 positions) per
# pair, bound to past and present, and the same ids as onnxruntime's loop; a run longer than the
# capacity is refused before it starts; `run` binds such a plan's caches at their capacity;
# `compile` refuses the flag.
streamrt_cli_test(build_llama_decode_in_place pass "KV cache in place: 4 past / present pairs, capacity 64 positions"
  FILE ${STREAMRT_CLI_TMP}/llama_decode_in_place.plan FIXTURES_SETUP cli_llama_decode_in_place_plan
  ARGS build ${CMAKE_SOURCE_DIR}/tests/corpus/transformers/llama_decode_dynamo/model.onnx
       -o ${STREAMRT_CLI_TMP}/llama_decode_in_place.plan --device cpu --weight-streaming --kv-cache-in-place
       ${STREAMRT_DECODE_PROFILE})
streamrt_cli_test(greedy_decode_in_place_matches_onnxruntime pass "KV cache: 4 pairs, 16 KiB \\(in place: one buffer of 64 positions per pair\\).*decode 5 tokens after 1 cached.*tokens: 111 232 50 253 232 50"
  BIN streamrt_greedy_decode FIXTURES_REQUIRED cli_llama_decode_in_place_plan
  ARGS ${STREAMRT_CLI_TMP}/llama_decode_in_place.plan --prompt 5 --new-tokens 6 --device cpu)
streamrt_cli_test(greedy_decode_in_place_chunked_prompt pass "prefill 2 tokens.*tokens: 210 203 121 7 119 68"
  BIN streamrt_greedy_decode FIXTURES_REQUIRED cli_llama_decode_in_place_plan
  ARGS ${STREAMRT_CLI_TMP}/llama_decode_in_place.plan --prompt 5,6 --new-tokens 6 --device cpu)
streamrt_cli_test(greedy_decode_in_place_beyond_capacity fail "the run needs 71 cache positions. 'past_key_values.0.key' has room for 64"
  BIN streamrt_greedy_decode FIXTURES_REQUIRED cli_llama_decode_in_place_plan
  ARGS ${STREAMRT_CLI_TMP}/llama_decode_in_place.plan --prompt 5 --new-tokens 69 --device cpu)
streamrt_cli_test(inspect_llama_decode_in_place pass "past_key_values.0.key .* capacity 64 along axis 2.*present.1.value .* capacity 64 along axis 2"
  FIXTURES_REQUIRED cli_llama_decode_in_place_plan ARGS inspect ${STREAMRT_CLI_TMP}/llama_decode_in_place.plan)
# Batch fixed at 1: folding the first layer's mask makes its output's batch known, so the second
# layer's mask (the same tensor) folds as well; both read attention_mask as key_mask.
streamrt_cli_test(inspect_llama_decode_masks_folded pass "\"present.0.value\",\"\",\"attention_mask\"\].*\"present.1.value\",\"\",\"attention_mask\"\]"
  FIXTURES_REQUIRED cli_llama_decode_in_place_plan ARGS inspect ${STREAMRT_CLI_TMP}/llama_decode_in_place.plan)
streamrt_cli_test(run_llama_decode_in_place pass "present.0.key: float32 1x2x9x8"
  FIXTURES_REQUIRED cli_llama_decode_in_place_plan ARGS run ${STREAMRT_CLI_TMP}/llama_decode_in_place.plan --device cpu)
streamrt_cli_test(compile_kv_cache_in_place fail "Unsupported: --kv-cache-in-place .* is for engines"
  ARGS compile ${CMAKE_SOURCE_DIR}/tests/corpus/transformers/llama_decode_dynamo/model.onnx
       -o ${STREAMRT_CLI_TMP}/never.pte --device cpu --kv-cache-in-place)
# A gather table outside the budget is read in place on the CPU too (only the gathered rows), never streamed.
streamrt_cli_test(build_gpt_weight_streaming pass "weight streaming: [1-9][0-9]* weights streamable"
  FILE ${STREAMRT_CLI_TMP}/gpt_ws.plan FIXTURES_SETUP cli_gpt_ws_plan
  ARGS build ${CMAKE_SOURCE_DIR}/tests/fixtures/models/tiny_gpt/model.onnx -o ${STREAMRT_CLI_TMP}/gpt_ws.plan
       --shapes input_ids:1x8 --weight-streaming --device cpu)
streamrt_cli_test(inspect_budget_gather_table_in_place pass "streamed per run: 320 KiB in 5 weights.*read in place .*: 64 KiB in 1 weights.*read in place tok_emb.weight"
  FIXTURES_REQUIRED cli_gpt_ws_plan ARGS inspect ${STREAMRT_CLI_TMP}/gpt_ws.plan --budget 0)
streamrt_cli_test(inspect_budget_not_streamable fail "InvalidArgument: plan .* has no streamable weights"
  FIXTURES_REQUIRED cli_mlp_plan ARGS inspect ${STREAMRT_CLI_TMP}/mlp_profile.plan --budget 0)
streamrt_cli_test(inspect_budget_malformed fail "InvalidArgument: invalid weight-streaming budget \"8 GiB\""
  FIXTURES_REQUIRED cli_mlp_ws_plan ARGS inspect ${STREAMRT_CLI_TMP}/mlp_ws.plan --budget "8 GiB")

# --- compile through the engine cache: every engine misses, then hits; list; bad input -------
# (A regex must not hold a ';': the argument list would split there and the rest be lost.)
set(STREAMRT_CLI_COMPILE_CACHE ${STREAMRT_CLI_TMP}/compile_cache)
set(STREAMRT_CLI_COMPILE_CACHED --device cpu --fallback-ops Softmax --cache-dir ${STREAMRT_CLI_COMPILE_CACHE})
add_test(NAME cli_compile_cache_reset
         COMMAND ${CMAKE_COMMAND} -E rm -rf ${STREAMRT_CLI_COMPILE_CACHE} ${STREAMRT_CLI_TMP}/xdg_cache)
set_tests_properties(cli_compile_cache_reset PROPERTIES LABELS cli FIXTURES_SETUP cli_compile_cache_reset)
streamrt_cli_test(compile_cache_miss pass "engine brk_engine0: 3 nodes[^\n]*\n    cache: miss [0-9a-f]+ \\(first build of this model\\). stored in [^\n]*compile_cache\n  engine brk_engine1: 4 nodes[^\n]*\n    cache: miss [0-9a-f]+ \\(first build of this model\\). stored in"
  FILE ${STREAMRT_CLI_TMP}/cached_miss.pte FIXTURES_SETUP cli_compile_cache_miss
  ARGS compile ${STREAMRT_CLI_BREAK} -o ${STREAMRT_CLI_TMP}/cached_miss.pte ${STREAMRT_CLI_COMPILE_CACHED})
set_tests_properties(cli_compile_cache_miss PROPERTIES FIXTURES_REQUIRED "cli_break_model;cli_compile_cache_reset")
streamrt_cli_test(compile_cache_hit pass "engine brk_engine0: 3 nodes[^\n]*\n    cache: hit [0-9a-f]+ in [^\n]*compile_cache \\(weights refitted from the model\\)\n  engine brk_engine1: 4 nodes[^\n]*\n    cache: hit "
  FILE ${STREAMRT_CLI_TMP}/cached_hit.pte FIXTURES_REQUIRED cli_compile_cache_miss FIXTURES_SETUP cli_compile_cache_hit
  ARGS compile ${STREAMRT_CLI_BREAK} -o ${STREAMRT_CLI_TMP}/cached_hit.pte ${STREAMRT_CLI_COMPILE_CACHED})
streamrt_cli_test(compile_cache_list pass "engine cache .*compile_cache: 2 entries.*[0-9a-f]+ .* brk_engine[01]\n[0-9a-f]+ .* brk_engine[01]\n$"
  FIXTURES_REQUIRED cli_compile_cache_hit ARGS cache list --cache-dir ${STREAMRT_CLI_COMPILE_CACHE})
streamrt_cli_test(compile_cache_run_hit pass "y: float32 1x256"
  FIXTURES_REQUIRED cli_compile_cache_hit ARGS run ${STREAMRT_CLI_TMP}/cached_hit.pte --iterations 1 --warmup 0)
# --cache uses the default directory, as `build --cache` does.
streamrt_cli_test(compile_cache_default_dir pass "cache: miss [0-9a-f]+ \\(first build of this model\\). stored in [^\n]*xdg_cache/streamrt/engines\n"
  FIXTURES_REQUIRED cli_compile_cache_reset
  ARGS compile ${STREAMRT_CLI_BREAK} -o ${STREAMRT_CLI_TMP}/cached_default.pte --device cpu --cache)
set_tests_properties(cli_compile_cache_default_dir PROPERTIES ENVIRONMENT XDG_CACHE_HOME=${STREAMRT_CLI_TMP}/xdg_cache
                     FIXTURES_REQUIRED "cli_break_model;cli_compile_cache_reset")
streamrt_cli_test(compile_cache_bad_max_size fail "InvalidArgument: --cache-max-size '10GB': expected a size in bytes"
  FIXTURES_REQUIRED cli_break_model
  ARGS compile ${STREAMRT_CLI_BREAK} -o ${STREAMRT_CLI_TMP}/never.pte ${STREAMRT_CLI_COMPILE_CACHED} --cache-max-size 10GB)
streamrt_cli_test(compile_cache_dir_is_a_file fail "IoError: cannot create directory '.*graph_break\\.onnx/entries'"
  FIXTURES_REQUIRED cli_break_model
  ARGS compile ${STREAMRT_CLI_BREAK} -o ${STREAMRT_CLI_TMP}/never.pte --device cpu --cache-dir ${STREAMRT_CLI_BREAK})

# --- diagnostic switches: flags (and, for compatibility, the old variables) reach BuilderConfig::passes
# and RuntimeOptions. Through an engine cache, whose miss reason names the switches that changed: each
# build below requires the one before (the reason compares with the model's last build).
set(STREAMRT_CLI_SWITCH_CACHE ${STREAMRT_CLI_TMP}/switch_cache)
set(STREAMRT_CLI_SWITCH_GPT ${STREAMRT_CLI_FIXTURES}/tiny_gpt/model.onnx --shapes input_ids:1x8 --device cpu
    --cache-dir ${STREAMRT_CLI_SWITCH_CACHE})
add_test(NAME cli_switch_cache_reset COMMAND ${CMAKE_COMMAND} -E rm -rf ${STREAMRT_CLI_SWITCH_CACHE})
set_tests_properties(cli_switch_cache_reset PROPERTIES LABELS cli FIXTURES_SETUP cli_switch_cache_reset)
streamrt_cli_test(switch_default pass "cache: miss [0-9a-f]+ \\(first build of this model\\).*36 fused away"
  FIXTURES_REQUIRED cli_switch_cache_reset FIXTURES_SETUP cli_switch_default
  ARGS build ${STREAMRT_CLI_SWITCH_GPT} -o ${STREAMRT_CLI_TMP}/switch_default.plan)
streamrt_cli_test(switch_no_fusion pass "cache: miss [0-9a-f]+ \\(builder option changed: passes.attention_fusion, passes.matmul_bias_fusion\\).*12 fused away"
  FIXTURES_REQUIRED cli_switch_default FIXTURES_SETUP cli_switch_no_fusion
  ARGS build ${STREAMRT_CLI_SWITCH_GPT} -o ${STREAMRT_CLI_TMP}/switch_no_fusion.plan --no-fusion attention,matmul-bias)
# The variable and the flag make the same config: the same key.
streamrt_cli_test(switch_no_fusion_variable pass "cache: hit .*12 fused away"
  FIXTURES_REQUIRED cli_switch_no_fusion FIXTURES_SETUP cli_switch_no_fusion_variable
  ARGS build ${STREAMRT_CLI_SWITCH_GPT} -o ${STREAMRT_CLI_TMP}/switch_no_fusion_var.plan --no-fusion matmul-bias)
set_tests_properties(cli_switch_no_fusion_variable PROPERTIES ENVIRONMENT STREAMRT_NO_ATTENTION_FUSION=1)
streamrt_cli_test(switch_others pass "cache: miss [0-9a-f]+ \\(builder option changed: passes.attention_fusion, passes.conv_tactics, passes.matmul_bias_fusion, passes.step_timing, passes.view_aliasing\\)"
  FIXTURES_REQUIRED cli_switch_no_fusion_variable
  ARGS build ${STREAMRT_CLI_SWITCH_GPT} -o ${STREAMRT_CLI_TMP}/switch_others.plan --no-view-aliasing --conv-tactics
       --no-step-timing)
# `run model.onnx`, `compile` and `onnx-test` take the build switches too; onnx-test's cases pass unfused.
streamrt_cli_test(run_no_fusion_all pass "engine 'main_graph' on cpu: 54 steps"
  ARGS run ${STREAMRT_CLI_FIXTURES}/tiny_gpt/model.onnx --shapes input_ids:1x8 --device cpu --no-fusion all
       --iterations 1 --warmup 0)
streamrt_cli_test(onnx_test_no_fusion pass "[1-9][0-9]* passed, 0 failed"
  ARGS onnx-test ${CMAKE_SOURCE_DIR}/tests/fixtures/attention/fp32 --device cpu -j 2 --rtol 1e-4 --atol 1e-5
       --no-fusion attention --attention-kernel simple)
# The run-time diagnostics are accepted on the CPU, which has none of them (CUDA only).
streamrt_cli_test(run_diagnostics_on_cpu pass "latency over 1 runs"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --device cpu --iterations 1 --warmup 0
       --profile-ops --step-times ${STREAMRT_CLI_TMP}/steps.jsonl --stream-trace ${STREAMRT_CLI_TMP}/trace.jsonl
       --attention-kernel simple --group-gemm-kernel cublaslt --no-few-row-kernel --no-programmatic-launch)
streamrt_cli_test(log_level_flag pass "streamrt verbose: engine '[^']*': loaded"
  ARGS --log-level verbose run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --device cpu --iterations 1)
streamrt_cli_test(log_level_variable pass "streamrt verbose: engine '[^']*': loaded"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --device cpu --iterations 1)
set_tests_properties(cli_log_level_variable PROPERTIES ENVIRONMENT STREAMRT_LOG=verbose)
# Bad values: an error naming the flag or variable, exit 1.
streamrt_cli_test(no_fusion_unknown fail "InvalidArgument: --no-fusion 'bogus': expected conv, matmul-bias, matmul-residual, matmul-group, rotary, attention or all"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan ${STREAMRT_CLI_PROFILE} --no-fusion conv,bogus)
streamrt_cli_test(onnx_test_no_fusion_unknown fail "InvalidArgument: --no-fusion 'softmax'"
  ARGS onnx-test ${CMAKE_SOURCE_DIR}/tests/fixtures/attention/fp32 --device cpu --no-fusion softmax)
streamrt_cli_test(attention_kernel_unknown fail "InvalidArgument: --attention-kernel: unknown attention kernel 'fast' \\(expected auto, simple, mma or wgmma\\)"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --device cpu --attention-kernel fast)
streamrt_cli_test(group_gemm_kernel_unknown fail "InvalidArgument: --group-gemm-kernel: unknown group GEMM kernel 'cutlass' \\(expected auto, cublaslt or group\\)"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --device cpu --group-gemm-kernel cutlass)
streamrt_cli_test(attention_kernel_variable_unknown fail "InvalidArgument: STREAMRT_ATTENTION_KERNEL: unknown attention kernel 'fast'"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --device cpu)
set_tests_properties(cli_attention_kernel_variable_unknown PROPERTIES ENVIRONMENT STREAMRT_ATTENTION_KERNEL=fast)
streamrt_cli_test(log_level_unknown fail "InvalidArgument: --log-level: unknown log level 'loud'"
  ARGS --log-level loud ops)
streamrt_cli_test(log_level_variable_unknown fail "InvalidArgument: STREAMRT_LOG: unknown log level 'debug'" ARGS ops)
set_tests_properties(cli_log_level_variable_unknown PROPERTIES ENVIRONMENT STREAMRT_LOG=debug)

# --- files: outputs replace only regular files, inputs are regular files checked before reading ---
# streamrt_cli_file_test(NAME <rc> REGEX SETUP CHECK ARGS ...): in a fresh folder $D
# (${STREAMRT_CLI_TMP}/files/NAME), runs the shell lines SETUP, then streamrt ARGS (killed after
# 60 s: a FIFO must not stall it), requires exit status <rc> exactly (a signal is never 0 or 1)
# and REGEX (grep -E, no ' or ;) in its output, then runs the shell lines CHECK (each must hold).
# Lines are separated by newlines: a ';' would split the CMake argument list.
function(streamrt_cli_file_test name rc regex setup check)
  cmake_parse_arguments(T "" "FIXTURES_REQUIRED" "ARGS" ${ARGN})
  set(dir ${STREAMRT_CLI_TMP}/files/${name})
  set(script "set -e\nD=${dir}\nrm -rf \"$D\"\nmkdir -p \"$D\"\n${setup}\nrc=0\n"
             "timeout 60 \"$0\" \"$@\" >\"$D/log\" 2>&1 || rc=$?\ncat \"$D/log\"\necho \"exit: $rc\"\n"
             "test \"$rc\" -eq ${rc}\ngrep -Eq '${regex}' \"$D/log\"\n${check}\n")
  string(JOIN "" script ${script})
  string(REPLACE "@D@" "${dir}" T_ARGS "${T_ARGS}")
  add_test(NAME cli_${name} COMMAND sh -c "${script}" $<TARGET_FILE:streamrt_cli> ${T_ARGS})
  set_tests_properties(cli_${name} PROPERTIES LABELS cli TIMEOUT 120)
  if(T_FIXTURES_REQUIRED)
    set_tests_properties(cli_${name} PROPERTIES FIXTURES_REQUIRED ${T_FIXTURES_REQUIRED})
  endif()
endfunction()
set(STREAMRT_CLI_MLP_BUILD build ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --device cpu)
set(STREAMRT_CLI_REFUSED "refusing to write")

streamrt_cli_file_test(output_onto_symlink 1 "${STREAMRT_CLI_REFUSED} .*/link.: it is a symbolic link"
  "echo keep > \"$D/target\"\nln -s \"$D/target\" \"$D/link\""
  "test -L \"$D/link\"\ntest \"$(cat \"$D/target\")\" = keep\ntest -z \"$(ls \"$D\" | grep streamrt-tmp || true)\""
  ARGS ${STREAMRT_CLI_MLP_BUILD} -o @D@/link)
streamrt_cli_file_test(output_onto_fifo 1 "${STREAMRT_CLI_REFUSED} .*/fifo.: it is a FIFO"
  "mkfifo \"$D/fifo\"" "test -p \"$D/fifo\"" ARGS ${STREAMRT_CLI_MLP_BUILD} -o @D@/fifo)
# Device nodes of our own with /dev/null's and /dev/full's numbers: never the real ones, which a
# regression would replace on the test machine. /dev/full would swallow the plan with ENOSPC:
# refused, not reported as written.
streamrt_cli_file_test(output_onto_char_device 1 "${STREAMRT_CLI_REFUSED} .*/null.: it is a character device"
  "mknod \"$D/null\" c 1 3" "test -c \"$D/null\"" ARGS ${STREAMRT_CLI_MLP_BUILD} -o @D@/null)
streamrt_cli_file_test(output_onto_dev_full 1 "${STREAMRT_CLI_REFUSED} .*/full.: it is a character device"
  "mknod \"$D/full\" c 1 7" "test -c \"$D/full\"" ARGS ${STREAMRT_CLI_MLP_BUILD} -o @D@/full)
streamrt_cli_file_test(output_onto_directory 1 "${STREAMRT_CLI_REFUSED} .*/dir.: it is a directory"
  "mkdir \"$D/dir\"" "test -d \"$D/dir\"" ARGS ${STREAMRT_CLI_MLP_BUILD} -o @D@/dir)
streamrt_cli_file_test(compile_output_onto_symlink 1 "${STREAMRT_CLI_REFUSED} .*/link.: it is a symbolic link"
  "echo keep > \"$D/target\"\nln -s \"$D/target\" \"$D/link\"" "test \"$(cat \"$D/target\")\" = keep"
  FIXTURES_REQUIRED cli_break_model ARGS compile ${STREAMRT_CLI_BREAK} -o @D@/link --device cpu)
streamrt_cli_file_test(refit_output_onto_fifo 1 "${STREAMRT_CLI_REFUSED} .*/fifo.: it is a FIFO"
  "mkfifo \"$D/fifo\"" "test -p \"$D/fifo\""
  FIXTURES_REQUIRED cli_mlp_plan ARGS refit ${STREAMRT_CLI_TMP}/mlp_profile.plan --from ${STREAMRT_CLI_MLP}/model.onnx -o @D@/fifo)
# A temporary of a process that is gone (a builder killed mid-write) is removed by the next
# write of the same output; one of a live process (this shell) is kept.
streamrt_cli_file_test(output_removes_stale_temps 0 "built .*out\\.plan"
  "sh -c \"exit 0\" &\ndead=$!\nwait $dead\necho junk > \"$D/out.plan.streamrt-tmp.$dead.0\"\necho junk > \"$D/out.plan.tmp.$dead\"\necho junk > \"$D/out.plan.streamrt-tmp.$$.0\""
  "test ! -e \"$D/out.plan.streamrt-tmp.$dead.0\"\ntest ! -e \"$D/out.plan.tmp.$dead\"\ntest -e \"$D/out.plan.streamrt-tmp.$$.0\"\ntest -s \"$D/out.plan\""
  ARGS ${STREAMRT_CLI_MLP_BUILD} -o @D@/out.plan)
# ONNX external data: a FIFO beside the model is refused without blocking; links out of the
# model's folder, '..' and absolute paths are refused.
streamrt_cli_file_test(external_data_fifo 1 "tensor .W.: external data .weights\\.bin.: .* is a FIFO"
  "cp ${STREAMRT_CLI_CORPUS}/onnx/valid_external.onnx \"$D/model.onnx\"\nmkfifo \"$D/weights.bin\"" ""
  ARGS build @D@/model.onnx -o @D@/never.plan --device cpu)
streamrt_cli_file_test(external_data_symlink_outside 1 "external data path .escape\\.bin. resolves outside the model.s folder"
  "cp ${STREAMRT_CLI_CORPUS}/onnx/corrupt_external_symlink_escape.onnx \"$D/model.onnx\"\nln -s /etc/passwd \"$D/escape.bin\"" ""
  ARGS build @D@/model.onnx -o @D@/never.plan --device cpu)
streamrt_cli_test(external_data_dotdot fail "InvalidModel: .*external data path '\\.\\./outside\\.bin' contains '\\.\\.'"
  ARGS build ${STREAMRT_CLI_CORPUS}/onnx/corrupt_external_dotdot.onnx -o ${STREAMRT_CLI_TMP}/never.plan)
streamrt_cli_test(external_data_absolute fail "InvalidModel: .*external data path '/etc/passwd' is absolute"
  ARGS build ${STREAMRT_CLI_CORPUS}/onnx/corrupt_external_absolute.onnx -o ${STREAMRT_CLI_TMP}/never.plan)
# Devices and folders named as inputs are refused before a byte is read.
streamrt_cli_test(model_dev_zero fail "IoError: cannot open ONNX model '/dev/zero': '/dev/zero' is a character device"
  ARGS build /dev/zero -o ${STREAMRT_CLI_TMP}/never.plan)
streamrt_cli_test(run_plan_dev_zero fail "IoError: '/dev/zero' is a character device" ARGS run /dev/zero)
streamrt_cli_test(input_dev_zero fail "IoError: '/dev/zero' is a character device, not a regular file"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --input input=/dev/zero)
streamrt_cli_test(input_is_a_directory fail "IoError: '.*empty_dir' is a directory, not a regular file"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --input input=${STREAMRT_CLI_TMP}/empty_dir)
streamrt_cli_test(program_input_is_a_directory fail "IoError: '.*empty_dir' is a directory, not a regular file"
  FIXTURES_REQUIRED cli_break_pte ARGS run ${STREAMRT_CLI_PTE} --input x=${STREAMRT_CLI_TMP}/empty_dir)
streamrt_cli_test(output_dir_under_a_file fail "IoError: --output-dir: cannot create directory '.*model\\.onnx/out'"
  ARGS run ${STREAMRT_CLI_MLP}/model.onnx ${STREAMRT_CLI_PROFILE} --output-dir ${STREAMRT_CLI_MLP}/model.onnx/out)
streamrt_cli_test(program_output_dir_under_a_file fail "IoError: --output-dir: cannot create directory '.*model\\.onnx/out'"
  FIXTURES_REQUIRED cli_break_pte ARGS run ${STREAMRT_CLI_PTE} --output-dir ${STREAMRT_CLI_MLP}/model.onnx/out)
# --- names that are not UTF-8 (bytes like \xff in node / tensor names, which ONNX allows): the
# model builds, and inspect prints them escaped as \xHH in text and JSON instead of aborting ----
add_test(NAME cli_write_non_utf8_model COMMAND streamrt_tests --gtest_filter=BuilderScaleFixture.WriteNonUtf8NamedModel)
set_tests_properties(cli_write_non_utf8_model PROPERTIES LABELS cli FIXTURES_SETUP cli_non_utf8_model)
set(STREAMRT_CLI_NON_UTF8 ${STREAMRT_CLI_TMP}/non_utf8)
streamrt_cli_test(build_non_utf8_names pass "."
  FILE ${STREAMRT_CLI_NON_UTF8}.plan FIXTURES_REQUIRED cli_non_utf8_model FIXTURES_SETUP cli_non_utf8_plan
  ARGS build ${STREAMRT_CLI_NON_UTF8}.onnx -o ${STREAMRT_CLI_NON_UTF8}.plan --device cpu)
streamrt_cli_test(inspect_non_utf8_names_text pass "plan 'graph\\\\xff'.*in\\\\xfe .*MatMul +mm\\\\xff .*relu\\\\xffend .*w\\\\xc0 "
  FIXTURES_REQUIRED cli_non_utf8_plan ARGS inspect ${STREAMRT_CLI_NON_UTF8}.plan)
streamrt_cli_test(inspect_non_utf8_names_json pass "name.: .mm\\\\\\\\xff.*name.: .relu\\\\\\\\xffend.*name.: .w\\\\\\\\xc0"
  FIXTURES_REQUIRED cli_non_utf8_plan ARGS inspect ${STREAMRT_CLI_NON_UTF8}.plan --json)
streamrt_cli_test(compile_non_utf8_names pass "."
  FILE ${STREAMRT_CLI_NON_UTF8}.pte FIXTURES_REQUIRED cli_non_utf8_model FIXTURES_SETUP cli_non_utf8_pte
  ARGS compile ${STREAMRT_CLI_NON_UTF8}.onnx -o ${STREAMRT_CLI_NON_UTF8}.pte --device cpu --fallback-ops Relu)
streamrt_cli_test(inspect_program_non_utf8_names_text pass "input +in\\\\xfe .*kernel Relu 'relu\\\\xffend'"
  FIXTURES_REQUIRED cli_non_utf8_pte ARGS inspect ${STREAMRT_CLI_NON_UTF8}.pte)
streamrt_cli_test(inspect_program_non_utf8_names_json pass "node.: .relu\\\\\\\\xffend"
  FIXTURES_REQUIRED cli_non_utf8_pte ARGS inspect ${STREAMRT_CLI_NON_UTF8}.pte --json)

# --- the builder's size limits from the command line ------------------------------------------
streamrt_cli_test(build_max_nodes fail "more than the 2 .*max_nodes"
  ARGS ${STREAMRT_CLI_MLP_BUILD} --max-nodes 2 -o ${STREAMRT_CLI_TMP}/never_max_nodes.plan)
streamrt_cli_test(build_max_tensor_elements fail "more than 4 elements"
  ARGS ${STREAMRT_CLI_MLP_BUILD} --max-tensor-elements 4 -o ${STREAMRT_CLI_TMP}/never_max_elems.plan)
# --- byte flips and truncations of a small plan and program through the CLI, sampled --------
# (scripts/mutate_check.py; `make mutate-check` runs every structural byte). Fails on a crash,
# a hang, an unclean exit or a mutant accepted for no known reason.
find_program(STREAMRT_CLI_PYTHON3 python3)
if(STREAMRT_CLI_PYTHON3)
  add_test(NAME cli_mutate_check_quick
           COMMAND ${STREAMRT_CLI_PYTHON3} ${CMAKE_SOURCE_DIR}/scripts/mutate_check.py
                   --cli $<TARGET_FILE:streamrt_cli> --jobs 2 --stride 256)
  set_tests_properties(cli_mutate_check_quick PROPERTIES LABELS cli TIMEOUT 600)
endif()

# --- the single-step benches' graphs (transformers' rotate-half, half-precision RMSNorm, silu(g) * u,
# a residual Add) still build into their one step: the benches' CPU mode (build + inspect, no timing)
if(STREAMRT_CLI_PYTHON3)
  execute_process(COMMAND ${STREAMRT_CLI_PYTHON3} -c "import onnx, numpy" RESULT_VARIABLE _srt_bench_py
                  OUTPUT_QUIET ERROR_QUIET)
  if(_srt_bench_py EQUAL 0)
    foreach(bench rotary membound)
      add_test(NAME cli_${bench}_bench_graphs_fuse
               COMMAND ${STREAMRT_CLI_PYTHON3} ${CMAKE_SOURCE_DIR}/bench/tools/${bench}_bench.py
                       ${STREAMRT_CLI_TMP}/${bench}_bench --device cpu --streamrt $<TARGET_FILE:streamrt_cli>
                       --workdir ${STREAMRT_CLI_TMP}/${bench}_bench_work)
      set_tests_properties(cli_${bench}_bench_graphs_fuse PROPERTIES LABELS cli TIMEOUT 300)
    endforeach()
  else()
    message(STATUS "cli_*_bench_graphs_fuse skipped: ${STREAMRT_CLI_PYTHON3} has no onnx / numpy")
  endif()
endif()

# --- onnx-test's skip policy (--no-skip / --expected-skips) -----------------------------------
set(STREAMRT_POLICY ${CMAKE_SOURCE_DIR}/tests/fixtures/onnx_test_policy)
streamrt_cli_test(onnx_test_listed_case_passes fail "passes but is listed as an expected skip \\(listed on purpose"
  ARGS onnx-test ${CMAKE_SOURCE_DIR}/tests/fixtures/function_ops/attention_4d --device cpu
       --expected-skips ${STREAMRT_POLICY}/listed_passing.txt)
streamrt_cli_test(onnx_test_skips_without_reason fail "no_reason\\.txt:2: case 'test_abs' has no reason"
  ARGS onnx-test ${CMAKE_SOURCE_DIR}/tests/fixtures/function_ops/attention_4d --device cpu
       --expected-skips ${STREAMRT_POLICY}/no_reason.txt)
streamrt_cli_test(onnx_test_skips_file_missing fail "expected-skips file.*no_such_list\\.txt"
  ARGS onnx-test ${CMAKE_SOURCE_DIR}/tests/fixtures/function_ops/attention_4d --device cpu
       --expected-skips ${STREAMRT_POLICY}/no_such_list.txt)
if(EXISTS /usr/share/libonnx-testdata/data/node/test_lstm_defaults)
  set(STREAMRT_NODE /usr/share/libonnx-testdata/data/node)
  # Adagrad (ai.onnx.preview.training) is an op streamrt lacks: a skip any list accepts, but --no-skip does not.
  streamrt_cli_test(onnx_test_unlisted_op_skip_passes pass "0 passed, 0 failed, 1 skipped"
    ARGS onnx-test ${STREAMRT_NODE}/test_adagrad --device cpu --expected-skips ${STREAMRT_POLICY}/nothing.txt)
  streamrt_cli_test(onnx_test_no_skip_fails_a_skip fail "skipped, and every case must run: .*Adagrad"
    ARGS onnx-test ${STREAMRT_NODE}/test_adagrad --device cpu --no-skip)
  # Random outputs (numpy's draws in the reference) pass on what any draw satisfies, and say so.
  streamrt_cli_test(onnx_test_random_outputs_pass_with_a_note pass
    "pass  test_bernoulli_expanded: random outputs: shape and dtype checked, values in .0, 1.*1 passed, 0 failed, 0 skipped"
    ARGS onnx-test ${STREAMRT_NODE}/test_bernoulli_expanded --device cpu --no-skip)
  # A string tensor is not an op streamrt lacks: the skip must be listed.
  streamrt_cli_test(onnx_test_unlisted_reason_fails fail "skipped for a reason the expected-skips file does not list: .*STRING"
    ARGS onnx-test ${STREAMRT_NODE}/test_cast_FLOAT_to_STRING --device cpu --expected-skips ${STREAMRT_POLICY}/nothing.txt)
endif()
# --- progress bar of long build phases (--progress; auto draws it only on a terminal) -----------
streamrt_cli_test(build_progress_on pass "weights to fp16 \\[#+\\] 100%"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/mlp_progress.plan ${STREAMRT_CLI_PROFILE}
       --fp16 --device cpu --progress on)
streamrt_cli_test(build_progress_bad fail "--progress: .*not in"
  ARGS build ${STREAMRT_CLI_MLP}/model.onnx -o ${STREAMRT_CLI_TMP}/never.plan --progress sometimes)

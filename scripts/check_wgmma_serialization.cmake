# ctest cuda_wgmma_not_serialized: compiles the warpgroup-MMA kernels for sm_90a with ptxas's
# report (-Xptxas -v) and fails where ptxas says it serialized their wgmma instructions (messages
# C7520 and C7513, printed at "info" level only: an MMA under a branch it cannot prove warp-uniform;
# other instructions defining an MMA's input registers inside its pipeline stage, as zeroing the P
# fragments on a branch of their own did, 30 % slower on the H200) or spilled registers (the consumers' 240 a thread are the budget: a spill in their
# loop costs more than it saves). The build itself succeeds either way, only slower on the GPU.
#   cmake -DNVCC=... -DSRC=file.cu -DINCLUDES="a;b" -DOUT=obj -P scripts/check_wgmma_serialization.cmake
set(args -c ${SRC} -o ${OUT} -std=c++20 --expt-relaxed-constexpr -diag-suppress=2810 -O3 -DNDEBUG
    -DSTREAMRT_WITH_CUDA=1 -DSTREAMRT_ATTENTION_WGMMA=1 -DSTREAMRT_VERSION="check"
    --generate-code=arch=compute_90a,code=[sm_90a] -Xptxas -v)
foreach(dir ${INCLUDES})
  list(APPEND args -I${dir})
endforeach()
execute_process(COMMAND ${NVCC} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nvcc failed (${rc}) on ${SRC}:\n${err}")
endif()
string(REGEX MATCHALL "[^\n]*C75(20|13)[^\n]*" serialized "${out}\n${err}")
if(serialized)
  list(JOIN serialized "\n" lines)
  message(FATAL_ERROR "ptxas serialized wgmma instructions in ${SRC}:\n${lines}")
endif()
string(REGEX MATCHALL "[^\n]*[1-9][0-9]* bytes spill[^\n]*" spills "${out}\n${err}")
if(spills)
  list(JOIN spills "\n" lines)
  message(FATAL_ERROR "ptxas spilled registers in ${SRC}:\n${lines}")
endif()
message(STATUS "${SRC}: no wgmma serialized, no spills")

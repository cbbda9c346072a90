// Programmatic dependent launch (sm_90 and later). A decode token's steps are dozens of short kernels
// in a row, each waiting for the one before to end and then ramping up from nothing: launch, block
// scheduling, its first weight loads from HBM. A kernel launched by launch_dependent (where
// RuntimeOptions::programmatic_launch, sm_90) may be scheduled while the kernel before it in the
// stream still runs (once every block of that one has called dependents_may_start() or ended), and
// does what needs no earlier result (its weights' first loads, which no step writes) before
// wait_for_earlier_steps().
//
// Where a kernel calls dependents_may_start() decides how far ahead the next one runs: never before
// its own wait (called first, each launch let the next in before it had waited itself, a chain of
// waiting launches holding shared memory and prefetching weights into L2: a batch-8 Llama token ran
// slower, a one-row one faster). The products call it after their main loop (the next step comes in
// during their tail), the short kernels right after their wait.
//
// The contract, for every kernel launched that way: it calls wait_for_earlier_steps() on every path
// before it reads anything an earlier step wrote and before it writes anything at all (an earlier
// step may still read the buffer). That wait returns once the kernel before has ended and its writes
// are visible; since that kernel kept the same contract, so had everything before it. A kernel
// launched the usual way waits for the whole stream as always, whatever the kernel before it did.
// Only kernel-to-kernel order is relaxed: event waits (weight streaming's copies) and copies keep
// their full dependencies.
#pragma once

#include <cuda_runtime.h>

#include "backends/cuda/cuda_check.h"
#include "backends/cuda/cuda_kernel.h"
#include "backends/cuda/cuda_run_options.h"

namespace streamrt::cuda {

__device__ __forceinline__ void wait_for_earlier_steps() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void dependents_may_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// Whether kernels launched on `res` may start before the kernel ahead of them ends.
inline bool dependent_launch(const CudaResources& res) {
  return res.cc_major >= 9 && current_run_options().programmatic_launch;
}

// kernel<<<grid, block, smem, stream>>>(args...), as a programmatic dependent launch where `dependent`,
// with a (1, cluster_y, 1) cluster where cluster_y > 1.
template <typename... Params, typename... Args>
Status launch_kernel(cudaStream_t stream, bool dependent, void (*kernel)(Params...), dim3 grid, dim3 block,
                     size_t smem, unsigned cluster_y, Args&&... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attrs[2] = {};
  unsigned n = 0;
  if (cluster_y > 1) {
    attrs[n].id = cudaLaunchAttributeClusterDimension;
    attrs[n].val.clusterDim.x = 1;
    attrs[n].val.clusterDim.y = cluster_y;
    attrs[n].val.clusterDim.z = 1;
    ++n;
  }
  if (dependent) {
    attrs[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  cfg.attrs = attrs;
  cfg.numAttrs = n;
  SRT_CUDA(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
  return ok_status();
}

// launch_kernel on res.stream, dependent where dependent_launch(res).
template <typename... Params, typename... Args>
Status launch_dependent(const CudaResources& res, void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                        unsigned cluster_y, Args&&... args) {
  return launch_kernel(res.stream, dependent_launch(res), kernel, grid, block, smem, cluster_y,
                       std::forward<Args>(args)...);
}

}  // namespace streamrt::cuda

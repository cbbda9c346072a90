// The running context's RuntimeOptions, for the kernels that read one (attention.cu: which
// attention kernel runs). Their natural place is CudaResources, which every kernel gets, but that
// struct lives in cuda_kernel.h, which every kernel includes (a field there rebuilds them all);
// so the context publishes its options to the thread that launches its steps instead:
// CudaContext::run_steps holds a RunOptionsScope, and a kernel asks current_run_options(). Steps
// launch on the thread that calls enqueue (CUDA graph capture included), so a kernel always sees
// its own context's options; outside a context's run (none in this process today) it sees the
// defaults.
#pragma once

#include "streamrt/runtime.h"

namespace streamrt::cuda {

const RuntimeOptions& current_run_options();

class RunOptionsScope {
 public:
  explicit RunOptionsScope(const RuntimeOptions& options);
  ~RunOptionsScope();
  RunOptionsScope(const RunOptionsScope&) = delete;
  RunOptionsScope& operator=(const RunOptionsScope&) = delete;

 private:
  const RuntimeOptions* previous_;
};

}  // namespace streamrt::cuda

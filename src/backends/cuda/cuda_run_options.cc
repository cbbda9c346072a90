#include "backends/cuda/cuda_run_options.h"

namespace streamrt::cuda {
namespace {

thread_local const RuntimeOptions* current = nullptr;

}  // namespace

const RuntimeOptions& current_run_options() {
  static const RuntimeOptions defaults;
  return current ? *current : defaults;
}

RunOptionsScope::RunOptionsScope(const RuntimeOptions& options) : previous_(current) { current = &options; }
RunOptionsScope::~RunOptionsScope() { current = previous_; }

}  // namespace streamrt::cuda

// `streamrt ops`: the ops this build supports, per device.
#include <cstdio>

#include "commands.h"
#include "ops/op.h"
#ifdef STREAMRT_WITH_CUDA
#include "backends/cuda/cuda_kernel.h"
#endif

namespace streamrt::cli {

Command add_ops_command(CLI::App& app) {
  auto markdown = std::make_shared<bool>(false);
  app.add_flag("--markdown", *markdown, "print a markdown table");
  return [markdown]() {
    const auto& reg = ops::OpRegistry::global();
    std::printf(*markdown ? "| op | since opset | CPU | CUDA |\n| --- | --- | --- | --- |\n"
                          : "%-24s %-6s %-4s %s\n", "op", "opset", "cpu", "cuda");
    for (const auto& name : reg.op_types()) {
      const ops::OpSchema* s = reg.find(name);
      bool cuda = false;
#ifdef STREAMRT_WITH_CUDA
      cuda = cuda::CudaKernelRegistry::global().find(name) != nullptr;
#endif
      if (*markdown)
        std::printf("| %s | %d | %s | %s |\n", name.c_str(), s->min_opset, s->cpu ? "yes" : "no",
                    cuda ? "yes" : "host fallback");
      else
        std::printf("%-24s %-6d %-4s %s\n", name.c_str(), s->min_opset, s->cpu ? "yes" : "no", cuda ? "yes" : "-");
    }
    return 0;
  };
}

}  // namespace streamrt::cli

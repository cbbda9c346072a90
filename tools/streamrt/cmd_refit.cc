// `streamrt refit model.plan --from new_weights.onnx -o refitted.plan`: new weight values from a
// model of the same architecture, into a plan (stripped or not), without a rebuild.
#include <cstdio>

#include "commands.h"
#include "core/byte_size.h"
#include "core/file_io.h"
#include "streamrt/refit.h"

namespace streamrt::cli {

Command add_refit_command(CLI::App& app) {
  struct State {
    std::string plan, from, output;
  };
  auto s = std::make_shared<State>();
  app.add_option("plan", s->plan, "plan file (may be weight-stripped)")->required();
  app.add_option("--from", s->from, "ONNX model of the same architecture holding the new weights")->required();
  app.add_option("-o,--output", s->output, "refitted plan to write")->required();
  return [s]() {
    if (Status st = check_output_path(s->output); !st.ok()) return report_error(st);  // before the refit
    auto refitter = Refitter::open_plan(s->plan);
    if (!refitter.ok()) return report_error(refitter.status());
    Refitter& r = **refitter;
    Status st = r.set_weights_from_onnx(s->from);
    if (st.ok()) st = r.refit();
    if (st.ok()) st = r.write_plan(s->output);
    if (!st.ok()) return report_error(st);
    uint64_t bytes = 0;
    auto weights = r.weights();
    for (const auto& w : weights) bytes += dtype_size(w.dtype) * static_cast<uint64_t>(dims_numel(w.dims));
    std::printf("refitted %zu weights (%s) of %s from %s -> %s\n", weights.size(), format_bytes(bytes).c_str(),
                s->plan.c_str(), s->from.c_str(), s->output.c_str());
    return 0;
  };
}

}  // namespace streamrt::cli

// RuntimeOptions::step_times_path: when a context goes away, its measured per-step GPU times (mean
// over the eager runs after the first) are appended to that file as JSON lines, next to the residency
// planner's estimates for the same step and the streamable weights it reads. One header line per
// context, then one line per step:
//   {"engine":"...","budget":B,"streamed_bytes":S,"resident_bytes":R,"steps":N,"bandwidth":BW}
//   {"step":i,"op":"MatMul","dims":[1,2048,4096],"device":1,"ms":0.41,"est_ms":0.27,
//    "est_small_ms":0.01,"weights":[[w,bytes,resident]]}
// It is the data for checking (and tuning) the planner's device model against the GPU.
#include "backends/cuda/cuda_step_times.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/logging.h"

namespace streamrt::cuda {
namespace {

// A JSON string literal (invalid UTF-8 replaced, never thrown).
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void write_step_times(const EngineState& es, const CudaEngineState& ces, const StepProfiler& profiler,
                      const std::vector<Dims>& output_dims) {
  const std::string& path = profiler.step_times_path();
  if (path.empty()) return;
  const std::vector<double> ms = profiler.step_means();
  const plan::PlanData& p = es.plan.data;
  std::FILE* f = std::fopen(path.c_str(), "a");
  if (!f) {
    log_warning("step times: cannot open '" + path + "' for appending");
    return;
  }
  const DeviceProfile device = cuda_profile();
  std::fprintf(f, "{\"engine\":%s,\"budget\":%llu,\"streamed_bytes\":%llu,\"resident_bytes\":%llu,\"steps\":%zu,\"bandwidth\":%.6g}\n",
               quoted(p.name).c_str(), static_cast<unsigned long long>(es.budget),
               static_cast<unsigned long long>(ces.residency.streamed_bytes),
               static_cast<unsigned long long>(ces.residency.resident_bytes), p.steps.size(), device.stream_bandwidth);
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const ir::Node& step = p.steps[s];
    std::string dims;
    if (!step.outputs.empty() && step.outputs[0] >= 0 && static_cast<size_t>(step.outputs[0]) < output_dims.size())
      for (int64_t d : output_dims[step.outputs[0]]) {
        if (!dims.empty()) dims += ',';
        dims += std::to_string(d);
      }
    std::string weights;
    for (int32_t v : step.inputs) {
      if (v < 0 || p.values[v].kind != plan::ValueEntry::Kind::kWeight) continue;
      const int32_t w = p.values[v].weight_index;
      if (!p.weights[w].streamable) continue;
      const bool resident = w < static_cast<int32_t>(ces.residency.resident.size()) && ces.residency.resident[w];
      char item[64];
      std::snprintf(item, sizeof item, "%s[%d,%llu,%d]", weights.empty() ? "" : ",", w,
                    static_cast<unsigned long long>(p.weights[w].size), resident ? 1 : 0);
      weights += item;
    }
    std::fprintf(f, "{\"step\":%zu,\"op\":%s,\"dims\":[%s],\"device\":%d,\"ms\":%.6g,\"est_ms\":%.6g,\"est_small_ms\":%.6g,\"weights\":[%s]}\n",
                 s, quoted(step.op_type).c_str(), dims.c_str(), ces.host_step[s] ? 0 : 1, s < ms.size() ? ms[s] : 0.0,
                 1e3 * estimate_step_seconds(p, s, device), 1e3 * estimate_step_seconds(p, s, device, true),
                 weights.c_str());
  }
  std::fclose(f);
}

}  // namespace streamrt::cuda

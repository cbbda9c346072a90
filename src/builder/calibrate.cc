#include "builder/calibrate.h"

#include <algorithm>

#include "builder/build_steps.h"
#include "ops/common.h"
#include "ops/gemm_util.h"
#include "plan/plan.h"
#include "runtime/device_backend.h"
#include "streamrt/runtime.h"

namespace streamrt::builder {
namespace {

// Statistics held at once (K x K floats per value): statistics_groups() splits the values so.
constexpr uint64_t kStatisticsBytes = uint64_t{2} << 30;

// The calibration build: the same graph on the CPU, nothing streamed, quantized or timed.
BuilderConfig cpu_config(const BuilderConfig& c) {
  BuilderConfig cpu;
  cpu.device = DeviceType::kCpu;
  cpu.shapes = c.shapes;
  cpu.profiles = c.profiles;
  cpu.float_precision = c.float_precision;
  cpu.tactics = false;
  cpu.max_nodes = c.max_nodes;
  cpu.max_tensor_elements = c.max_tensor_elements;
  cpu.passes = c.passes;
  cpu.passes.step_timing = false;
  return cpu;
}

Result<std::shared_ptr<Engine>> calibration_engine(const ir::Graph& g, const std::vector<ir::ValueId>& values,
                                                   const std::unordered_map<ir::ValueId, InputProfile>& profiles,
                                                   const BuilderConfig& config) {
  PreparedGraph prepared;
  prepared.graph = g;
  for (ir::ValueId v : values)  // graph inputs are read from the samples themselves
    if (std::find(g.outputs.begin(), g.outputs.end(), v) == g.outputs.end() &&
        std::find(g.inputs.begin(), g.inputs.end(), v) == g.inputs.end())
      prepared.graph.outputs.push_back(v);
  prepared.profiles = profiles;
  DeviceBackend* cpu = find_device_backend(DeviceType::kCpu);
  if (!cpu) return unsupported("calibration runs the model on the CPU, and this build has no CPU backend");
  prepared.device = cpu->info();
  SRT_RETURN_IF_ERROR(materialize_outputs(prepared.graph));
  const BuilderConfig cc = cpu_config(config);
  SRT_ASSIGN_OR_RETURN(plan::PlanData plan, finish_plan(prepared, cc, nullptr));
  SRT_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, plan::serialize_plan(plan));
  SRT_ASSIGN_OR_RETURN(std::unique_ptr<Runtime> rt, Runtime::create(RuntimeOptions{DeviceType::kCpu}));
  return rt->load_engine_bytes(std::move(bytes));
}

// Binds sample `i`'s tensors to the inputs and host buffers to the outputs.
Status bind_sample(const Engine& e, ExecutionContext& ctx, const std::map<std::string, Tensor>& sample, size_t i,
                   std::map<std::string, Tensor>& outputs) {
  const std::string where = "calibration sample " + std::to_string(i);
  const std::vector<TensorDesc> io = e.io_tensors();
  size_t used = 0;
  for (const TensorDesc& d : io) {
    if (!d.is_input) continue;
    auto it = sample.find(d.name);
    if (it == sample.end()) return invalid_argument(where + " has no tensor for input '" + d.name + "'");
    ++used;
    const Tensor t = uint16_bits_as(it->second, d.dtype);
    if (t.dtype() != d.dtype)
      return invalid_argument(where + ": input '" + d.name + "' is " + dtype_name(d.dtype) + ", the sample holds " +
                              dtype_name(t.dtype()));
    SRT_RETURN_IF_ERROR(ctx.set_input_shape(d.name, t.dims()).with_context(where));
    SRT_RETURN_IF_ERROR(ctx.set_tensor_address(d.name, const_cast<void*>(t.data()), t.nbytes()));
  }
  if (used != sample.size())
    for (const auto& entry : sample) {  // (a structured binding: clang 14 cannot capture one)
      const std::string& name = entry.first;
      if (std::none_of(io.begin(), io.end(), [&](const TensorDesc& d) { return d.is_input && d.name == name; }))
        return invalid_argument(where + " names '" + name + "', which is not an input of the model");
    }
  for (const TensorDesc& d : io) {
    if (d.is_input) continue;
    auto dims = ctx.tensor_shape(d.name);
    if (!dims.ok() && d.max.empty()) return dims.status().with_context(where);
    SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::allocate(d.dtype, dims.ok() ? *dims : d.max));
    SRT_RETURN_IF_ERROR(ctx.set_tensor_address(d.name, t.mutable_data(), t.nbytes()));
    outputs[d.name] = std::move(t);
  }
  return ok_status();
}

// X^T X += the rows of `out` (of `dims`: an output's buffer has room for the max).
Status accumulate(const std::string& name, const Tensor& out, const Dims& dims, InputStatistics& s) {
  if (dims.empty() || dims.back() != s.k)
    return internal_error("calibration: '" + name + "' is " + dims_to_string(dims) + ", expected a last dim of " +
                          std::to_string(s.k));
  const int64_t rows = dims_numel(dims) / s.k;
  if (rows == 0) return ok_status();
  std::vector<float> widened;  // half types as floats; float32 is read in place
  const float* x = out.dtype() == DataType::kFloat32 ? out.data_as<float>() : nullptr;
  if (!x) {
    widened.resize(static_cast<size_t>(rows * s.k));
    SRT_RETURN_IF_ERROR(ops::dispatch<ops::kFloats>(out.dtype(), "calibration: '" + name + "'", [&]<typename T>() -> Status {
      const T* p = out.data_as<T>();
      for (size_t i = 0; i < widened.size(); ++i) widened[i] = static_cast<float>(ops::load(p[i]));
      return ok_status();
    }));
    x = widened.data();
  }
  return ops::sgemm(true, false, s.k, s.k, rows, 1.f, x, s.k, x, s.k, 1.f, s.xtx.data(), s.k);
}

}  // namespace

std::vector<std::map<ir::ValueId, int64_t>> statistics_groups(const std::map<ir::ValueId, int64_t>& values) {
  std::vector<std::map<ir::ValueId, int64_t>> groups;
  uint64_t bytes = 0;
  for (const auto& [v, k] : values) {
    const uint64_t need = static_cast<uint64_t>(k) * static_cast<uint64_t>(k) * sizeof(float);
    if (groups.empty() || bytes + need > kStatisticsBytes) {
      groups.emplace_back();
      bytes = 0;
    }
    groups.back().emplace(v, k);
    bytes += need;
  }
  return groups;
}

Result<std::map<ir::ValueId, InputStatistics>> collect_input_statistics(
    const ir::Graph& g, const std::map<ir::ValueId, int64_t>& values,
    const std::unordered_map<ir::ValueId, InputProfile>& profiles, const BuilderConfig& config) {
  std::map<ir::ValueId, InputStatistics> stats;
  std::vector<ir::ValueId> group;
  for (const auto& [v, k] : values) {
    InputStatistics& s = stats[v];
    s.k = k;
    s.xtx.assign(static_cast<size_t>(k * k), 0.f);
    group.push_back(v);
  }
  if (group.empty()) return stats;
  SRT_ASSIGN_OR_RETURN(std::shared_ptr<Engine> engine, calibration_engine(g, group, profiles, config));
  SRT_ASSIGN_OR_RETURN(std::unique_ptr<ExecutionContext> ctx, engine->create_execution_context());
  const auto& samples = config.weight_quant.calibration;
  for (size_t i = 0; i < samples.size(); ++i) {
    std::map<std::string, Tensor> outputs;
    SRT_RETURN_IF_ERROR(bind_sample(*engine, *ctx, samples[i], i, outputs));
    SRT_RETURN_IF_ERROR(ctx->execute().with_context("calibration sample " + std::to_string(i)));
    for (ir::ValueId v : group) {
      const std::string& name = g.value(v).name;
      if (std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end()) {  // read from the sample
        const Tensor& in = samples[i].at(name);
        SRT_RETURN_IF_ERROR(accumulate(name, in, in.dims(), stats.at(v)));
        continue;
      }
      SRT_ASSIGN_OR_RETURN(Dims dims, ctx->tensor_shape(name));
      SRT_RETURN_IF_ERROR(accumulate(name, outputs.at(name), dims, stats.at(v)));
    }
  }
  return stats;
}

}  // namespace streamrt::builder

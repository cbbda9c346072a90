#include "builder/step_timing.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "builder/progress.h"
#include "core/logging.h"
#include "ops/op.h"
#include "runtime/timing_engine.h"

namespace streamrt::builder {
namespace {

constexpr int kTimedRuns = 3;    // per-step timing, after one untimed run
constexpr int kMinShapeRuns = 9;  // whole runs at the min shapes (median), after one untimed run

enum class Shapes { kMax, kMin, kOpt };

// A KV cache stored in place: the output its appending step writes into the buffer of the input
// it reads (the ops that declare both an input and an output with a capacity, KvAppend), as a
// decode loop binds them.
std::map<int32_t, int32_t> cache_pairs(const plan::PlanData& plan) {
  std::map<int32_t, int32_t> out_to_in;
  for (const ir::Node& step : plan.steps) {
    const ops::OpSchema* s = ops::schema_of(step);
    if (!s || !s->capacity_layouts) continue;
    int32_t in = -1, out = -1;
    for (const ops::CapacityLayout& c : s->capacity_layouts(step)) {
      const std::vector<int32_t>& slots = c.output ? step.outputs : step.inputs;
      if (c.index >= 0 && static_cast<size_t>(c.index) < slots.size()) (c.output ? out : in) = slots[c.index];
    }
    if (in >= 0 && out >= 0) out_to_in[out] = in;
  }
  return out_to_in;
}

// Binds zero-filled inputs at the profile's max, min or opt dims (a KV cache with its capacity,
// presents sharing their pasts' buffers), and outputs sized for them.
Result<std::vector<DeviceBuffer>> bind_zeros(Engine& engine, ExecutionContext& ctx, const plan::PlanData& plan,
                                             Shapes at) {
  std::vector<DeviceBuffer> buffers;
  std::map<int32_t, std::pair<void*, uint64_t>> bound;  // input value -> its buffer
  const std::vector<TensorDesc> descs = engine.io_tensors();
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    const plan::IoTensor& io = plan.inputs[i];
    Dims dims = at == Shapes::kMin ? io.min : at == Shapes::kOpt ? io.opt : io.max;
    if (dims.empty()) dims = io.dims;
    if (!dims_static(dims)) return invalid_argument("input '" + io.name + "' has no static profile dims to time at");
    const uint64_t bytes = descs[i].storage_bytes(dims);
    if (bytes == UINT64_MAX) return invalid_argument("input '" + io.name + "' is too large to time");
    SRT_RETURN_IF_ERROR(ctx.set_input_shape(io.name, dims));
    SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(engine.device(), bytes));
    std::vector<uint8_t> zeros(bytes, 0);
    SRT_RETURN_IF_ERROR(b.copy_from_host(zeros.data(), bytes));
    SRT_RETURN_IF_ERROR(ctx.set_tensor_address(io.name, b.data(), bytes));
    bound[io.value] = {b.data(), bytes};
    buffers.push_back(std::move(b));
  }
  const std::map<int32_t, int32_t> pairs = cache_pairs(plan);
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const plan::IoTensor& io = plan.outputs[i];
    if (auto p = pairs.find(io.value); p != pairs.end() && bound.count(p->second)) {
      const auto [data, bytes] = bound.at(p->second);
      SRT_RETURN_IF_ERROR(ctx.set_tensor_address(io.name, data, bytes));
      continue;
    }
    SRT_ASSIGN_OR_RETURN(Dims dims, ctx.tensor_shape(io.name));
    for (int64_t& d : dims) d = std::max<int64_t>(d, 0);
    const uint64_t bytes = descs[plan.inputs.size() + i].storage_bytes(dims);
    if (bytes == UINT64_MAX) return invalid_argument("output '" + io.name + "' is too large to time");
    SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(engine.device(), bytes));
    SRT_RETURN_IF_ERROR(ctx.set_tensor_address(io.name, b.data(), bytes));
    buffers.push_back(std::move(b));
  }
  return buffers;
}

// Mean ms per step over kTimedRuns eager runs at the max shapes.
Result<std::vector<float>> time_steps(Engine& engine, const plan::PlanData& plan, PhaseProgress& progress) {
  SRT_ASSIGN_OR_RETURN(auto ctx, engine.create_execution_context());
  SRT_ASSIGN_OR_RETURN(auto buffers, bind_zeros(engine, *ctx, plan, Shapes::kMax));
  ctx->set_step_timing(true);
  std::vector<float> sum(plan.steps.size(), 0.f);
  for (int run = 0; run <= kTimedRuns; ++run) {
    SRT_RETURN_IF_ERROR(ctx->execute());
    progress.advance();
    if (run == 0) continue;  // library initialization, first-touch of the arena
    SRT_ASSIGN_OR_RETURN(std::vector<double> ms, ctx->last_step_times_ms());
    for (size_t s = 0; s < sum.size() && s < ms.size(); ++s) sum[s] += static_cast<float>(ms[s] / kTimedRuns);
  }
  return sum;
}

// True for a decode build: an engine input stored as a KV cache with capacity
// (BuilderConfig::kv_cache_in_place).
bool stores_kv_cache(const plan::PlanData& plan) {
  return std::any_of(plan.inputs.begin(), plan.inputs.end(), [](const plan::IoTensor& io) { return io.seq_capacity > 0; });
}

// Median ms of one whole run at the min shapes (a decode build's: the opt shapes, where a long
// cache meets one new token), replayed as a CUDA graph (`*graph`) where the run can be captured,
// else eager (a run that cannot be captured is deployed eager too).
Result<float> time_min_run(Engine& engine, const plan::PlanData& plan, bool* graph, PhaseProgress& progress) {
  SRT_ASSIGN_OR_RETURN(auto ctx, engine.create_execution_context());
  SRT_ASSIGN_OR_RETURN(auto buffers, bind_zeros(engine, *ctx, plan, stores_kv_cache(plan) ? Shapes::kOpt : Shapes::kMin));
  *graph = ctx->set_cuda_graph(true).ok();
  Status first = ctx->execute();  // captures
  if (!first.ok() && *graph && first.code() == StatusCode::kUnsupported) {
    *graph = false;
    SRT_RETURN_IF_ERROR(ctx->set_cuda_graph(false));
    first = ctx->execute();
  }
  SRT_RETURN_IF_ERROR(first);
  std::vector<float> ms;
  for (int run = 0; run < kMinShapeRuns; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    SRT_RETURN_IF_ERROR(ctx->execute());
    ms.push_back(std::chrono::duration<float, std::milli>(std::chrono::steady_clock::now() - t0).count());
    progress.advance();
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

void time_plan_steps(plan::PlanData& plan, const BuilderConfig& config, BuildReport& report) {
  if (!config.passes.step_timing) {
    report.step_timing_note = "skipped (step timing off: BuilderConfig::passes.step_timing, --no-step-timing)";
    return;
  }
  const DeviceType device = config.device;
  const auto t0 = std::chrono::steady_clock::now();
  PhaseProgress progress(config, "step timing", kTimedRuns + 1 + kMinShapeRuns);
  auto measure = [&]() -> Status {
    SRT_ASSIGN_OR_RETURN(auto engine, EngineFactory::timing_engine(plan, device));
    SRT_ASSIGN_OR_RETURN(plan.step_ms, time_steps(*engine, plan, progress));
    // Not fatal: the max-shape times stand on their own.
    Result<float> min_run = time_min_run(*engine, plan, &report.min_run_graph, progress);
    if (min_run.ok()) plan.min_run_ms = *min_run;
    else log_warning("step timing: one run at the min shapes was not timed: " + min_run.status().to_string());
    return ok_status();
  };
  Status st = measure();
  report.step_timing_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    plan.step_ms.clear();
    plan.min_run_ms = 0;
    report.step_timing_note = "not measured: " + st.to_string() + " (the planner uses its estimates)";
    if (st.code() != StatusCode::kUnsupported) log_warning("step timing: " + report.step_timing_note);
    return;
  }
  report.steps_timed = true;
  for (float x : plan.step_ms) report.step_ms_total += x;
  report.min_run_ms = plan.min_run_ms;
}

}  // namespace streamrt::builder

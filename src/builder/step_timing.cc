#include "builder/step_timing.h"

#include <algorithm>
#include <chrono>

#include "builder/progress.h"
#include "core/logging.h"
#include "runtime/timing_engine.h"

namespace streamrt::builder {
namespace {

constexpr int kTimedRuns = 3;    // per-step timing, after one untimed run
constexpr int kMinShapeRuns = 9;  // whole runs at the min shapes (median), after one untimed run

// Binds zero-filled inputs at the profile's max (or `min`) dims, and outputs sized for them.
Result<std::vector<DeviceBuffer>> bind_zeros(Engine& engine, ExecutionContext& ctx, const plan::PlanData& plan,
                                             bool min) {
  std::vector<DeviceBuffer> buffers;
  for (const plan::IoTensor& io : plan.inputs) {
    Dims dims = min ? io.min : io.max;
    if (dims.empty()) dims = io.dims;
    uint64_t bytes = dtype_size(io.dtype);
    for (int64_t d : dims) {
      if (d < 0) return invalid_argument("input '" + io.name + "' has no static profile dims to time at");
      bytes *= static_cast<uint64_t>(d);
    }
    SRT_RETURN_IF_ERROR(ctx.set_input_shape(io.name, dims));
    SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(engine.device(), bytes));
    std::vector<uint8_t> zeros(bytes, 0);
    SRT_RETURN_IF_ERROR(b.copy_from_host(zeros.data(), bytes));
    SRT_RETURN_IF_ERROR(ctx.set_tensor_address(io.name, b.data(), bytes));
    buffers.push_back(std::move(b));
  }
  for (const plan::IoTensor& io : plan.outputs) {
    SRT_ASSIGN_OR_RETURN(Dims dims, ctx.tensor_shape(io.name));
    uint64_t bytes = dtype_size(io.dtype);
    for (int64_t d : dims) bytes *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
    SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(engine.device(), bytes));
    SRT_RETURN_IF_ERROR(ctx.set_tensor_address(io.name, b.data(), bytes));
    buffers.push_back(std::move(b));
  }
  return buffers;
}

// Mean ms per step over kTimedRuns eager runs at the max shapes.
Result<std::vector<float>> time_steps(Engine& engine, const plan::PlanData& plan, PhaseProgress& progress) {
  SRT_ASSIGN_OR_RETURN(auto ctx, engine.create_execution_context());
  SRT_ASSIGN_OR_RETURN(auto buffers, bind_zeros(engine, *ctx, plan, false));
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

// Median ms of one whole run at the min shapes, replayed as a CUDA graph (`*graph`) where the run
// can be captured, else eager (a run that cannot be captured is deployed eager too).
Result<float> time_min_run(Engine& engine, const plan::PlanData& plan, bool* graph, PhaseProgress& progress) {
  SRT_ASSIGN_OR_RETURN(auto ctx, engine.create_execution_context());
  SRT_ASSIGN_OR_RETURN(auto buffers, bind_zeros(engine, *ctx, plan, true));
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

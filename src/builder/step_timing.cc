#include "builder/step_timing.h"

#include <chrono>

#include "core/env.h"
#include "core/logging.h"
#include "runtime/timing_engine.h"

namespace streamrt::builder {
namespace {

constexpr int kTimedRuns = 3;  // after one untimed run

// Mean ms per step over kTimedRuns eager runs with every input at its profile's max dims, zero-filled.
Result<std::vector<float>> time_at(Engine& engine, const plan::PlanData& plan) {
  SRT_ASSIGN_OR_RETURN(auto ctx, engine.create_execution_context());
  std::vector<DeviceBuffer> buffers;
  for (const plan::IoTensor& io : plan.inputs) {
    Dims dims = io.max;
    if (dims.empty()) dims = io.dims;
    uint64_t bytes = dtype_size(io.dtype);
    for (int64_t d : dims) {
      if (d < 0) return invalid_argument("input '" + io.name + "' has no static profile dims to time at");
      bytes *= static_cast<uint64_t>(d);
    }
    SRT_RETURN_IF_ERROR(ctx->set_input_shape(io.name, dims));
    SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(engine.device(), bytes));
    std::vector<uint8_t> zeros(bytes, 0);
    SRT_RETURN_IF_ERROR(b.copy_from_host(zeros.data(), bytes));
    SRT_RETURN_IF_ERROR(ctx->set_tensor_address(io.name, b.data(), bytes));
    buffers.push_back(std::move(b));
  }
  for (const plan::IoTensor& io : plan.outputs) {
    SRT_ASSIGN_OR_RETURN(Dims dims, ctx->tensor_shape(io.name));
    uint64_t bytes = dtype_size(io.dtype);
    for (int64_t d : dims) bytes *= static_cast<uint64_t>(std::max<int64_t>(d, 0));
    SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(engine.device(), bytes));
    SRT_RETURN_IF_ERROR(ctx->set_tensor_address(io.name, b.data(), bytes));
    buffers.push_back(std::move(b));
  }
  ctx->set_step_timing(true);
  std::vector<float> sum(plan.steps.size(), 0.f);
  for (int run = 0; run <= kTimedRuns; ++run) {
    SRT_RETURN_IF_ERROR(ctx->execute());
    if (run == 0) continue;  // library initialization, first-touch of the arena
    SRT_ASSIGN_OR_RETURN(std::vector<double> ms, ctx->last_step_times_ms());
    for (size_t s = 0; s < sum.size() && s < ms.size(); ++s) sum[s] += static_cast<float>(ms[s] / kTimedRuns);
  }
  return sum;
}

}  // namespace

void time_plan_steps(plan::PlanData& plan, DeviceType device, BuildReport& report) {
  if (env_flag("STREAMRT_NO_STEP_TIMING")) {
    report.step_timing_note = "skipped (STREAMRT_NO_STEP_TIMING)";
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto measure = [&]() -> Status {
    SRT_ASSIGN_OR_RETURN(auto engine, EngineFactory::timing_engine(plan, device));
    SRT_ASSIGN_OR_RETURN(plan.step_ms, time_at(*engine, plan));
    return ok_status();
  };
  Status st = measure();
  report.step_timing_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!st.ok()) {
    plan.step_ms.clear();
    report.step_timing_note = "not measured: " + st.to_string() + " (the planner uses its estimates)";
    if (st.code() != StatusCode::kUnsupported) log_warning("step timing: " + report.step_timing_note);
    return;
  }
  report.steps_timed = true;
  for (float x : plan.step_ms) report.step_ms_total += x;
}

}  // namespace streamrt::builder

// Build-time step timing on the GPU: a weight-streaming build records every device step's time at
// the profile's max shapes (PlanData::step_ms) and one run's at the min shapes (min_run_ms) for the
// residency planner, ExecutionContext::set_step_timing reports a run's per-step times, and
// RuntimeOptions::step_times_path / stream_trace_path write their files.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "gpu_test_util.h"
#include "onnx_model_util.h"
#include "plan/plan.h"
#include "streaming_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

// 6 MatMuls [batch, 512] x [512, 512] float16 with a dynamic batch, profile 1..64.
Result<std::vector<uint8_t>> build_mlp(bool streaming, bool step_timing = true) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  const int n = 512, layers = 6;
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT16, {std::string("batch"), int64_t{n}});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT16, {std::string("batch"), int64_t{n}});
  std::vector<uint16_t> w(static_cast<size_t>(n) * n, 0x1400);  // 2^-10
  std::string prev = "x";
  for (int i = 0; i < layers; ++i) {
    *g->add_initializer() = f16_raw("w" + std::to_string(i), {n, n}, w);
    std::string out = i + 1 == layers ? "y" : "h" + std::to_string(i);
    add_node(g, "MatMul", "mm" + std::to_string(i), {prev, "w" + std::to_string(i)}, {out});
    prev = out;
  }
  auto path = std::filesystem::temp_directory_path() / ("srt_steptime_" + std::to_string(getpid()) + ".onnx");
  write_file(path, serialize(m));
  BuilderConfig c;
  c.device = DeviceType::kCuda;
  c.weight_streaming = streaming;
  c.min_streamable_bytes = 1024;
  c.profiles["x"] = {{1, n}, {16, n}, {64, n}};
  c.passes.step_timing = step_timing;
  BuildReport report;
  auto bytes = build_plan_from_onnx(path.string(), c, &report);
  std::filesystem::remove(path);
  if (bytes.ok() && streaming && step_timing) {
    EXPECT_TRUE(report.steps_timed) << report.step_timing_note;
    EXPECT_GT(report.step_ms_total, 0);
    EXPECT_GT(report.min_run_ms, 0);
    EXPECT_TRUE(report.min_run_graph);  // MatMuls alone: the run can be captured
  }
  return bytes;
}

plan::PlanData read_back(const std::vector<uint8_t>& bytes) {
  auto p = plan::read_plan_bytes(bytes.data(), bytes.size(), nullptr);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? p->data : plan::PlanData{};
}

TEST(GpuStepTiming, WeightStreamingBuildsRecordEveryMatMulsTime) {
  SRT_REQUIRE_GPU();
  auto bytes = build_mlp(true);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  plan::PlanData p = read_back(*bytes);
  ASSERT_EQ(p.step_ms.size(), p.steps.size());
  size_t matmuls = 0;
  for (size_t s = 0; s < p.steps.size(); ++s) {
    if (p.steps[s].op_type != "MatMul") continue;
    ++matmuls;
    EXPECT_GT(p.step_ms[s], 0.f) << "step " << s;
    EXPECT_LT(p.step_ms[s], 100.f) << "step " << s;  // milliseconds, not seconds or microseconds
  }
  EXPECT_EQ(matmuls, 6u);
  // One whole run at the min shapes (batch 1), replayed as a graph.
  EXPECT_GT(p.min_run_ms, 0.f);
  EXPECT_LT(p.min_run_ms, 100.f);
}

TEST(GpuStepTiming, NoTimesWithoutWeightStreamingOrWhenSwitchedOff) {
  SRT_REQUIRE_GPU();
  auto plain = build_mlp(false);
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  EXPECT_TRUE(read_back(*plain).step_ms.empty());
  EXPECT_EQ(read_back(*plain).min_run_ms, 0.f);
  auto off = build_mlp(true, false);
  ASSERT_TRUE(off.ok()) << off.status().to_string();
  EXPECT_TRUE(read_back(*off).step_ms.empty());
  EXPECT_EQ(read_back(*off).min_run_ms, 0.f);
}

TEST(GpuStepTiming, ContextsReportTheLastRunsStepTimes) {
  SRT_REQUIRE_GPU();
  auto bytes = build_mlp(true);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto rt = Runtime::create({DeviceType::kCuda});
  ASSERT_TRUE(rt.ok());
  auto e = (*rt)->load_engine_bytes(*bytes);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  auto ctx = (*e)->create_execution_context();
  ASSERT_TRUE(ctx.ok());
  auto x = DeviceBuffer::allocate(DeviceType::kCuda, 32 * 512 * 2);
  auto y = DeviceBuffer::allocate(DeviceType::kCuda, 32 * 512 * 2);
  ASSERT_TRUE(x.ok() && y.ok());
  std::vector<uint16_t> ones(32 * 512, 0x3c00);
  ASSERT_TRUE(x->copy_from_host(ones.data(), ones.size() * 2).ok());
  ASSERT_TRUE((*ctx)->set_input_shape("x", {32, 512}).ok());
  ASSERT_TRUE((*ctx)->set_tensor_address("x", x->data(), x->size()).ok());
  ASSERT_TRUE((*ctx)->set_tensor_address("y", y->data(), y->size()).ok());
  EXPECT_EQ((*ctx)->last_step_times_ms().status().code(), StatusCode::kInvalidState);  // nothing timed yet
  (*ctx)->set_step_timing(true);
  ASSERT_TRUE((*ctx)->execute().ok());
  auto ms = (*ctx)->last_step_times_ms();
  ASSERT_TRUE(ms.ok()) << ms.status().to_string();
  ASSERT_EQ(ms->size(), (*e)->num_steps());
  for (double t : *ms) EXPECT_GT(t, 0.0);  // every step is a device MatMul
  // The build's placeholder weights never reach a real engine: y = 1 * (512 * 2^-10)^6 = 2^-6 per element.
  std::vector<uint16_t> out(32 * 512);
  ASSERT_TRUE(y->copy_to_host(out.data(), out.size() * 2).ok());
  EXPECT_EQ(out[0], 0x2400);
  EXPECT_EQ(out.back(), 0x2400);
}

std::vector<std::string> lines_of(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The runtime's diagnostics reach its engines' contexts: a step-times file with a header and a
// line per step when the context goes away, a stream-trace line per profiled run.
TEST(GpuStepTiming, RuntimeOptionsWriteStepTimesAndStreamTrace) {
  SRT_REQUIRE_GPU();
  auto bytes = build_mlp(true);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  const auto dir = std::filesystem::temp_directory_path() / ("srt_diag_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  RuntimeOptions ro;
  ro.device = DeviceType::kCuda;
  ro.step_times_path = (dir / "steps.jsonl").string();
  ro.stream_trace_path = (dir / "trace.jsonl").string();
  auto rt = Runtime::create(ro);
  ASSERT_TRUE(rt.ok());
  auto e = (*rt)->load_engine_bytes(*bytes);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  ASSERT_TRUE((*e)->set_weight_streaming_budget(0).ok());  // every streamable weight streams: a trace to write
  {
    auto ctx = (*e)->create_execution_context();
    ASSERT_TRUE(ctx.ok());
    auto x = DeviceBuffer::allocate(DeviceType::kCuda, 8 * 512 * 2);
    auto y = DeviceBuffer::allocate(DeviceType::kCuda, 8 * 512 * 2);
    ASSERT_TRUE(x.ok() && y.ok());
    ASSERT_TRUE((*ctx)->set_input_shape("x", {8, 512}).ok());
    ASSERT_TRUE((*ctx)->set_tensor_address("x", x->data(), x->size()).ok());
    ASSERT_TRUE((*ctx)->set_tensor_address("y", y->data(), y->size()).ok());
    (*ctx)->set_streaming_profiling(true);
    for (int run = 0; run < 3; ++run) {  // the first is not counted in the means
      ASSERT_TRUE((*ctx)->execute().ok());
      ASSERT_TRUE((*ctx)->last_run_stats().ok());  // writes the run's trace line
    }
  }
  const auto steps = lines_of(dir / "steps.jsonl");
  ASSERT_EQ(steps.size(), 1 + (*e)->num_steps());
  EXPECT_NE(steps[0].find("\"engine\""), std::string::npos) << steps[0];
  EXPECT_NE(steps[1].find("\"op\":\"MatMul\""), std::string::npos) << steps[1];
  const auto trace = lines_of(dir / "trace.jsonl");
  EXPECT_EQ(trace.size(), 3u);
  if (!trace.empty()) EXPECT_NE(trace[0].find("\"streamed\":[["), std::string::npos) << trace[0];
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace streamrt

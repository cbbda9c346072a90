// Weight streaming on the CPU device: the Engine budget API, bitwise-identical outputs at every
// budget, and resident memory bounded by the budget for a plan mapped from a file.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <random>

#include "core/host_memory.h"
#include "onnx_model_util.h"
#include "plan/plan.h"
#include "streaming_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

std::shared_ptr<Engine> load_cpu(std::vector<uint8_t> bytes) {
  auto rt = Runtime::create(RuntimeOptions{DeviceType::kCpu});
  EXPECT_TRUE(rt.ok());
  auto e = (*rt)->load_engine_bytes(std::move(bytes));
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  return e.ok() ? *e : nullptr;
}

TEST(WeightStreaming, OutputsBitwiseIdenticalAtEveryBudgetOnCpu) {
  expect_bitwise_identical_at_budgets(DeviceType::kCpu);
}

// A plan mapped from a file streams through the worker that maps the next streamed step's pages
// while a step computes: repeated runs at several budgets match the plain engine bitwise, count
// every streamed byte, and time the mapping (copy) apart from the wait for it (stall).
TEST(WeightStreaming, FileBackedCpuStreamingMapsAheadAndMatchesBitwise) {
  auto inputs = fixture_inputs("tiny_llama");
  auto plain_bytes = build_fixture("tiny_llama", DeviceType::kCpu, false, inputs);
  auto ws_bytes = build_fixture("tiny_llama", DeviceType::kCpu, true, inputs);
  ASSERT_TRUE(plain_bytes.ok() && ws_bytes.ok());
  const auto path = std::filesystem::temp_directory_path() / ("srt_ws_file_" + std::to_string(getpid()) + ".plan");
  write_file(path, std::string(ws_bytes->begin(), ws_bytes->end()));
  auto rt = Runtime::create(RuntimeOptions{DeviceType::kCpu});
  ASSERT_TRUE(rt.ok());
  auto ws = (*rt)->load_engine(path.string());
  ASSERT_TRUE(ws.ok()) << ws.status().to_string();
  auto plain = load_cpu(std::move(plain_bytes).value());
  ASSERT_TRUE(plain);
  auto expected = run_once(*plain, inputs);
  ASSERT_TRUE(expected.ok());
  const uint64_t streamable = (*ws)->streamable_weights_size();
  ASSERT_GT(streamable, 0u);
  for (uint64_t budget : {uint64_t{0}, streamable / 4, streamable / 2}) {
    ASSERT_TRUE((*ws)->set_weight_streaming_budget(budget).ok());
    for (int run = 0; run < 2; ++run) {
      SCOPED_TRACE("budget " + std::to_string(budget) + " run " + std::to_string(run));
      StreamingStats stats;
      auto got = run_once(**ws, inputs, &stats);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_EQ(*got, *expected);
      EXPECT_GE(stats.bytes_streamed, streamable - budget);
      EXPECT_GT(stats.copy_ms, 0.0);
      EXPECT_GE(stats.stall_ms, 0.0);
      EXPECT_LE(stats.stall_ms, stats.run_ms);
    }
  }
  ws->reset();
  std::filesystem::remove(path);
}

TEST(WeightStreaming, BudgetApiSemantics) {
  auto inputs = fixture_inputs("squeezenet1_1");
  auto plain = load_cpu(*build_fixture("squeezenet1_1", DeviceType::kCpu, false, inputs));
  auto ws = load_cpu(*build_fixture("squeezenet1_1", DeviceType::kCpu, true, inputs));
  ASSERT_TRUE(plain && ws);
  // Without the flag nothing is streamable and a budget is refused.
  EXPECT_EQ(plain->streamable_weights_size(), 0u);
  EXPECT_EQ(plain->weight_streaming_scratch_size(), 0u);
  EXPECT_EQ(plain->set_weight_streaming_budget(0).code(), StatusCode::kUnsupported);

  const uint64_t streamable = ws->streamable_weights_size();
  EXPECT_GT(streamable, ws->weights_size() / 2);
  EXPECT_LE(streamable, ws->weights_size());
  // After load the budget is the automatic one (this host has far more memory than 5 MiB).
  EXPECT_EQ(ws->weight_streaming_budget(), ws->weight_streaming_automatic_budget());
  EXPECT_EQ(ws->weight_streaming_budget(), streamable);
  EXPECT_EQ(ws->weight_streaming_scratch_size(), 0u);  // nothing streams
  // Clamped to the streamable size.
  ASSERT_TRUE(ws->set_weight_streaming_budget(UINT64_MAX).ok());
  EXPECT_EQ(ws->weight_streaming_budget(), streamable);
  // Budget 0: scratch appears and is part of device_memory_size().
  ASSERT_TRUE(ws->set_weight_streaming_budget(0).ok());
  EXPECT_GT(ws->weight_streaming_scratch_size(), 0u);
  EXPECT_EQ(ws->device_memory_size(), plain->device_memory_size() + ws->weight_streaming_scratch_size());
  // No change while a context exists; the budget in force stays.
  {
    auto ctx = ws->create_execution_context();
    ASSERT_TRUE(ctx.ok());
    EXPECT_EQ(ws->num_execution_contexts(), 1u);
    Status st = ws->set_weight_streaming_budget(streamable / 2);
    EXPECT_EQ(st.code(), StatusCode::kInvalidState);
    EXPECT_NE(st.message().find("context"), std::string::npos) << st.message();
    EXPECT_EQ(ws->weight_streaming_budget(), 0u);
  }
  EXPECT_EQ(ws->num_execution_contexts(), 0u);
  EXPECT_TRUE(ws->set_weight_streaming_budget(streamable / 2).ok());
}

TEST(WeightStreaming, NeedsAStronglyTypedNetwork) {
  BuilderConfig c;
  c.weight_streaming = true;
  c.float_precision = DataType::kFloat16;
  c.shapes["input"] = {1, 784};
  auto r = build_plan_from_onnx(kFixtureModels + "/mlp/model.onnx", c);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("strongly typed"), std::string::npos) << r.status().message();
}

// Step timing needs a device that times steps: a CPU build goes on without it, says why, and the
// plan keeps no times (the planner uses its estimates); step timing switched off is reported too.
TEST(WeightStreaming, CpuBuildsRecordNoStepTimesAndSayWhy) {
  BuilderConfig c;
  c.weight_streaming = true;
  c.shapes["input"] = {1, 784};
  for (bool switched_off : {false, true}) {
    c.passes.step_timing = !switched_off;
    BuildReport rep;
    auto bytes = build_plan_from_onnx(kFixtureModels + "/mlp/model.onnx", c, &rep);
    ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
    EXPECT_FALSE(rep.steps_timed);
    EXPECT_NE(rep.step_timing_note.find(switched_off ? "--no-step-timing" : "needs the CUDA device"),
              std::string::npos)
        << rep.step_timing_note;
    auto p = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_TRUE(p->data.step_ms.empty());
  }
}

TEST(WeightStreaming, OnlyLargeWeightOperandsOfHeavyOpsStream) {
  auto inputs = fixture_inputs("tiny_llama");
  auto bytes = build_fixture("tiny_llama", DeviceType::kCpu, true, inputs);
  ASSERT_TRUE(bytes.ok());
  auto lp = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(lp.ok());
  const plan::PlanData& p = lp->data;
  size_t streamable = 0;
  for (size_t w = 0; w < p.weights.size(); ++w) {
    if (!p.weights[w].streamable) continue;
    ++streamable;
    EXPECT_GE(p.weights[w].size, 1024u);
    // Every consumer is a MatMul / Gemm / Conv / Gather.
    for (const auto& step : p.steps)
      for (int32_t v : step.inputs) {
        if (v < 0 || p.values[v].weight_index != static_cast<int32_t>(w)) continue;
        EXPECT_TRUE(step.op_type == "MatMul" || step.op_type == "Gemm" || step.op_type == "Conv" ||
                      step.op_type == "Gather")
              << step.op_type << " reads streamable " << p.weights[w].name;
      }
  }
  EXPECT_GT(streamable, 0u);
}

// A chain of `layers` MatMuls with [n, n] float weights, written as an ONNX file.
void write_matmul_chain(const std::string& path, int layers, int n) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, int64_t{n}});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, int64_t{n}});
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.f / n, 1.f / n);
  std::vector<float> w(static_cast<size_t>(n) * n);
  std::string prev = "x";
  for (int i = 0; i < layers; ++i) {
    for (float& f : w) f = u(rng);
    std::string wn = "w" + std::to_string(i), out = i + 1 == layers ? "y" : "h" + std::to_string(i);
    *g->add_initializer() = f32_raw(wn, {n, n}, w);
    add_node(g, "MatMul", "mm" + std::to_string(i), {prev, wn}, {out});
    prev = out;
  }
  write_file(path, serialize(m));
}

// [ids] -> Gather(table [vocab, n]) -> MatMul(w [n, n]) -> y: an embedding that only a Gather reads.
void write_embedding_model(const std::string& path, int vocab, int n) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "ids", onnx::TensorProto_DataType_INT64, {int64_t{1}, int64_t{4}});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, int64_t{4}, int64_t{n}});
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> table(static_cast<size_t>(vocab) * n), w(static_cast<size_t>(n) * n);
  for (float& f : table) f = u(rng);
  for (float& f : w) f = u(rng) / n;
  *g->add_initializer() = f32_raw("table", {vocab, n}, table);
  *g->add_initializer() = f32_raw("w", {n, n}, w);
  add_node(g, "Gather", "embed", {"table", "ids"}, {"h"});
  add_node(g, "MatMul", "proj", {"h", "w"}, {"y"});
  write_file(path, serialize(m));
}

std::map<std::string, Tensor> embedding_ids(int vocab) {
  Tensor ids = *Tensor::allocate(DataType::kInt64, {1, 4});
  const int64_t rows[4] = {3, vocab / 2, vocab - 1, 3};
  std::copy(rows, rows + 4, ids.mutable_data_as<int64_t>());
  return {{"ids", std::move(ids)}};
}

// Builds `onnx_path` into a weight-streaming CPU plan at `plan_path` in a child process, so that
// this process never holds the weights (its pages would count in later children's resident set).
void build_in_child(const std::string& onnx_path, const std::string& plan_path) {
  pid_t pid = fork();
  if (pid == 0) {
    BuilderConfig c;
    c.weight_streaming = true;
    _exit(build_plan_file(onnx_path, c, plan_path).ok() ? 0 : 1);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

// Peak resident memory of a child process that loads `plan` and runs it twice at `budget`,
// above its resident memory before loading; -1 on failure.
int64_t child_peak_growth(const std::string& plan_path, const std::string& budget,
                          const std::map<std::string, Tensor>& in) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    int64_t growth = -1;
    uint64_t before = current_rss();
    auto rt = Runtime::create(RuntimeOptions{DeviceType::kCpu});
    auto e = rt.ok() ? (*rt)->load_engine(plan_path) : Result<std::shared_ptr<Engine>>(rt.status());
    if (e.ok() && (*e)->set_weight_streaming_budget(budget_bytes(**e, budget)).ok()) {
      bool ok = run_once(**e, in).ok() && run_once(**e, in).ok();
      if (ok) growth = static_cast<int64_t>(peak_rss()) - static_cast<int64_t>(before);
    }
    (void)!write(fds[1], &growth, sizeof growth);
    _exit(0);
  }
  close(fds[1]);
  int64_t growth = -1;
  if (read(fds[0], &growth, sizeof growth) != sizeof growth) growth = -1;
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return growth;
}

TEST(WeightStreaming, CpuResidentMemoryStaysNearTheBudget) {
  auto dir = std::filesystem::temp_directory_path() / ("srt_ws_rss_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string onnx_path = (dir / "chain.onnx").string(), plan_path = (dir / "chain.plan").string();
  write_matmul_chain(onnx_path, 24, 1024);  // 24 x 4 MiB = 96 MiB of weights
  build_in_child(onnx_path, plan_path);
  const int64_t plan_size = static_cast<int64_t>(std::filesystem::file_size(plan_path));
  ASSERT_GT(plan_size, 96 << 20);

  std::map<std::string, Tensor> in;
  in["x"] = *Tensor::allocate(DataType::kFloat32, {1, 1024});
  int64_t streamed = child_peak_growth(plan_path, "0", in);
  int64_t resident = child_peak_growth(plan_path, "100%", in);
  std::filesystem::remove_all(dir);
  ASSERT_GE(streamed, 0);
  ASSERT_GE(resident, 0);
  // Everything resident: the weights are all in memory (the measurement sees them)...
  EXPECT_GT(resident, plan_size * 9 / 10) << "resident growth " << resident;
  // ...streaming them all keeps a window of two steps' weights mapped (the step that runs and the
  // next one, which the worker maps meanwhile): the rest of the plan, less a step of slack for
  // what differs between the two runs, never becomes resident. Relative to the resident run, so
  // that what both hold alike (libraries, buffers, a sanitizer's shadow and quarantine) cancels.
  const int64_t step_weights = 4 << 20;
  EXPECT_GT(resident - streamed, plan_size - 3 * step_weights)
      << "streamed growth " << streamed << ", resident growth " << resident << ", plan " << plan_size;
#ifndef __SANITIZE_ADDRESS__  // ASan's quarantine keeps freed heap resident, a run's worth of it
  EXPECT_LT(streamed, plan_size / 4) << "streamed growth " << streamed << " of a " << plan_size << "-byte plan";
#endif
}

// A table that only a Gather reads is read in place outside the budget: never mapped in whole,
// not counted as streamed, outputs bitwise those of the resident engine. Tables take what budget
// the streamed weights leave.
TEST(WeightStreaming, CpuGatherTableIsReadInPlaceOutsideTheBudget) {
  auto dir = std::filesystem::temp_directory_path() / ("srt_ws_gather_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string onnx_path = (dir / "embed.onnx").string(), plan_path = (dir / "embed.plan").string();
  constexpr int kVocab = 4096, kN = 256;  // a 4 MiB table, a 256 KiB projection
  write_embedding_model(onnx_path, kVocab, kN);
  build_in_child(onnx_path, plan_path);
  auto rt = Runtime::create(RuntimeOptions{DeviceType::kCpu});
  ASSERT_TRUE(rt.ok());
  auto e = (*rt)->load_engine(plan_path);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  const uint64_t table_bytes = uint64_t{kVocab} * kN * 4, w_bytes = uint64_t{kN} * kN * 4;
  ASSERT_EQ((*e)->streamable_weights_size(), table_bytes + w_bytes);
  const auto in = embedding_ids(kVocab);
  ASSERT_TRUE((*e)->set_weight_streaming_budget(table_bytes + w_bytes).ok());
  auto expected = run_once(**e, in);  // everything resident
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  struct Point {
    uint64_t budget, streamed, in_place;
  };
  for (const Point& pt : {Point{0, w_bytes, table_bytes}, Point{w_bytes, 0, table_bytes},
                          Point{table_bytes + w_bytes, 0, 0}}) {
    SCOPED_TRACE("budget " + std::to_string(pt.budget));
    ASSERT_TRUE((*e)->set_weight_streaming_budget(pt.budget).ok());
    const ResidencyPlan plan = find_device_backend(DeviceType::kCpu)->residency((*e)->state(), pt.budget);
    EXPECT_EQ(plan.zero_copy_bytes, pt.in_place);
    for (int run = 0; run < 2; ++run) {
      StreamingStats stats;
      auto got = run_once(**e, in, &stats);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_EQ(*got, *expected);
      EXPECT_EQ(stats.bytes_streamed, pt.streamed);
    }
  }
  e->reset();
  std::filesystem::remove_all(dir);
}

// ...and a run gathering 4 rows of a 64 MiB table at budget 0 never maps the whole table in.
TEST(WeightStreaming, CpuGatherFromATableOutsideTheBudgetKeepsItOutOfMemory) {
  auto dir = std::filesystem::temp_directory_path() / ("srt_ws_gather_rss_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string onnx_path = (dir / "embed.onnx").string(), plan_path = (dir / "embed.plan").string();
  constexpr int kVocab = 16384, kN = 1024;  // 64 MiB table, 4 MiB projection
  write_embedding_model(onnx_path, kVocab, kN);
  build_in_child(onnx_path, plan_path);
  const auto in = embedding_ids(kVocab);
  const int64_t streamed = child_peak_growth(plan_path, "0", in);
  const int64_t resident = child_peak_growth(plan_path, "100%", in);
  std::filesystem::remove_all(dir);
  ASSERT_GE(streamed, 0);
  ASSERT_GE(resident, 0);
  // A resident table is read in place as well (its pages come in as rows are gathered and stay):
  // streaming holds no more than that, give or take the projection's 4 MiB, never the whole table.
  const int64_t table = int64_t{kVocab} * kN * 4;
  EXPECT_LT(streamed, resident + (int64_t{4} << 20)) << "streamed growth " << streamed << ", resident " << resident;
#ifdef __SANITIZE_ADDRESS__
  // ASan's quarantine keeps the freed scratch of both runs resident (34 MB in CI): a looser bound,
  // still below what mapping the whole table would cost.
  const int64_t bound = table * 3 / 4;
#else
  const int64_t bound = table / 2;
#endif
  EXPECT_LT(streamed, bound) << "streamed growth " << streamed << " with a " << table << "-byte table";
}

}  // namespace
}  // namespace streamrt

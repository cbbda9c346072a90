// Weight streaming on the CUDA device: bitwise-identical outputs at every budget, and device
// memory measured around load and run never holding more weights than budget + scratch.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>

#include "gpu_test_util.h"
#include "onnx_model_util.h"
#include "streaming_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

TEST(GpuWeightStreaming, OutputsBitwiseIdenticalAtEveryBudget) {
  SRT_REQUIRE_GPU();
  expect_bitwise_identical_at_budgets(DeviceType::kCuda);
}

int64_t used_device_memory() {
  size_t free = 0, total = 0;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  return static_cast<int64_t>(total - free);
}

// Builds `m` for CUDA (with weight streaming when asked) through a temporary ONNX file.
std::vector<uint8_t> build_cuda_plan(const onnx::ModelProto& m, bool streaming, const std::string& tag) {
  auto path = std::filesystem::temp_directory_path() / ("srt_gpu_" + tag + "_" + std::to_string(getpid()) + ".onnx");
  write_file(path, serialize(m));
  BuilderConfig c;
  c.device = DeviceType::kCuda;
  c.weight_streaming = streaming;
  auto bytes = build_plan_from_onnx(path.string(), c);
  std::filesystem::remove(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  return bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>{};
}

// 16 MatMuls with [1024, 1024] float16 weights (2 MiB each, 32 MiB in all). `unit_gain`: weights
// of magnitude 2^-5..2^-4, so an input of magnitude ~1 keeps it through the chain (the default's
// small weights take any input to zeros).
std::vector<uint8_t> build_chain(bool streaming, bool unit_gain = false) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  const int n = 1024, layers = 16;
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT16, {int64_t{8}, int64_t{n}});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT16, {int64_t{8}, int64_t{n}});
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> u(0, 0x1fff);  // small positive and negative halves
  std::vector<uint16_t> w(static_cast<size_t>(n) * n);
  std::string prev = "x";
  for (int i = 0; i < layers; ++i) {
    for (auto& h : w)
      h = static_cast<uint16_t>((unit_gain ? 0x2800 | (u(rng) & 0x3ff) : u(rng)) | ((u(rng) & 1) << 15));
    *g->add_initializer() = f16_raw("w" + std::to_string(i), {n, n}, w);
    std::string out = i + 1 == layers ? "y" : "h" + std::to_string(i);
    add_node(g, "MatMul", "mm" + std::to_string(i), {prev, "w" + std::to_string(i)}, {out});
    prev = out;
  }
  return build_cuda_plan(m, streaming, "chain");
}

TEST(GpuWeightStreaming, DeviceMemoryStaysWithinBudgetPlusScratch) {
  SRT_REQUIRE_GPU();
  auto rt = Runtime::create({DeviceType::kCuda});
  ASSERT_TRUE(rt.ok());
  std::map<std::string, Tensor> in;
  in["x"] = *Tensor::allocate(DataType::kFloat16, {8, 1024});
  // Warm the libraries (cuBLASLt, cuDNN handles and their lazily loaded kernels) with another
  // engine first, so the deltas below are this engine's own memory.
  auto warm = (*rt)->load_engine_bytes(build_chain(false));
  ASSERT_TRUE(warm.ok());
  auto reference = run_once(**warm, in);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();

  const int64_t slack = 4 << 20;       // allocation granularity
  const int64_t workspace = 40 << 20;  // cuBLASLt workspace + handles of a context
  std::vector<uint8_t> plan_bytes = build_chain(true);
  // 0.3: whole weights leave 1.6 MiB of the budget, kept as a resident prefix of a streamed one.
  for (double fraction : {0.0, 0.25, 0.3, 0.5, 1.0}) {
    SCOPED_TRACE("budget fraction " + std::to_string(fraction));
    int64_t before_load = used_device_memory();
    auto e = (*rt)->load_engine_bytes(plan_bytes);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    const uint64_t streamable = (*e)->streamable_weights_size();
    ASSERT_EQ(streamable, 32u << 20);
    const uint64_t budget = static_cast<uint64_t>(fraction * streamable);
    ASSERT_TRUE((*e)->set_weight_streaming_budget(budget).ok());
    int64_t after_load = used_device_memory();
    // Weights on the device: at most the budget (nothing but streamable weights here), and one
    // context's memory the engine holds from the load on (the memory contract).
    EXPECT_LE(after_load - before_load,
              static_cast<int64_t>(budget + (*e)->device_memory_size()) + workspace + slack);
    EXPECT_GE(after_load - before_load, static_cast<int64_t>(budget) - (4 << 20));

    auto ctx_memory = [&]() {
      int64_t before_ctx = used_device_memory();
      StreamingStats stats;
      auto out = run_once(**e, in, &stats);
      EXPECT_TRUE(out.ok()) << out.status().to_string();
      if (out.ok()) { EXPECT_EQ(*out, *reference); }  // bitwise: same kernels, weights elsewhere
      // All of the budget holds weights: whole ones, and the first bytes of one streamed weight.
      EXPECT_EQ(stats.bytes_streamed, streamable - (*e)->weight_streaming_budget() / 256 * 256);
      return used_device_memory() - before_ctx;
    };
    EXPECT_LE(ctx_memory(), slack);  // the context is gone again after run_once
    // While a context lives: activations + scratch (+ workspace), never the streamed weights;
    // the first context takes over what the engine held for it.
    auto ctx = (*e)->create_execution_context();
    ASSERT_TRUE(ctx.ok());
    int64_t with_ctx = used_device_memory() - after_load;
    EXPECT_LE(with_ctx, static_cast<int64_t>((*e)->device_memory_size()) + workspace + slack);
    if (fraction < 1.0) { EXPECT_GT((*e)->weight_streaming_scratch_size(), 0u); }
    EXPECT_LE((*e)->weight_streaming_scratch_size(), 3u * (2u << 20) + 4096);
  }
}

// Random float16 input for the chain, different per `seed`.
Tensor chain_input(unsigned seed) {
  Tensor t = *Tensor::allocate(DataType::kFloat16, {8, 1024});
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, 0x3bff);  // halves in [0, 1)
  auto* h = t.mutable_data_as<uint16_t>();
  for (int64_t i = 0; i < t.numel(); ++i) h[i] = static_cast<uint16_t>(u(rng) | ((u(rng) & 1) << 15));
  return t;
}

// RuntimeOptions::stream_next_run_ahead: an eager run ends by issuing the next run's first copies,
// which land while that run's tail and the host's turnaround go on. One context at budget 0 runs new
// inputs back to back, eagerly (two of the runs profiled: one after untimed copies ahead, one after
// timed ones), then with CUDA graphs (an eager run, a capture, replays: a graph must not race a copy
// issued before it), and is destroyed with copies possibly still in flight before a second context
// reuses the engine's slots: every output is bitwise the resident engine's for its input, and every
// run counts every streamed byte once.
void run_back_to_back(bool ahead) {
  RuntimeOptions ro;
  ro.device = DeviceType::kCuda;
  ro.stream_next_run_ahead = ahead;
  auto rt = Runtime::create(ro);
  ASSERT_TRUE(rt.ok());
  auto resident = (*rt)->load_engine_bytes(build_chain(false, true));
  auto streamed = (*rt)->load_engine_bytes(build_chain(true, true));
  ASSERT_TRUE(resident.ok() && streamed.ok());
  ASSERT_TRUE((*streamed)->set_weight_streaming_budget(0).ok());
  const uint64_t streamable = (*streamed)->streamable_weights_size();
  auto x = DeviceBuffer::allocate(DeviceType::kCuda, 8 * 1024 * 2);
  auto y = DeviceBuffer::allocate(DeviceType::kCuda, 8 * 1024 * 2);
  ASSERT_TRUE(x.ok() && y.ok());
  for (int round = 0; round < 2; ++round) {
    auto ctx = (*streamed)->create_execution_context();
    ASSERT_TRUE(ctx.ok()) << ctx.status().to_string();
    ASSERT_TRUE((*ctx)->set_tensor_address("x", x->data(), x->size()).ok());
    ASSERT_TRUE((*ctx)->set_tensor_address("y", y->data(), y->size()).ok());
    for (int run = 0; run < 8; ++run) {
      SCOPED_TRACE(::testing::Message() << "round " << round << " run " << run);
      if (run == 4) { ASSERT_TRUE((*ctx)->set_cuda_graph(true).ok()); }
      (*ctx)->set_streaming_profiling(run == 2 || run == 3);
      const Tensor in = chain_input(static_cast<unsigned>(100 * round + run));
      auto want = run_once(**resident, {{"x", in}});
      ASSERT_TRUE(want.ok()) << want.status().to_string();
      ASSERT_TRUE(x->copy_from_host(in.data(), in.nbytes()).ok());
      ASSERT_TRUE((*ctx)->execute().ok());
      std::vector<uint8_t> got(y->size());
      ASSERT_TRUE(y->copy_to_host(got.data(), got.size()).ok());
      EXPECT_EQ(got, (*want)[0]);
      EXPECT_NE(got, std::vector<uint8_t>(got.size(), 0));  // the chain keeps its input's magnitude
      auto stats = (*ctx)->last_run_stats();
      ASSERT_TRUE(stats.ok());
      // A replayed graph does its copies without the streamer counting them.
      auto graph = (*ctx)->last_run_graph_stats();
      ASSERT_TRUE(graph.ok());
      if (graph->replayed_steps == 0) { EXPECT_EQ(stats->bytes_streamed, streamable); }
      if (run == 2 || run == 3) { EXPECT_GT(stats->copy_ms, 0.0); }
    }
    // The last run issued copies for a next run that does not come: the context goes with them in
    // flight, and the next round's context takes over the same slots.
    ASSERT_TRUE((*ctx)->enqueue(nullptr).ok());
  }
}

TEST(GpuWeightStreaming, NextRunsFirstCopiesIssuedAtARunsEnd) {
  SRT_REQUIRE_GPU();
  run_back_to_back(true);
}

// The default's opposite: every run copies its own weights, nothing in flight between runs.
TEST(GpuWeightStreaming, EveryRunCopiesItsOwnWeightsWithoutRunningAhead) {
  SRT_REQUIRE_GPU();
  run_back_to_back(false);
}

// An embedding table (32768 x 256 float16, 16 MiB) that only a Gather reads, then a MatMul
// with a 256 x 256 weight (128 KiB). Both are streamable.
std::vector<uint8_t> build_embedding_model(bool streaming) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  const int64_t vocab = 32768, dim = 256;
  add_input(g, "ids", onnx::TensorProto_DataType_INT64, {int64_t{4}, int64_t{16}});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT16, {int64_t{4}, int64_t{16}, dim});
  std::mt19937 rng(5);
  std::uniform_int_distribution<int> u(0, 0x1fff);
  auto add_weight = [&](const std::string& name, std::vector<int64_t> dims) {
    onnx::TensorProto t;
    t.set_name(name);
    t.set_data_type(onnx::TensorProto_DataType_FLOAT16);
    std::vector<uint16_t> v(static_cast<size_t>(dims[0] * dims[1]));
    for (auto& h : v) h = static_cast<uint16_t>(u(rng) | ((u(rng) & 1) << 15));
    for (int64_t d : dims) t.add_dims(d);
    t.set_raw_data(v.data(), v.size() * 2);
    *g->add_initializer() = t;
  };
  add_weight("table", {vocab, dim});
  add_weight("w", {dim, dim});
  add_node(g, "Gather", "embed", {"table", "ids"}, {"h"});
  add_node(g, "MatMul", "proj", {"h", "w"}, {"y"});
  return build_cuda_plan(m, streaming, "embed");
}

// Below the full budget the table is read in place from pinned host memory: it is neither
// copied per run nor held on the device, and the outputs stay bitwise identical.
TEST(GpuWeightStreaming, GatherTablesAreReadInPlaceNotStreamed) {
  SRT_REQUIRE_GPU();
  auto rt = Runtime::create({DeviceType::kCuda});
  ASSERT_TRUE(rt.ok());
  std::map<std::string, Tensor> in;
  in["ids"] = *Tensor::allocate(DataType::kInt64, {4, 16});
  for (int64_t i = 0; i < 64; ++i) in["ids"].mutable_data_as<int64_t>()[i] = (i * 7919) % 32768;
  auto plain = (*rt)->load_engine_bytes(build_embedding_model(false));
  ASSERT_TRUE(plain.ok());
  auto reference = run_once(**plain, in);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();

  const uint64_t table = 32768u * 256 * 2, w = 256u * 256 * 2;
  std::vector<uint8_t> plan_bytes = build_embedding_model(true);
  for (uint64_t budget : {uint64_t{0}, w, table + w}) {
    SCOPED_TRACE("budget " + std::to_string(budget));
    const int64_t before_load = used_device_memory();
    auto e = (*rt)->load_engine_bytes(plan_bytes);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    ASSERT_EQ((*e)->streamable_weights_size(), table + w);
    ASSERT_TRUE((*e)->set_weight_streaming_budget(budget).ok());
    // Less what the engine holds for its first context (arena, scratch, workspace and handles).
    const int64_t on_device = used_device_memory() - before_load - static_cast<int64_t>((*e)->device_memory_size()) -
                              (40 << 20);
    if (budget < table) { EXPECT_LT(on_device, static_cast<int64_t>(table) / 2); }  // the table stayed on the host
    StreamingStats stats;
    auto out = run_once(**e, in, &stats);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(*out, *reference);
    EXPECT_EQ(stats.bytes_streamed, budget >= w ? 0u : w);  // only W is ever copied
  }
}

}  // namespace
}  // namespace streamrt

// The memory contract on CUDA (Engine::minimum_device_memory): on a nearly full GPU a load at the
// automatic budget succeeds, runs bitwise as the resident engine does and stays within the
// contract; the first context is created and runs even when everything else is taken after the
// load; a load that cannot fit fails naming the memory needed and free. And chunked streaming
// (BuilderConfig::stream_chunk_bytes) keeps scratch at a few chunks.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <random>

#include "core/float16.h"
#include "gpu_test_util.h"
#include "onnx_model_util.h"
#include "streaming_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

int64_t free_device_memory() {
  size_t free = 0, total = 0;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  return static_cast<int64_t>(free);
}

// Another tenant of the GPU: holds all but `leave` bytes of the free memory while it lives.
class Hog {
 public:
  explicit Hog(int64_t leave) {
    int64_t take = free_device_memory() - leave;
    if (take > 0 && cudaMalloc(&p_, static_cast<size_t>(take)) != cudaSuccess) {
      cudaGetLastError();
      p_ = nullptr;
    }
    bytes_ = p_ ? take : 0;
  }
  int64_t bytes() const { return bytes_; }
  ~Hog() {
    if (p_) cudaFree(p_);
  }
  bool ok() const { return p_ != nullptr; }

 private:
  void* p_ = nullptr;
  int64_t bytes_ = 0;
};

// A decoder-like stack in float16: 8 MatMuls [2048, 2048] (8 MiB each), then an LM head
// [2048, 65536] (256 MiB), y = x W0 ... W7 H.
std::vector<uint8_t> build_stack(bool streaming, uint64_t chunk) {
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  const int64_t d = 2048, vocab = 65536;
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT16, {int64_t{1}, d});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT16, {int64_t{1}, vocab});
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> u(0, 0x17ff);  // |w| < 2^-3: the chain stays finite
  auto weight = [&](const std::string& name, int64_t rows, int64_t cols) {
    std::vector<uint16_t> w(static_cast<size_t>(rows * cols));
    for (auto& h : w) h = static_cast<uint16_t>(u(rng) | ((u(rng) & 1) << 15));
    *g->add_initializer() = f16_raw(name, {rows, cols}, w);
  };
  std::string prev = "x";
  for (int i = 0; i < 8; ++i) {
    weight("w" + std::to_string(i), d, d);
    add_node(g, "MatMul", "mm" + std::to_string(i), {prev, "w" + std::to_string(i)}, {"h" + std::to_string(i)});
    prev = "h" + std::to_string(i);
  }
  weight("head", d, vocab);
  add_node(g, "MatMul", "lm_head", {prev, "head"}, {"y"});
  auto path = std::filesystem::temp_directory_path() / ("srt_contract_" + std::to_string(getpid()) + ".onnx");
  write_file(path, serialize(m));
  BuilderConfig c;
  c.device = DeviceType::kCuda;
  c.weight_streaming = streaming;
  c.stream_chunk_bytes = chunk;
  c.tactics = false;  // the same heuristic GEMMs in every build
  auto bytes = build_plan_from_onnx(path.string(), c);
  std::filesystem::remove(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  return bytes.ok() ? std::move(bytes).value() : std::vector<uint8_t>{};
}

std::map<std::string, Tensor> stack_input() {
  std::map<std::string, Tensor> in;
  in["x"] = *Tensor::allocate(DataType::kFloat16, {1, 2048});
  auto* p = in["x"].mutable_data_as<uint16_t>();
  for (int i = 0; i < 2048; ++i) p[i] = static_cast<uint16_t>(0x3000 + (i * 37) % 0x400);  // ~0.1 .. 0.2
  return in;
}

TEST(GpuMemoryContract, ChunkedStreamingIsBitwiseAtEveryBudgetWithScratchOfAFewChunks) {
  SRT_REQUIRE_GPU();
  auto rt = Runtime::create({DeviceType::kCuda});
  ASSERT_TRUE(rt.ok());
  const auto in = stack_input();
  auto plain = (*rt)->load_engine_bytes(build_stack(false, 0));
  ASSERT_TRUE(plain.ok()) << plain.status().to_string();
  auto expected = run_once(**plain, in);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  plain->reset();
  for (uint64_t chunk : {uint64_t{64} << 20, uint64_t{16} << 20}) {
    SCOPED_TRACE("chunk " + std::to_string(chunk));
    auto e = (*rt)->load_engine_bytes(build_stack(true, chunk));
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    const uint64_t streamable = (*e)->streamable_weights_size();
    ASSERT_EQ(streamable, (8u * 2048 * 2048 + 2048u * 65536) * 2);
    std::vector<uint8_t> first;
    for (double fraction : {0.0, 0.5, 1.0}) {
      SCOPED_TRACE("budget fraction " + std::to_string(fraction));
      ASSERT_TRUE((*e)->set_weight_streaming_budget(static_cast<uint64_t>(fraction * streamable)).ok());
      if (fraction == 0.0) {
        EXPECT_LE((*e)->weight_streaming_scratch_size(), 3 * chunk);  // not 3 x 256 MiB
        EXPECT_LE((*e)->minimum_device_memory(), 3 * chunk + (64u << 20));
      }
      auto got = run_once(**e, in);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      if (first.empty()) first = got->at(0);
      EXPECT_EQ(got->at(0), first);  // bitwise at every budget
      // Against the unsplit GEMM: cuBLASLt may choose other kernels for narrower outputs.
      const auto* a = reinterpret_cast<const uint16_t*>(got->at(0).data());
      const auto* b = reinterpret_cast<const uint16_t*>(expected->at(0).data());
      size_t differ = 0;
      double worst = 0;
      for (size_t i = 0; i < got->at(0).size() / 2; ++i) {
        if (a[i] == b[i]) continue;
        ++differ;
        worst = std::max(worst, std::abs(static_cast<double>(Half::to_float(a[i])) - Half::to_float(b[i])) /
                                    std::max(1e-3, std::abs(static_cast<double>(Half::to_float(b[i])))));
      }
      if (fraction == 0.0)
        std::printf("[ info ] chunk %llu MiB: %zu of %zu outputs differ in bits from the unsplit plan (worst rel %.2e)\n",
                    static_cast<unsigned long long>(chunk >> 20), differ, got->at(0).size() / 2, worst);
      EXPECT_LE(worst, 2e-2);
    }
  }
}

TEST(GpuMemoryContract, AutoLoadOnANearlyFullGpuRunsWithinTheContract) {
  SRT_REQUIRE_GPU();
  auto rt = Runtime::create({DeviceType::kCuda});
  ASSERT_TRUE(rt.ok());
  const auto in = stack_input();
  const std::vector<uint8_t> plan = build_stack(true, 16u << 20);  // scratch 3 x 16 MiB of 320 MiB
  uint64_t minimum = 0, streamable = 0;
  std::vector<std::vector<uint8_t>> expected;
  {  // with the GPU to itself: the reference, the contract, and the libraries warmed up
    auto e = (*rt)->load_engine_bytes(plan);
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    minimum = (*e)->minimum_device_memory();
    streamable = (*e)->streamable_weights_size();
    EXPECT_EQ((*e)->weight_streaming_budget(), streamable);  // an empty GPU holds it all
    auto out = run_once(**e, in);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expected = *out;
  }
  std::printf("[ info ] minimum_device_memory %llu MiB of %llu MiB streamable\n",
              static_cast<unsigned long long>(minimum >> 20), static_cast<unsigned long long>(streamable >> 20));
  ASSERT_LT(minimum, streamable / 2);

  for (int64_t extra : {int64_t{96} << 20, int64_t{200} << 20}) {
    SCOPED_TRACE("free = minimum + " + std::to_string(extra >> 20) + " MiB");
    Hog hog(static_cast<int64_t>(minimum) + extra);
    ASSERT_TRUE(hog.ok());
    const int64_t before = free_device_memory();
    auto e = (*rt)->load_engine_bytes(plan);  // the budget is automatic
    ASSERT_TRUE(e.ok()) << e.status().to_string();
    const uint64_t budget = (*e)->weight_streaming_budget();
    EXPECT_LT(budget, static_cast<uint64_t>(extra));
    {
      // Another tenant takes all but 64 MiB after the load: the first context and its runs still
      // succeed (the engine holds their memory and handles; its CUDA streams and events are still
      // made with the context: with 2 MiB left, creating the copy stream failed on H100).
      Hog rest(64 << 20);
      StreamingStats stats;
      auto got = run_once(**e, in, &stats);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      EXPECT_EQ(*got, expected);
      EXPECT_GE(stats.bytes_streamed + budget, streamable);
      const int64_t used = before - free_device_memory() - rest.bytes();  // the engine's, not the tenant's
      EXPECT_LE(used, static_cast<int64_t>(minimum + budget) + (8 << 20)) << "over the contract";
    }
  }
  {  // less free memory than the contract: a clean failure naming both figures
    Hog hog(static_cast<int64_t>(minimum / 2));
    ASSERT_TRUE(hog.ok());
    auto e = (*rt)->load_engine_bytes(plan);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.status().code(), StatusCode::kOutOfMemory);
    EXPECT_NE(e.status().message().find("needs at least"), std::string::npos) << e.status().message();
    EXPECT_NE(e.status().message().find("are free"), std::string::npos) << e.status().message();
  }
  auto again = (*rt)->load_engine_bytes(plan);  // and nothing leaked: the GPU is back to empty
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->weight_streaming_budget(), streamable);
}

// The driver reserves its per-thread stack limit for every thread the GPU holds at once (1 KiB by
// default: 264 MiB on an H100). Creating a runtime lowers the limit to RuntimeOptions::
// cuda_thread_stack_bytes, and that memory comes back; 0 leaves the limit as it is.
TEST(GpuMemoryContract, RuntimeLowersTheThreadStackLimitAndFreesItsReservation) {
  SRT_REQUIRE_GPU();
  ASSERT_EQ(cudaDeviceSetLimit(cudaLimitStackSize, 1024), cudaSuccess);
  const int64_t before = free_device_memory();
  RuntimeOptions keep;
  keep.device = DeviceType::kCuda;
  keep.cuda_thread_stack_bytes = 0;
  ASSERT_TRUE(Runtime::create(keep).ok());
  size_t limit = 0;
  ASSERT_EQ(cudaDeviceGetLimit(&limit, cudaLimitStackSize), cudaSuccess);
  EXPECT_EQ(limit, 1024u);
  auto rt = Runtime::create({DeviceType::kCuda});
  ASSERT_TRUE(rt.ok());
  ASSERT_EQ(cudaDeviceGetLimit(&limit, cudaLimitStackSize), cudaSuccess);
  EXPECT_EQ(limit, 512u);
  const int64_t freed = free_device_memory() - before;
  std::printf("[ info ] stack limit 1024 -> 512 bytes freed %lld MiB\n", static_cast<long long>(freed >> 20));
  EXPECT_GT(freed, int64_t{16} << 20);
}

}  // namespace
}  // namespace streamrt

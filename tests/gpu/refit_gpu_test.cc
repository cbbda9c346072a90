// Refit on the CUDA device: new values reach the device copies (fixed and resident blocks, a
// streamed weight's resident prefix) and the pinned sources of streamed weights, and a stripped engine is placed by the refit that
// completes it. Needs CudaBackend::refit_weights wired to cuda::refit_weights
// (src/backends/cuda/cuda_refit.h); without it the engine keeps running its old weights and
// these tests fail.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>

#include "cache_test_util.h"
#include "gpu_test_util.h"
#include "streaming_test_util.h"
#include "streamrt/refit.h"

namespace streamrt {
namespace {

using testing::GemmModel;
using testing::TempDir;

struct Case {
  bool strip = false;
  bool streaming = false;
  std::optional<uint64_t> budget;  // set before the refit
  bool weight_by_weight = false;   // two refit() calls (the first leaves a stripped plan incomplete)
};

// y of a CUDA engine built from `a` and refitted with `b`'s weights, on x f32[2, in].
std::vector<float> refitted_run(const Case& c, GemmModel& a, GemmModel& b, const std::vector<float>& x) {
  TempDir dir;
  a.write(dir.file("a.onnx"));
  b.write(dir.file("b.onnx"));
  BuilderConfig config = testing::batch_config(a.in);
  config.device = DeviceType::kCuda;
  config.strip_weights = c.strip;
  config.weight_streaming = c.streaming;
  config.min_streamable_bytes = 1024;
  auto bytes = build_plan_from_onnx(dir.file("a.onnx"), config);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  if (!bytes.ok()) return {};
  testing::write_file(dir.file("a.plan"), std::string(bytes->begin(), bytes->end()));
  auto rt = Runtime::create({DeviceType::kCuda});
  auto engine = (*rt)->load_engine(dir.file("a.plan"));
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  if (!engine.ok()) return {};
  if (c.budget) {
    EXPECT_TRUE((*engine)->set_weight_streaming_budget(*c.budget).ok());
  }
  auto r = Refitter::create(*engine);
  EXPECT_TRUE(r.ok());
  if (c.weight_by_weight) {
    EXPECT_TRUE((*r)->set_weights("W", DataType::kFloat32, {b.out, b.in}, b.w.data(), b.w.size() * 4).ok());
    EXPECT_TRUE((*r)->refit().ok());
    EXPECT_EQ((*engine)->create_execution_context().status().code(), StatusCode::kInvalidState);
    EXPECT_TRUE((*r)->set_weights("B", DataType::kFloat32, {b.out}, b.b.data(), b.b.size() * 4).ok());
  } else {
    EXPECT_TRUE((*r)->set_weights_from_onnx(dir.file("b.onnx")).ok());
  }
  Status st = (*r)->refit();
  EXPECT_TRUE(st.ok()) << st.to_string();
  std::map<std::string, Tensor> in;
  in["x"] = Tensor::from_vector(DataType::kFloat32, {2, a.in}, x);
  auto out = testing::run_once(**engine, in);
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  if (!out.ok() || out->size() != 1) return {};
  std::vector<float> y((*out)[0].size() / 4);
  std::memcpy(y.data(), (*out)[0].data(), y.size() * 4);
  return y;
}

void expect_b(const Case& c) {
  GemmModel a, b;
  a.in = b.in = 256;
  a.out = b.out = 128;
  b.seed = 17;
  const std::vector<float> x = testing::ramp(2 * a.in, 0.01f);
  auto y = refitted_run(c, a, b, x);
  testing::expect_near(y, b.reference(x, 2), 1e-3f);
}

TEST(GpuRefit, DeviceCopiesTakeTheNewWeights) {
  SRT_REQUIRE_GPU();
  expect_b({});
}

TEST(GpuRefit, StrippedPlanIsPlacedByTheCompletingRefit) {
  SRT_REQUIRE_GPU();
  expect_b({.strip = true});
  expect_b({.strip = true, .weight_by_weight = true});
}

TEST(GpuRefit, StreamedAndResidentWeights) {
  SRT_REQUIRE_GPU();
  expect_b({.streaming = true, .budget = 0});             // W streams from its pinned copy
  expect_b({.streaming = true, .budget = 1ull << 40});     // W resident (budget clamped)
  expect_b({.strip = true, .streaming = true, .budget = 0});
  // W (128 KiB) partly resident: its first 64 KiB on the device, copied into the slot before the rest.
  expect_b({.streaming = true, .budget = 65536 + 100});
  expect_b({.strip = true, .streaming = true, .budget = 65536 + 100});
}

}  // namespace
}  // namespace streamrt

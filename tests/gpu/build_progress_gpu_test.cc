// BuilderConfig::progress on CUDA: tactic timing and step timing report as the CPU's weight
// conversion does (done = 0 first, never back, done = total last).
#include <gtest/gtest.h>

#include <map>

#include "gpu_test_util.h"
#include "streamrt/builder.h"

namespace streamrt {
namespace {

TEST(BuildProgressGpu, TacticsAndStepTimingReport) {
  SRT_REQUIRE_GPU();
  auto seen = std::make_shared<std::map<std::string, std::vector<BuildProgress>>>();
  BuilderConfig c;
  c.device = DeviceType::kCuda;
  c.weight_streaming = true;  // step timing runs for streaming builds
  c.min_streamable_bytes = 1024;
  c.profiles["input"] = {{1, 784}, {4, 784}, {8, 784}};
  c.progress = [seen](const BuildProgress& p) { (*seen)[std::string(p.phase)].push_back({{}, p.done, p.total}); };
  auto plan = build_plan_from_onnx(std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/models/mlp/model.onnx", c);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  for (const char* phase : {"tactics", "step timing"}) {
    const auto& r = (*seen)[phase];
    ASSERT_GE(r.size(), 2u) << phase;
    EXPECT_EQ(r.front().done, 0u) << phase;
    EXPECT_EQ(r.back().done, r.back().total) << phase;
    for (size_t i = 1; i < r.size(); ++i) EXPECT_GE(r[i].done, r[i - 1].done) << phase;
  }
}

}  // namespace
}  // namespace streamrt

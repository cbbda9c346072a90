// BuilderConfig::progress: each long phase reports done = 0 first, then never goes back, and
// ends at done = total; without a callback nothing is reported and the plan is the same.
#include <gtest/gtest.h>

#include <map>

#include "streamrt/builder.h"

namespace streamrt {
namespace {

const std::string kMlp = std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/models/mlp/model.onnx";

struct Recorder {
  std::map<std::string, std::vector<BuildProgress>> phases;
  std::vector<std::string> order;
  void operator()(const BuildProgress& p) {
    const std::string name(p.phase);
    if (!phases.count(name)) order.push_back(name);
    phases[name].push_back({{}, p.done, p.total});
  }
};

void expect_well_formed(const std::string& name, const std::vector<BuildProgress>& r) {
  ASSERT_FALSE(r.empty()) << name;
  EXPECT_EQ(r.front().done, 0u) << name;
  EXPECT_EQ(r.back().done, r.back().total) << name;
  for (size_t i = 1; i < r.size(); ++i) {
    EXPECT_EQ(r[i].total, r[0].total) << name << " report " << i;
    EXPECT_GE(r[i].done, r[i - 1].done) << name << " report " << i;
  }
}

BuilderConfig fp16_config() {
  BuilderConfig c;
  c.float_precision = DataType::kFloat16;
  c.profiles["input"] = {{1, 784}, {4, 784}, {8, 784}};
  return c;
}

TEST(BuildProgress, WeightConversionReportsItsBytes) {
  auto rec = std::make_shared<Recorder>();
  BuilderConfig c = fp16_config();
  c.progress = [rec](const BuildProgress& p) { (*rec)(p); };
  BuildReport report;
  auto plan = build_plan_from_onnx(kMlp, c, &report);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(rec->order, std::vector<std::string>{"weights to fp16"});  // the CPU has no tactics or step timing
  const auto& r = rec->phases["weights to fp16"];
  expect_well_formed("weights to fp16", r);
  // float32 bytes in, float16 bytes out: the plan's weights are half of what was converted.
  EXPECT_EQ(r.back().total, 2 * report.weight_bytes);
  EXPECT_GT(r.size(), 2u);  // one report per weight, not only the ends

  auto quiet = build_plan_from_onnx(kMlp, fp16_config());
  ASSERT_TRUE(quiet.ok());
  EXPECT_EQ(*quiet, *plan);
}

}  // namespace
}  // namespace streamrt

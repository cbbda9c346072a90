// BuilderConfig::passes on whole models: each switch takes out exactly its own rewrite (the other
// fusions and the view aliasing stay as they were; residuals ride only on MatMuls whose bias was
// fused), and the plan built without it still computes
// the fixture's reference output (test_data_set_0, exported from PyTorch). Conv fusion on models
// is tested in fusion_conv_test.cc, conv tactics in tactics_conv_test.cc, step timing in
// weight_streaming_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>

#include "conv_test_util.h"
#include "onnx/tensor_proto.h"
#include "ops/matmul.h"
#include "ops/matmul_group.h"
#include "plan/view_steps.h"
#include "tactics_test_util.h"

namespace streamrt {
namespace {

const std::string kModels = std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/models/";

// What the switches change in a plan.
struct Rewrites {
  size_t attention = 0, rotary = 0, matmul_bias = 0, matmul_residual = 0, matmul_group = 0, aliased_views = 0;
  bool operator==(const Rewrites&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Rewrites& r) {
  return os << "{attention " << r.attention << ", rotary " << r.rotary << ", matmul_bias " << r.matmul_bias
            << ", matmul_residual " << r.matmul_residual << ", matmul_group " << r.matmul_group << ", aliased views "
            << r.aliased_views << "}";
}

Rewrites rewrites_of(const plan::PlanData& p) {
  Rewrites r;
  for (const ir::Node& s : p.steps) {
    r.attention += s.op_type == "Attention";
    r.rotary += s.op_type == "Rotary" ? s.outputs.size() : 0;  // rotations (a layer's Q and K share a step)
    if (s.op_type == ops::kMatMulGroup)  // rotations a group took over (fold_group_rotaries.cc)
      for (size_t t = ops::kMatMulGroupRotary; t < s.inputs.size(); t += 2) r.rotary += s.inputs[t] >= 0;
    r.matmul_bias += s.op_type == "MatMul" && ops::matmul_has_bias_attr(s);
    r.matmul_residual += s.op_type == "MatMul" && ops::matmul_has_residual_attr(s);
    r.matmul_group += s.op_type == ops::kMatMulGroup;
    if (!plan::is_view_step(s) || s.inputs[0] < 0 || s.outputs[0] < 0) continue;
    // A view's output can sit on its input's bytes only when aliased: both are live at the step.
    const plan::ValueEntry &in = p.values[s.inputs[0]], &out = p.values[s.outputs[0]];
    r.aliased_views += in.kind == plan::ValueEntry::Kind::kActivation &&
                       out.kind == plan::ValueEntry::Kind::kActivation && in.arena_size > 0 &&
                       out.arena_offset == in.arena_offset;
  }
  return r;
}

struct Case {
  std::string model;
  Tensor input, want;
  std::string input_name;
};

Case load_case(const std::string& model) {
  Case c{model, {}, {}, {}};
  const std::string dir = kModels + model + "/test_data_set_0/";
  auto x = onnx_import::load_tensor_pb(dir + "input_0.pb", &c.input_name);
  auto y = onnx_import::load_tensor_pb(dir + "output_0.pb");
  EXPECT_TRUE(x.ok() && y.ok()) << model;
  if (x.ok()) c.input = *x;
  if (y.ok()) c.want = *y;
  return c;
}

// Builds the case's model with `edit` applied to the passes, checks the CPU output against the
// reference and returns the plan's rewrites.
Rewrites build_and_check(const Case& c, const std::function<void(BuilderPasses&)>& edit) {
  BuilderConfig config;
  config.shapes[c.input_name] = c.input.dims();
  edit(config.passes);
  auto bytes = build_plan_from_onnx(kModels + c.model + "/model.onnx", config);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  if (!bytes.ok()) return {};
  const Rewrites r = rewrites_of(testing::read_back(*bytes));
  auto got = testing::run_graph_plan(DeviceType::kCpu, *bytes, {{c.input_name, c.input}});
  EXPECT_TRUE(got.ok()) << got.status().to_string();
  if (!got.ok()) return r;
  const std::vector<double> g = got->to_double_vector().value(), w = c.want.to_double_vector().value();
  EXPECT_EQ(got->dims(), c.want.dims());
  if (g.size() != w.size()) return r;
  size_t bad = 0;
  for (size_t i = 0; i < g.size(); ++i) bad += !(std::abs(g[i] - w[i]) <= 1e-4 + 1e-3 * std::abs(w[i]));
  EXPECT_EQ(bad, 0u) << "elements off the reference, of " << g.size();
  return r;
}

struct Switch {
  const char* name;
  std::function<void(BuilderPasses&)> off;
  size_t Rewrites::*removes;
};

const Switch kSwitches[] = {
    {"attention_fusion", [](BuilderPasses& p) { p.attention_fusion = false; }, &Rewrites::attention},
    {"rotary_fusion", [](BuilderPasses& p) { p.rotary_fusion = false; }, &Rewrites::rotary},
    {"matmul_bias_fusion", [](BuilderPasses& p) { p.matmul_bias_fusion = false; }, &Rewrites::matmul_bias},
    {"matmul_residual_fusion", [](BuilderPasses& p) { p.matmul_residual_fusion = false; }, &Rewrites::matmul_residual},
    {"matmul_group_fusion", [](BuilderPasses& p) { p.matmul_group_fusion = false; }, &Rewrites::matmul_group},
    {"view_aliasing", [](BuilderPasses& p) { p.view_aliasing = false; }, &Rewrites::aliased_views},
};

struct ModelRewrites {
  const char* model;
  Rewrites by_default;  // counted on the plans once, by hand (streamrt inspect)
  // Residuals fused into MatMuls without a bias: the only ones left with the bias fusion off (a
  // residual Add after an unfused bias Add reads no MatMul).
  size_t residual_without_bias = 0;
};

void PrintTo(const ModelRewrites& m, std::ostream* os) { *os << m.model; }

class BuilderPassSwitches : public ::testing::TestWithParam<ModelRewrites> {};

TEST_P(BuilderPassSwitches, EachSwitchTakesOutItsRewriteAlone) {
  const Case c = load_case(GetParam().model);
  const Rewrites base = build_and_check(c, [](BuilderPasses&) {});
  EXPECT_EQ(base.attention, GetParam().by_default.attention);
  EXPECT_EQ(base.rotary, GetParam().by_default.rotary);
  EXPECT_EQ(base.matmul_bias, GetParam().by_default.matmul_bias);
  EXPECT_EQ(base.matmul_residual, GetParam().by_default.matmul_residual);
  EXPECT_EQ(base.matmul_group, GetParam().by_default.matmul_group);
  EXPECT_GT(base.aliased_views, 0u);
  for (const Switch& s : kSwitches) {
    SCOPED_TRACE(s.name);
    Rewrites want = base;
    want.*s.removes = 0;
    if (s.removes == &Rewrites::matmul_bias) want.matmul_residual = GetParam().residual_without_bias;
    EXPECT_EQ(build_and_check(c, s.off), want);
  }
  const Rewrites none = build_and_check(c, [](BuilderPasses& p) {
    for (const Switch& s : kSwitches) s.off(p);
  });
  EXPECT_EQ(none, Rewrites{});
}

INSTANTIATE_TEST_SUITE_P(Models, BuilderPassSwitches,
                         ::testing::Values(ModelRewrites{"tiny_gpt", {2, 0, 8, 4, 0, 0}, 0},
                                           ModelRewrites{"tiny_llama", {2, 4, 0, 4, 4, 0}, 4}),
                         [](const auto& info) { return std::string(info.param.model); });

}  // namespace
}  // namespace streamrt

// --fp16 / --bf16: float layers in half precision, I/O types unchanged, outputs close to float32.
#include <gtest/gtest.h>

#include <cmath>

#include "builder/precision.h"
#include "onnx/tensor_proto.h"
#include "op_test_util.h"
#include "ops/constant_of_shape.h"
#include "ops/sequence_value.h"
#include "plan/plan.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt {
namespace {

const std::string kModels = std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/models";

struct Case {
  const char* model;
  const char* input;
  Dims min, max;
};

// Max |got - want| over max |want|.
double run_relative_error(const Case& c, DataType precision, plan::PlanData* plan_out) {
  BuilderConfig config;
  config.float_precision = precision;
  config.profiles[c.input] = {c.min, c.max, c.max};
  auto bytes = build_plan_from_onnx(kModels + "/" + c.model + "/model.onnx", config);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  if (!bytes.ok()) return INFINITY;
  auto holder = std::make_shared<std::vector<uint8_t>>(*bytes);
  *plan_out = plan::read_plan_bytes(holder->data(), holder->size(), holder).value().data;
  RuntimeOptions cpu;
  cpu.device = DeviceType::kCpu;
  auto engine = Runtime::create(cpu).value()->load_engine_bytes(std::move(bytes).value()).value();
  auto ctx = engine->create_execution_context().value();
  Tensor in = onnx_import::load_tensor_pb(kModels + "/" + c.model + "/test_data_set_0/input_0.pb").value();
  Tensor want = onnx_import::load_tensor_pb(kModels + "/" + c.model + "/test_data_set_0/output_0.pb").value();
  std::vector<float> out(want.numel());
  EXPECT_TRUE(ctx->set_input_shape(c.input, in.dims()).ok());
  EXPECT_TRUE(ctx->set_tensor_address(c.input, in.mutable_data(), in.nbytes()).ok());
  EXPECT_TRUE(ctx->set_tensor_address(engine->io_tensors().back().name, out.data(), out.size() * 4).ok());
  Status st = ctx->execute();
  EXPECT_TRUE(st.ok()) << st.to_string();
  double err = 0, scale = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    err = std::max(err, std::fabs(double(out[i]) - want.data_as<float>()[i]));
    scale = std::max(scale, std::fabs(double(want.data_as<float>()[i])));
  }
  return err / scale;
}

class Precision : public ::testing::TestWithParam<Case> {};

TEST_P(Precision, HalfTypesStayCloseToFloat32) {
  const Case& c = GetParam();
  plan::PlanData p32, p16, pbf;
  double e32 = run_relative_error(c, DataType::kFloat32, &p32);
  double e16 = run_relative_error(c, DataType::kFloat16, &p16);
  double ebf = run_relative_error(c, DataType::kBFloat16, &pbf);
  EXPECT_LT(e32, 1e-4);
  EXPECT_LT(e16, 1e-2);
  EXPECT_LT(ebf, 5e-2);
  EXPECT_GT(e16, e32);  // half precision really happened
  // I/O types unchanged; weights stored in the reduced type.
  EXPECT_EQ(p16.inputs[0].dtype, p32.inputs[0].dtype);
  EXPECT_EQ(p16.outputs[0].dtype, DataType::kFloat32);
  for (const auto& w : p16.weights) EXPECT_NE(w.dtype, DataType::kFloat32) << w.name;
  for (const auto& w : pbf.weights) EXPECT_NE(w.dtype, DataType::kFloat32) << w.name;
  uint64_t b32 = 0, b16 = 0;
  for (const auto& w : p32.weights) b32 += w.size;
  for (const auto& w : p16.weights) b16 += w.size;
  EXPECT_LT(b16, b32 * 6 / 10);
}

INSTANTIATE_TEST_SUITE_P(Models, Precision,
                         ::testing::Values(Case{"mlp", "input", {1, 784}, {8, 784}},
                                           Case{"tiny_gpt", "input_ids", {1, 1}, {4, 64}},
                                           Case{"lenet_bn", "input", {1, 1, 28, 28}, {4, 1, 28, 28}}),
                         [](const auto& info) { return std::string(info.param.model); });

TEST(Precision, RejectsOtherTargets) {
  BuilderConfig config;
  config.float_precision = DataType::kInt8;
  config.shapes["input"] = {1, 784};
  auto r = build_plan_from_onnx(kModels + "/mlp/model.onnx", config);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
}

// Sequences follow the target too, or a converted tensor cannot join them (a TorchScript list built in
// a Loop: SequenceEmpty, then SequenceInsert of a float16 tensor): a SequenceEmpty left without its
// `dtype` (float32) names the target, and a sequence constant folding made of float32 tensors (what that
// SequenceEmpty becomes at build) holds target tensors.
TEST(Precision, SequencesOfFloatsFollowTheTarget) {
  ir::Graph g;
  const ir::ValueId empty = g.add_value("empty"), folded = g.add_value("folded");
  testing::add_node(g, "SequenceEmpty", {}, {empty});
  ops::SeqValue sv;
  sv.elem_dtype = DataType::kFloat32;
  sv.items.push_back(Tensor::from_vector(DataType::kFloat32, {2}, std::vector<float>{1.5f, -70000.f}));
  g.set_constant(folded, ops::encode_seq(sv).value());
  g.value(folded).seq.kind = ValueKind::kSequence;
  g.value(folded).seq.elem_dtype = DataType::kFloat32;
  g.outputs = {empty, folded};
  ASSERT_TRUE(builder::convert_precision(g, DataType::kFloat16, BuilderConfig{}).ok());
  EXPECT_EQ(g.nodes[0].attr_int("dtype", 1).value(), onnx_import::dtype_to_onnx(DataType::kFloat16));
  EXPECT_EQ(g.value(folded).seq.elem_dtype, DataType::kFloat16);
  auto back = ops::decode_seq(*g.constant(folded), "folded");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->elem_dtype, DataType::kFloat16);
  ASSERT_EQ(back->items.size(), 1u);
  ASSERT_EQ(back->items[0].dtype(), DataType::kFloat16);
  const std::vector<float> v = back->items[0].to_float_vector().value();
  EXPECT_EQ(v[0], 1.5f);
  EXPECT_EQ(v[1], -65504.f);  // saturated like every converted constant
}

// ConstantOfShape's output takes its `value`'s type, and an omitted `value` is a float32 zero: under
// reduced precision both kinds become the target type (a dynamo export builds DeepSeek-V3's K / V from
// such a zero and scatters float16 rows into it), while a `value` of another type stays as it is.
TEST(Precision, ConstantOfShapeFollowsTheTargetWithOrWithoutItsValue) {
  ir::Graph g;
  const ir::ValueId shape = g.add_value("shape", DataType::kInt64, {2});
  g.inputs = {shape};
  const ir::ValueId zeros = g.add_value("zeros"), halves = g.add_value("halves"), ints = g.add_value("ints");
  testing::add_node(g, "ConstantOfShape", {shape}, {zeros});
  testing::add_node(g, "ConstantOfShape", {shape}, {halves});
  g.nodes.back().attrs["value"] =
      ir::Attribute::make_tensor(Tensor::from_vector(DataType::kFloat32, {1}, std::vector<float>{2.5f}));
  testing::add_node(g, "ConstantOfShape", {shape}, {ints});
  g.nodes.back().attrs["value"] =
      ir::Attribute::make_tensor(Tensor::from_vector(DataType::kInt64, {1}, std::vector<int64_t>{7}));
  g.outputs = {zeros, halves, ints};
  for (DataType target : {DataType::kFloat16, DataType::kBFloat16}) {
    ir::Graph c = g;
    ASSERT_TRUE(builder::convert_precision(c, target, BuilderConfig{}).ok());
    const std::string what = dtype_name(target);
    auto zero = ops::fill_value(c.nodes[0]);
    ASSERT_TRUE(zero.ok()) << zero.status().to_string();
    EXPECT_EQ(zero->dtype(), target) << what;
    EXPECT_EQ(zero->to_float_vector().value(), std::vector<float>{0.f}) << what;
    auto half = ops::fill_value(c.nodes[1]);
    ASSERT_TRUE(half.ok()) << half.status().to_string();
    EXPECT_EQ(half->dtype(), target) << what;
    EXPECT_EQ(half->to_float_vector().value(), std::vector<float>{2.5f}) << what;
    auto kept = ops::fill_value(c.nodes[2]);
    ASSERT_TRUE(kept.ok()) << kept.status().to_string();
    EXPECT_EQ(kept->dtype(), DataType::kInt64) << what;
  }
}

}  // namespace
}  // namespace streamrt

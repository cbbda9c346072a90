#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;
using ir::Attribute;

TEST(Identity, CopiesEveryType) {
  auto out = run_ok(make_node("Identity", 1), {f32({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 2, 3, 4}));
  out = run_ok(make_node("Identity", 1), {boolean({3}, {1, 0, 1})});
  EXPECT_EQ(out[0].dtype(), DataType::kBool);
  EXPECT_EQ(values_bool(out[0]), (std::vector<uint8_t>{1, 0, 1}));
  out = run_ok(make_node("Identity", 1), {bf16({}, {2.5f})});
  EXPECT_EQ(out[0].dims(), Dims{});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2.5f}));
  EXPECT_FALSE(run_status(make_node("Identity", 1), {Tensor()}).ok());
}

TEST(Dropout, InferenceIsIdentityWithTrueMask) {
  const Tensor x = f32({2, 3}, {1, -2, 3, -4, 5, -6});
  auto out = run_ok(make_node("Dropout", 1, 2, {}, 13), {x});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values_f32(out[0]), values_f32(x));
  EXPECT_EQ(out[1].dtype(), DataType::kBool);
  EXPECT_EQ(out[1].dims(), (Dims{2, 3}));
  EXPECT_EQ(values_bool(out[1]), std::vector<uint8_t>(6, 1));
}

TEST(Dropout, RatioAndTrainingModeFalseAreIgnored) {
  const Tensor x = f16({3}, {1, 2, 3});
  auto out = run_ok(make_node("Dropout", 3, 1, {}, 13), {x, f32({}, {0.75f}), boolean({}, {0})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 2, 3}));
}

TEST(Dropout, TrainingModeTrueIsUnsupported) {
  auto st = run_status(make_node("Dropout", 3, 1, {}, 13), {f32({1}, {1}), f32({}, {0.5f}), boolean({}, {1})});
  EXPECT_EQ(st.code(), StatusCode::kUnsupported);
  EXPECT_NE(st.message().find("training_mode"), std::string::npos) << st.message();
}

TEST(Dropout, TrainingModeUnknownAtBuildTimeIsCheckedByKernel) {
  ir::Node node = make_node("Dropout", 3, 1, {}, 13);
  auto r = infer_only(node, {info(DataType::kFloat32, {2}), ops::TensorInfo{}, info(DataType::kBool, {})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const ops::OpSchema* schema = ops::OpRegistry::global().find("Dropout");
  float x[2] = {1, 2}, y[2] = {0, 0};
  uint8_t training = 1;
  std::vector<ops::TensorRef> ins = {{DataType::kFloat32, {2}, x}, {}, {DataType::kBool, {}, &training}};
  std::vector<ops::TensorRef> outs = {{DataType::kFloat32, {2}, y}};
  ops::KernelContext kctx(node, ins, outs);
  EXPECT_EQ(schema->cpu(kctx).code(), StatusCode::kUnsupported);
  training = 0;
  EXPECT_TRUE(schema->cpu(kctx).ok());
  EXPECT_EQ(y[1], 2.f);
}

TEST(Dropout, OldOpsetsUseRatioAttributeAndTypedMask) {
  auto out = run_ok(make_node("Dropout", 1, 2, {{"ratio", Attribute::make_float(0.2f)}}, 7),
                    {f32({2}, {3, 4})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{3, 4}));
  EXPECT_EQ(out[1].dtype(), DataType::kFloat32);  // mask had the input's type before opset 10
  EXPECT_EQ(values_f32(out[1]), (std::vector<float>{1, 1}));
  out = run_ok(make_node("Dropout", 1, 2, {}, 10), {f32({2}, {3, 4})});
  EXPECT_EQ(out[1].dtype(), DataType::kBool);
  // Mask output omitted.
  ir::Node node = make_node("Dropout", 1, 2, {}, 11);
  node.outputs[1] = ir::kNoValue;
  out = run_ok(node, {f32({2}, {3, 4})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{3, 4}));
}

TEST(Dropout, Errors) {
  EXPECT_EQ(run_status(make_node("Dropout", 1, 1, {}, 13), {i64({1}, {1})}).code(), StatusCode::kUnsupported);
  EXPECT_EQ(run_status(make_node("Dropout", 1, 1, {{"ratio", Attribute::make_string("x")}}, 7), {f32({1}, {1})})
                .code(),
            StatusCode::kInvalidModel);
  EXPECT_FALSE(run_status(make_node("Dropout", 3, 1, {}, 13), {f32({1}, {1}), Tensor(), f32({}, {1})}).ok());
}

}  // namespace
}  // namespace streamrt

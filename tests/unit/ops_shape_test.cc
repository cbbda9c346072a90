#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

TEST(ShapeOp, ReportsDimsForEveryDtype) {
  for (DataType dt : kAllDTypes) {
    auto out = run_ok(make_node("Shape", 1), {pattern(dt, {3, 4, 5})});
    ASSERT_EQ(out.size(), 1u) << dtype_name(dt);
    EXPECT_EQ(out[0].dtype(), DataType::kInt64);
    EXPECT_EQ(out[0].dims(), (Dims{3}));
    EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{3, 4, 5}));
  }
}

TEST(ShapeOp, ScalarAndEmptyInputs) {
  auto out = run_ok(make_node("Shape", 1), {f32({}, {1})});
  EXPECT_EQ(out[0].dims(), (Dims{0}));
  out = run_ok(make_node("Shape", 1), {pattern(DataType::kFloat32, {2, 0, 3})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{2, 0, 3}));
}

// The opset-15 slice cases of the ONNX node tests (test_shape_start_1, _end_negative_1, ...).
TEST(ShapeOp, StartEndAttributes) {
  struct Case {
    std::map<std::string, ir::Attribute> attrs;
    std::vector<int64_t> expect;
  };
  const std::vector<Case> cases = {
      {{{"start", ai(1)}}, {4, 5}},
      {{{"end", ai(1)}}, {3}},
      {{{"start", ai(-1)}}, {5}},
      {{{"end", ai(-1)}}, {3, 4}},
      {{{"start", ai(1)}, {"end", ai(2)}}, {4}},
      {{{"start", ai(1)}, {"end", ai(-1)}}, {4}},
      {{{"start", ai(-10)}}, {3, 4, 5}},  // test_shape_clip_start
      {{{"end", ai(10)}}, {3, 4, 5}},     // test_shape_clip_end
      {{{"start", ai(2)}, {"end", ai(1)}}, {}},  // empty range
  };
  for (const auto& c : cases) {
    auto node = make_node("Shape", 1, 1, c.attrs, 15);
    auto out = run_ok(node, {pattern(DataType::kFloat32, {3, 4, 5})});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dims(), (Dims{static_cast<int64_t>(c.expect.size())}));
    EXPECT_EQ(values_i64(out[0]), c.expect);
  }
}

TEST(ShapeOp, InferSetsValueWhenDimsStatic) {
  auto r = infer(make_node("Shape", 1), {info(DataType::kFloat16, {2, 7, 9})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{3}));
  ASSERT_TRUE(r.values[0].has_value());
  EXPECT_EQ(values_i64(*r.values[0]), (std::vector<int64_t>{2, 7, 9}));
}

TEST(ShapeOp, InferWithDynamicDims) {
  auto r = infer(make_node("Shape", 1), {info(DataType::kFloat32, {-1, 7, 9})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{3}));
  EXPECT_FALSE(r.values[0].has_value());
  // Only the sliced dims matter: start=1 skips the dynamic batch dim.
  r = infer(make_node("Shape", 1, 1, {{"start", ai(1)}}, 15), {info(DataType::kFloat32, {-1, 7, 9})});
  ASSERT_TRUE(r.values[0].has_value());
  EXPECT_EQ(values_i64(*r.values[0]), (std::vector<int64_t>{7, 9}));
}

TEST(ShapeOp, InferUnrankedInput) {
  auto r = infer(make_node("Shape", 1), {unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_TRUE(r.outs[0].has_shape);
  EXPECT_EQ(r.outs[0].dims, (Dims{-1}));
  EXPECT_FALSE(r.values[0].has_value());
}

TEST(ShapeOp, RejectsWrongAttributeKind) {
  auto node = make_node("Shape", 1, 1, {{"start", ir::Attribute::make_float(1.f)}}, 15);
  EXPECT_FALSE(run_status(node, {f32({2}, {1, 2})}).ok());
}

TEST(SizeOp, CountsElements) {
  for (DataType dt : kAllDTypes) {
    auto out = run_ok(make_node("Size", 1), {pattern(dt, {3, 4, 5})});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dtype(), DataType::kInt64);
    EXPECT_EQ(out[0].dims(), Dims{});
    EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{60}));
  }
  EXPECT_EQ(values_i64(run_ok(make_node("Size", 1), {f32({}, {3})})[0]), (std::vector<int64_t>{1}));
  EXPECT_EQ(values_i64(run_ok(make_node("Size", 1), {pattern(DataType::kInt8, {4, 0})})[0]),
            (std::vector<int64_t>{0}));
}

TEST(SizeOp, InferValue) {
  auto r = infer(make_node("Size", 1), {info(DataType::kFloat32, {2, 3})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, Dims{});
  ASSERT_TRUE(r.values[0].has_value());
  EXPECT_EQ(values_i64(*r.values[0]), (std::vector<int64_t>{6}));
  r = infer(make_node("Size", 1), {info(DataType::kFloat32, {-1, 3})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.values[0].has_value());
  // A static zero dim makes the size 0 whatever the dynamic dims are.
  r = infer(make_node("Size", 1), {info(DataType::kFloat32, {-1, 0})});
  ASSERT_TRUE(r.values[0].has_value());
  EXPECT_EQ(values_i64(*r.values[0]), (std::vector<int64_t>{0}));
  r = infer(make_node("Size", 1), {unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, Dims{});
}

}  // namespace
}  // namespace streamrt

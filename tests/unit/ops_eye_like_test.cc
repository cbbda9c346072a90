#include "indexing_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// ONNX TensorProto numbers of the streamrt dtypes.
int onnx_type(DataType t) {
  switch (t) {
    case DataType::kFloat32: return 1;
    case DataType::kUInt8: return 2;
    case DataType::kInt8: return 3;
    case DataType::kInt32: return 6;
    case DataType::kInt64: return 7;
    case DataType::kBool: return 9;
    case DataType::kFloat16: return 10;
    case DataType::kBFloat16: return 16;
    default: return 0;
  }
}

void check(DataType in, std::optional<DataType> out_dt, int64_t rows, int64_t cols, int64_t k, int opset = 22) {
  std::map<std::string, ir::Attribute> attrs;
  if (k != 0) attrs["k"] = ai(k);
  if (out_dt) attrs["dtype"] = ai(onnx_type(*out_dt));
  auto out = run_ok(make_node("EyeLike", 1, 1, attrs, opset), {pattern(in, {rows, cols})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{rows, cols}));
  EXPECT_EQ(out[0].dtype(), out_dt.value_or(in));
  std::vector<float> want;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) want.push_back(j - i == k ? 1.f : 0.f);
  EXPECT_EQ(values_f32(out[0]), want) << dtype_name(in) << " k=" << k;
}

TEST(EyeLikeOp, NodeTestCases) {
  check(DataType::kInt32, DataType::kFloat32, 4, 5, 1, 9);  // test_eyelike_populate_off_main_diagonal
  check(DataType::kInt32, std::nullopt, 4, 4, 0, 9);        // test_eyelike_without_dtype
}

TEST(EyeLikeOp, EveryDtypeAndDiagonal) {
  for (DataType dt : kAllDTypes) {
    for (int64_t k : std::vector<int64_t>{0, 2, -1, -3, 5, -6, int64_t{1} << 62, -(int64_t{1} << 62)}) check(dt, std::nullopt, 3, 5, k);
    check(DataType::kFloat32, dt, 4, 2, -1);
  }
  check(DataType::kUInt8, DataType::kBool, 0, 3, 0);  // empty
}

TEST(EyeLikeOp, Errors) {
  EXPECT_FALSE(run_status(make_node("EyeLike", 1), {pattern(DataType::kFloat32, {2, 2, 2})}).ok());
  EXPECT_FALSE(run_status(make_node("EyeLike", 1), {pattern(DataType::kFloat32, {3})}).ok());
  EXPECT_EQ(run_status(make_node("EyeLike", 1, 1, {{"dtype", ai(8)}}), {pattern(DataType::kFloat32, {2, 2})}).code(),
            StatusCode::kUnsupported);  // string
  auto dbl = run_ok(make_node("EyeLike", 1, 1, {{"dtype", ai(11)}}), {pattern(DataType::kFloat32, {2, 2})});
  EXPECT_EQ(dbl[0].dtype(), DataType::kFloat64);
  EXPECT_EQ(values_f32(dbl[0]), (std::vector<float>{1, 0, 0, 1}));
  EXPECT_FALSE(run_status(make_node("EyeLike", 1, 1, {{"dtype", ai(-1)}}), {pattern(DataType::kFloat32, {2, 2})}).ok());
}

TEST(EyeLikeOp, Infer) {
  auto node = make_node("EyeLike", 1, 1, {{"dtype", ai(10)}}, 9);
  auto r = infer(node, {info(DataType::kInt64, {-1, 7})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 7}));
  EXPECT_EQ(r.outs[0].dtype, DataType::kFloat16);
  r = infer(make_node("EyeLike", 1), {unranked(DataType::kInt8)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1}));
  EXPECT_EQ(r.outs[0].dtype, DataType::kInt8);
  EXPECT_EQ(ops::OpRegistry::global().find("EyeLike")->min_opset, 9);
}

}  // namespace
}  // namespace streamrt

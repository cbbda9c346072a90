#include "indexing_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Naive reference: output[o..., d, i...] = on where the index at (o..., i...) lights d.
std::vector<float> one_hot_ref(const Dims& idx_dims, const std::vector<double>& idx, int64_t depth, int64_t axis,
                               float off, float on, bool wrap, Dims* out_dims) {
  Dims out = idx_dims;
  out.insert(out.begin() + axis, depth);
  std::vector<float> y;
  for (int64_t e = 0, n = dims_numel(out); e < n; ++e) {
    auto pos = unravel(e, out);
    const int64_t d = pos[static_cast<size_t>(axis)];
    pos.erase(pos.begin() + axis);
    int64_t v = static_cast<int64_t>(idx[static_cast<size_t>(ravel(pos, idx_dims))]);
    if (wrap && v < 0) v += depth;
    y.push_back(v == d ? on : off);
  }
  *out_dims = out;
  return y;
}

void check(DataType idx_dt, const Dims& idx_dims, const std::vector<double>& idx, DataType depth_dt, int64_t depth,
           DataType val_dt, int64_t axis, int opset = 11, bool axis_attr = true) {
  std::map<std::string, ir::Attribute> attrs;
  if (axis_attr) attrs["axis"] = ai(axis);
  auto out = run_ok(make_node("OneHot", 3, 1, attrs, opset),
                    {typed(idx_dt, idx_dims, idx), typed(depth_dt, {}, {static_cast<double>(depth)}),
                     typed(val_dt, {2}, {2, 5})});
  ASSERT_EQ(out.size(), 1u);
  const int64_t rank = static_cast<int64_t>(idx_dims.size());
  const int64_t a = axis < 0 ? axis + rank + 1 : axis;
  Dims dims;
  auto want = one_hot_ref(idx_dims, idx, depth, a, 2, 5, opset >= 11, &dims);
  EXPECT_EQ(out[0].dims(), dims);
  EXPECT_EQ(out[0].dtype(), val_dt);
  EXPECT_EQ(values_f32(out[0]), want) << dtype_name(idx_dt) << " -> " << dtype_name(val_dt);
}

TEST(OneHotOp, NodeTestCases) {
  // test_onehot_without_axis, _with_axis, _with_negative_axis, _negative_indices.
  check(DataType::kInt64, {3}, {0, 7, 8}, DataType::kFloat32, 12, DataType::kInt32, -1, 11, false);
  check(DataType::kFloat32, {2, 2}, {1, 9, 2, 4}, DataType::kFloat32, 10, DataType::kFloat32, 1);
  check(DataType::kFloat32, {2, 2}, {1, 9, 2, 4}, DataType::kFloat32, 10, DataType::kFloat32, -2);
  check(DataType::kInt64, {3}, {0, -7, -8}, DataType::kFloat32, 10, DataType::kFloat32, 1);
}

TEST(OneHotOp, EveryTypeAxisAndOutOfRangeIndices) {
  const std::vector<double> idx = {0, 3, -1, -4, 4, -5, 2, 1};  // 4 and -5 are out of range for depth 4
  for (DataType it : {DataType::kInt64, DataType::kInt32, DataType::kInt8, DataType::kFloat32, DataType::kFloat16,
                      DataType::kBFloat16})
    for (int64_t axis : {0, 1, 2, -1, -3}) check(it, {2, 4}, idx, DataType::kInt64, 4, DataType::kFloat32, axis);
  for (DataType vt : kAllDTypes) {
    if (vt == DataType::kBool) continue;
    check(DataType::kInt64, {2, 4}, idx, DataType::kInt32, 4, vt, 1);
  }
  check(DataType::kUInt8, {3}, {0, 3, 200}, DataType::kUInt8, 4, DataType::kInt8, 0);
  // Opset 9: negative indices light nothing.
  check(DataType::kInt64, {2, 4}, idx, DataType::kInt64, 4, DataType::kFloat32, -1, 9);
  // Float indices truncate toward zero; NaN lights nothing.
  auto out = run_ok(make_node("OneHot", 3, 1, {}, 11), {f32({3}, {1.9f, -0.5f, NAN}), f32({}, {3.7f}), f32({2}, {0, 1})});
  EXPECT_EQ(out[0].dims(), (Dims{3, 3}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 1, 0, 1, 0, 0, 0, 0, 0}));
  // Bool values, scalar indices, depth as [1].
  out = run_ok(make_node("OneHot", 3, 1, {}, 11),
               {i64({}, {2}), i64({1}, {3}), typed(DataType::kBool, {2}, {0, 1})});
  EXPECT_EQ(out[0].dims(), (Dims{3}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 0, 1}));
}

TEST(OneHotOp, Errors) {
  Tensor idx = i64({2}, {0, 1});
  Tensor vals = f32({2}, {0, 1});
  EXPECT_FALSE(run_status(make_node("OneHot", 3), {idx, i64({}, {-1}), vals}).ok());       // negative depth
  EXPECT_FALSE(run_status(make_node("OneHot", 3), {idx, i64({2}, {2, 2}), vals}).ok());    // two depths
  EXPECT_FALSE(run_status(make_node("OneHot", 3), {idx, i64({}, {3}), f32({3}, {0, 1, 2})}).ok());
  EXPECT_FALSE(run_status(make_node("OneHot", 3), {idx, i64({}, {int64_t{1} << 40}), vals}).ok());  // absurd depth
  EXPECT_FALSE(run_status(make_node("OneHot", 3, 1, {{"axis", ai(2)}}), {idx, i64({}, {3}), vals}).ok());
  EXPECT_FALSE(run_status(make_node("OneHot", 3, 1, {{"axis", ai(-3)}}), {idx, i64({}, {3}), vals}).ok());
  EXPECT_FALSE(run_status(make_node("OneHot", 3), {typed(DataType::kBool, {2}, {0, 1}), i64({}, {3}), vals}).ok());
}

TEST(OneHotOp, InferDepthValueAndVerify) {
  auto node = make_node("OneHot", 3, 1, {{"axis", ai(0)}}, 11);
  // depth unknown at build time: that dim is dynamic.
  auto r = infer(node, {info(DataType::kInt64, {-1, 5}), info(DataType::kInt64, {}), info(DataType::kFloat16, {2})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1, 5}));
  EXPECT_EQ(r.outs[0].dtype, DataType::kFloat16);
  Tensor depth = f32({}, {7});
  r = infer(node, {info(DataType::kInt64, {-1, 5}), known(depth), info(DataType::kFloat16, {2})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{7, -1, 5}));
  const auto* schema = ops::OpRegistry::global().find("OneHot");
  EXPECT_EQ(schema->min_opset, 9);
  EXPECT_EQ(schema->shape_inputs, std::vector<int>{1});
  const auto ins = {info(DataType::kInt64, {2, 5}), info(DataType::kInt64, {}), info(DataType::kFloat32, {2})};
  EXPECT_TRUE(run_verify(make_node("OneHot", 3, 1, {{"axis", ai(-3)}}), ins).ok());
  EXPECT_FALSE(run_verify(make_node("OneHot", 3, 1, {{"axis", ai(3)}}), ins).ok());
}

}  // namespace
}  // namespace streamrt

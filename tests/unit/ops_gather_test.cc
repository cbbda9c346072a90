#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Naive reference: out[pre, idx..., post] = data[pre, indices[idx...], post].
std::vector<int64_t> gather_map(const Dims& data, int64_t axis, const Dims& idx_dims,
                                const std::vector<int64_t>& idx, Dims* out_dims) {
  Dims out(data.begin(), data.begin() + axis);
  out.insert(out.end(), idx_dims.begin(), idx_dims.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  std::vector<int64_t> map;
  const size_t q = idx_dims.size();
  for (int64_t i = 0, n = dims_numel(out); i < n; ++i) {
    auto o = unravel(i, out);
    std::vector<int64_t> d(o.begin(), o.begin() + axis);
    std::vector<int64_t> ii(o.begin() + axis, o.begin() + axis + static_cast<int64_t>(q));
    int64_t v = idx[static_cast<size_t>(ravel(ii, idx_dims))];
    d.push_back(v < 0 ? v + data[axis] : v);
    d.insert(d.end(), o.begin() + axis + static_cast<int64_t>(q), o.end());
    map.push_back(ravel(d, data));
  }
  *out_dims = out;
  return map;
}

void check_gather(DataType dt, const Dims& data_dims, int64_t axis, const Dims& idx_dims,
                  const std::vector<int64_t>& idx, bool int32 = false) {
  Tensor x = pattern(dt, data_dims);
  // Filled element by element: from_vector would memcpy from a null pointer for empty indices.
  Tensor indices = Tensor::allocate(int32 ? DataType::kInt32 : DataType::kInt64, idx_dims).value();
  for (size_t i = 0; i < idx.size(); ++i) {
    if (int32) indices.mutable_data_as<int32_t>()[i] = static_cast<int32_t>(idx[i]);
    else indices.mutable_data_as<int64_t>()[i] = idx[i];
  }
  Dims dims;
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(data_dims.size()) : axis;
  auto map = gather_map(data_dims, a, idx_dims, idx, &dims);
  auto out = run_ok(make_node("Gather", 2, 1, {{"axis", ai(axis)}}, 13), {x, indices});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), dims);
  expect_picked(out[0], x, map);
}

TEST(GatherOp, NodeTestCasesEveryDtype) {
  for (DataType dt : kAllDTypes) {
    check_gather(dt, {5, 4, 3, 2}, 0, {3}, {0, 1, 3});        // test_gather_0
    check_gather(dt, {5, 4, 3, 2}, 1, {3}, {0, 1, 3});        // test_gather_1
    check_gather(dt, {3, 3}, 1, {1, 2}, {0, 2});              // test_gather_2d_indices
    check_gather(dt, {10}, 0, {3}, {0, -9, -10});             // test_gather_negative_indices
  }
}

TEST(GatherOp, NegativeAxisInt32AndScalarIndices) {
  check_gather(DataType::kFloat16, {2, 3, 4}, -1, {2, 2}, {3, 0, -1, 1});
  check_gather(DataType::kInt8, {2, 3, 4}, -2, {2}, {2, -3}, /*int32=*/true);
  // A scalar index removes the axis.
  check_gather(DataType::kFloat32, {2, 3, 4}, 1, {}, {2});
  check_gather(DataType::kInt64, {3}, 0, {}, {-1});
  auto out = run_ok(make_node("Gather", 2), {i64({3}, {10, 20, 30}), i64({}, {1})});
  EXPECT_EQ(out[0].dims(), Dims{});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{20}));
  // Empty indices give an empty output.
  check_gather(DataType::kFloat32, {4, 2}, 0, {0}, {});
}

TEST(GatherOp, OutOfRangeIndexIsAnError) {
  Tensor x = pattern(DataType::kFloat32, {3, 2});
  Status st = run_status(make_node("Gather", 2), {x, i64({2}, {0, 3})});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("out of range"), std::string::npos) << st.message();
  EXPECT_FALSE(run_status(make_node("Gather", 2), {x, i64({1}, {-4})}).ok());
  EXPECT_FALSE(run_status(make_node("Gather", 2, 1, {{"axis", ai(1)}}), {x, i32({1}, {2})}).ok());
  // When the indices are only known at run time, the kernel itself refuses them.
  auto node = make_node("Gather", 2);
  Tensor bad = i64({1}, {7});
  std::vector<ops::TensorRef> ins = {{x.dtype(), x.dims(), const_cast<void*>(x.data())},
                                     {bad.dtype(), bad.dims(), const_cast<void*>(bad.data())}};
  Tensor y = Tensor::allocate(DataType::kFloat32, {1, 2}).value();
  std::vector<ops::TensorRef> outs = {{y.dtype(), y.dims(), y.mutable_data()}};
  ops::KernelContext kctx(node, ins, outs);
  Status kst = ops::OpRegistry::global().find("Gather")->cpu(kctx);
  EXPECT_EQ(kst.code(), StatusCode::kInvalidArgument);
}

TEST(GatherOp, OtherErrors) {
  Tensor x = pattern(DataType::kFloat32, {3, 2});
  EXPECT_FALSE(run_status(make_node("Gather", 2, 1, {{"axis", ai(2)}}), {x, i64({1}, {0})}).ok());
  EXPECT_FALSE(run_status(make_node("Gather", 2, 1, {{"axis", ai(-3)}}), {x, i64({1}, {0})}).ok());
  EXPECT_FALSE(run_status(make_node("Gather", 2), {x, f32({1}, {0})}).ok());  // float indices
  EXPECT_FALSE(run_status(make_node("Gather", 2), {f32({}, {1}), i64({}, {0})}).ok());  // scalar data
}

TEST(GatherOp, InferDynamic) {
  auto node = make_node("Gather", 2, 1, {{"axis", ai(1)}});
  auto r = infer(node, {info(DataType::kBFloat16, {-1, -1, 8}), info(DataType::kInt64, {-1, 3})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1, 3, 8}));
  EXPECT_EQ(r.outs[0].dtype, DataType::kBFloat16);
  r = infer(node, {unranked(DataType::kFloat32), info(DataType::kInt64, {3})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.outs[0].has_shape);
  // Known indices against a static dim are checked at build time.
  Tensor idx = i64({1}, {5});
  r = infer(node, {info(DataType::kFloat32, {-1, 4, 8}), known(idx)});
  EXPECT_FALSE(r.status.ok());
  r = infer(node, {info(DataType::kFloat32, {2, -1, 8}), known(idx)});  // dynamic dim: run time decides
  EXPECT_TRUE(r.status.ok());
}

}  // namespace
}  // namespace streamrt

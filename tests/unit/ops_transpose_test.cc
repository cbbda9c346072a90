#include <algorithm>

#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Naive reference: out[i0..in] = x[j] with j[perm[d]] = i[d].
std::vector<int64_t> transpose_map(const Dims& in, const std::vector<int64_t>& perm, Dims* out_dims) {
  Dims out;
  for (int64_t p : perm) out.push_back(in[p]);
  std::vector<int64_t> map;
  for (int64_t i = 0, n = dims_numel(out); i < n; ++i) {
    auto oi = unravel(i, out);
    std::vector<int64_t> ii(in.size());
    for (size_t d = 0; d < perm.size(); ++d) ii[perm[d]] = oi[d];
    map.push_back(ravel(ii, in));
  }
  *out_dims = out;
  return map;
}

TEST(TransposeOp, AllPermutationsEveryDtype) {
  const Dims in = {2, 3, 4};
  for (DataType dt : kAllDTypes) {
    Tensor x = pattern(dt, in);
    std::vector<int64_t> perm = {0, 1, 2};
    do {
      Dims out_dims;
      auto map = transpose_map(in, perm, &out_dims);
      auto out = run_ok(make_node("Transpose", 1, 1, {{"perm", ais(perm)}}), {x});
      ASSERT_EQ(out.size(), 1u);
      EXPECT_EQ(out[0].dims(), out_dims);
      expect_picked(out[0], x, map);
    } while (std::next_permutation(perm.begin(), perm.end()));
  }
}

TEST(TransposeOp, DefaultReversesDims) {
  Tensor x = pattern(DataType::kFloat16, {2, 3, 4, 5});
  Dims out_dims;
  auto map = transpose_map(x.dims(), {3, 2, 1, 0}, &out_dims);
  auto out = run_ok(make_node("Transpose", 1), {x});
  EXPECT_EQ(out[0].dims(), (Dims{5, 4, 3, 2}));
  expect_picked(out[0], x, map);
}

TEST(TransposeOp, HigherRankUnitAndEmptyDims) {
  Tensor x = pattern(DataType::kInt32, {2, 1, 3, 1, 4, 2});
  const std::vector<int64_t> perm = {4, 0, 5, 3, 2, 1};
  Dims out_dims;
  auto map = transpose_map(x.dims(), perm, &out_dims);
  auto out = run_ok(make_node("Transpose", 1, 1, {{"perm", ais(perm)}}), {x});
  EXPECT_EQ(out[0].dims(), out_dims);
  expect_picked(out[0], x, map);
  auto empty = run_ok(make_node("Transpose", 1), {pattern(DataType::kFloat32, {0, 3})});
  EXPECT_EQ(empty[0].dims(), (Dims{3, 0}));
  auto scalar = run_ok(make_node("Transpose", 1), {f32({}, {7})});
  EXPECT_EQ(values_f32(scalar[0]), (std::vector<float>{7}));
}

TEST(TransposeOp, Infer) {
  auto r = infer(make_node("Transpose", 1, 1, {{"perm", ais({0, 2, 1})}}), {info(DataType::kBFloat16, {-1, 5, -1})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1, 5}));
  EXPECT_EQ(r.outs[0].dtype, DataType::kBFloat16);
  r = infer(make_node("Transpose", 1, 1, {{"perm", ais({1, 0})}}), {unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1}));
  r = infer(make_node("Transpose", 1), {unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.outs[0].has_shape);
}

TEST(TransposeOp, RejectsBadPerm) {
  Tensor x = pattern(DataType::kFloat32, {2, 3, 4});
  for (const auto& perm : std::vector<std::vector<int64_t>>{{0, 1}, {0, 1, 1}, {0, 1, 3}, {-1, 0, 1}, {0, 1, 2, 3}}) {
    Status st = run_status(make_node("Transpose", 1, 1, {{"perm", ais(perm)}}), {x});
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::kInvalidModel);
  }
}

}  // namespace
}  // namespace streamrt

namespace streamrt {
namespace {
using namespace testing;

// Kernels called directly (as the runtime does) refuse unbound inputs and mismatched outputs
// instead of reading or writing out of bounds.
TEST(DataMovementKernels, RefuseUnboundOrMismatchedBuffers) {
  Tensor x = pattern(DataType::kFloat32, {2, 3});
  Tensor small = Tensor::allocate(DataType::kFloat32, {2, 2}).value();
  std::vector<ops::TensorRef> ins = {{x.dtype(), x.dims(), const_cast<void*>(x.data())}};
  std::vector<ops::TensorRef> outs = {{small.dtype(), small.dims(), small.mutable_data()}};
  for (const char* op : {"Transpose", "Reshape", "Flatten", "Slice", "Tile", "Gather", "Shape", "Pad"}) {
    auto node = make_node(op, 1);
    ops::KernelContext none(node, {}, outs);
    EXPECT_FALSE(ops::OpRegistry::global().find(op)->cpu(none).ok()) << op;
  }
  auto node = make_node("Transpose", 1);
  ops::KernelContext kctx(node, ins, outs);
  EXPECT_FALSE(ops::OpRegistry::global().find("Transpose")->cpu(kctx).ok());
  auto flat = make_node("Flatten", 1);
  ops::KernelContext fctx(flat, ins, outs);
  EXPECT_FALSE(ops::OpRegistry::global().find("Flatten")->cpu(fctx).ok());
}

}  // namespace
}  // namespace streamrt

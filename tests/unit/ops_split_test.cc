#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Naive reference for output k of sizes `sizes` along `axis`.
std::vector<int64_t> split_map(const Dims& in, int64_t axis, const std::vector<int64_t>& sizes, size_t k,
                               Dims* out_dims) {
  int64_t offset = 0;
  for (size_t i = 0; i < k; ++i) offset += sizes[i];
  Dims out = in;
  out[axis] = sizes[k];
  std::vector<int64_t> map;
  for (int64_t i = 0, n = dims_numel(out); i < n; ++i) {
    auto idx = unravel(i, out);
    idx[axis] += offset;
    map.push_back(ravel(idx, in));
  }
  *out_dims = out;
  return map;
}

void check_outputs(const std::vector<Tensor>& outs, const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes) {
  ASSERT_EQ(outs.size(), sizes.size());
  const int64_t a = axis < 0 ? axis + static_cast<int64_t>(x.dims().size()) : axis;
  for (size_t k = 0; k < sizes.size(); ++k) {
    Dims dims;
    auto map = split_map(x.dims(), a, sizes, k, &dims);
    EXPECT_EQ(outs[k].dims(), dims) << "output " << k;
    expect_picked(outs[k], x, map);
  }
}

// Runs one split with explicit sizes as opset-11 attribute and as opset-13 input.
void check_split(const Tensor& x, int64_t axis, const std::vector<int64_t>& sizes) {
  auto n = sizes.size();
  check_outputs(run_ok(make_node("Split", 1, n, {{"axis", ai(axis)}, {"split", ais(sizes)}}, 11), {x}), x, axis, sizes);
  check_outputs(run_ok(make_node("Split", 2, n, {{"axis", ai(axis)}}, 13),
                       {x, i64({static_cast<int64_t>(n)}, sizes)}), x, axis, sizes);
}

TEST(SplitOp, EqualPartsEveryDtype) {
  for (DataType dt : kAllDTypes) {
    Tensor x1 = pattern(dt, {6});
    check_outputs(run_ok(make_node("Split", 1, 3, {{"axis", ai(0)}}, 13), {x1}), x1, 0, {2, 2, 2});
    Tensor x2 = pattern(dt, {2, 6});
    check_outputs(run_ok(make_node("Split", 1, 2, {{"axis", ai(1)}}, 13), {x2}), x2, 1, {3, 3});
    check_outputs(run_ok(make_node("Split", 1, 2, {}, 13), {x2}), x2, 0, {1, 1});  // default axis 0
  }
}

TEST(SplitOp, VariableParts) {
  for (DataType dt : kAllDTypes) {
    check_split(pattern(dt, {6}), 0, {2, 4});
    check_split(pattern(dt, {2, 6}), 1, {2, 4});
    check_split(pattern(dt, {2, 6}), -1, {1, 0, 5});
    check_split(pattern(dt, {3, 2, 4}), -2, {1, 1});
  }
}

TEST(SplitOp, ZeroSizeSplits) {
  check_split(pattern(DataType::kFloat32, {0}), 0, {0, 0, 0});  // test_split_zero_size_splits
}

TEST(SplitOp, Opset18NumOutputsUneven) {
  Tensor x = pattern(DataType::kFloat16, {7, 2});
  check_outputs(run_ok(make_node("Split", 1, 3, {{"num_outputs", ai(3)}}, 18), {x}), x, 0, {3, 3, 1});
  check_outputs(run_ok(make_node("Split", 1, 2, {{"num_outputs", ai(2)}, {"axis", ai(1)}}, 18), {x}), x, 1, {1, 1});
  // Without num_outputs an uneven equal split is an error.
  EXPECT_FALSE(run_status(make_node("Split", 1, 3, {}, 13), {x}).ok());
}

TEST(SplitOp, OmittedOutputKeepsOffsets) {
  Tensor x = pattern(DataType::kInt32, {6});
  auto node = make_node("Split", 2, 3, {}, 13);
  node.outputs[1] = ir::kNoValue;
  auto outs = run_ok(node, {x, i64({3}, {1, 2, 3})});
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_TRUE(outs[1].empty());
  expect_picked(outs[0], x, {0});
  expect_picked(outs[2], x, {3, 4, 5});
}

TEST(SplitOp, Errors) {
  Tensor x = pattern(DataType::kFloat32, {2, 6});
  EXPECT_FALSE(run_status(make_node("Split", 2, 2, {{"axis", ai(1)}}, 13), {x, i64({2}, {2, 3})}).ok());  // sum
  EXPECT_FALSE(run_status(make_node("Split", 2, 2, {{"axis", ai(1)}}, 13), {x, i64({3}, {2, 2, 2})}).ok());  // count
  EXPECT_FALSE(run_status(make_node("Split", 2, 2, {{"axis", ai(1)}}, 13), {x, i64({2}, {-1, 7})}).ok());  // negative
  EXPECT_FALSE(run_status(make_node("Split", 1, 2, {{"axis", ai(2)}}, 13), {x}).ok());  // axis
  EXPECT_FALSE(run_status(make_node("Split", 1, 2, {{"num_outputs", ai(3)}}, 18), {x}).ok());  // != outputs
  EXPECT_FALSE(run_status(make_node("Split", 1, 2, {}, 13), {f32({}, {1})}).ok());  // scalar
}

TEST(SplitOp, InferDynamic) {
  Tensor sizes = i64({2}, {3, 5});
  auto r = infer(make_node("Split", 2, 2, {{"axis", ai(1)}}, 13), {info(DataType::kFloat32, {-1, -1}), known(sizes)});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 3}));
  EXPECT_EQ(r.outs[1].dims, (Dims{-1, 5}));
  r = infer(make_node("Split", 2, 2, {{"axis", ai(1)}}, 13), {info(DataType::kFloat32, {4, 8}), info(DataType::kInt64, {2})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{4, -1}));
  r = infer(make_node("Split", 1, 2, {}, 13), {info(DataType::kFloat32, {-1, 8})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[1].dims, (Dims{-1, 8}));
  r = infer(make_node("Split", 1, 2, {}, 13), {unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.outs[0].has_shape);
  EXPECT_FALSE(r.outs[1].has_shape);
  r = infer(make_node("Split", 2, 2, {{"axis", ai(1)}}, 13), {info(DataType::kFloat32, {4, 9}), known(sizes)});
  EXPECT_FALSE(r.status.ok());
}

}  // namespace
}  // namespace streamrt

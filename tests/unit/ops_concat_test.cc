#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// All inputs' bytes back to back, so one index map can point into any of them.
Tensor pool_of(const std::vector<Tensor>& ins, std::vector<int64_t>* bases) {
  int64_t total = 0;
  for (const auto& t : ins) {
    bases->push_back(total);
    total += t.numel();
  }
  Tensor pool = Tensor::allocate(ins[0].dtype(), {total}).value();
  auto* p = static_cast<unsigned char*>(pool.mutable_data());
  for (const auto& t : ins) {
    std::memcpy(p, t.data(), t.nbytes());
    p += t.nbytes();
  }
  return pool;
}

// Naive reference: walk the output, find which input each index along `axis` falls in.
std::vector<int64_t> concat_map(const std::vector<Tensor>& ins, int64_t axis, const std::vector<int64_t>& bases,
                                Dims* out_dims) {
  Dims out = ins[0].dims();
  out[axis] = 0;
  for (const auto& t : ins) out[axis] += t.dims()[axis];
  std::vector<int64_t> map;
  for (int64_t i = 0, n = dims_numel(out); i < n; ++i) {
    auto idx = unravel(i, out);
    size_t k = 0;
    while (idx[axis] >= ins[k].dims()[axis]) idx[axis] -= ins[k++].dims()[axis];
    map.push_back(bases[k] + ravel(idx, ins[k].dims()));
  }
  *out_dims = out;
  return map;
}

void check_concat(const std::vector<Tensor>& ins, int64_t axis, int opset = 13) {
  std::vector<int64_t> bases;
  Tensor pool = pool_of(ins, &bases);
  const int64_t rank = static_cast<int64_t>(ins[0].dims().size());
  Dims out_dims;
  auto map = concat_map(ins, axis < 0 ? axis + rank : axis, bases, &out_dims);
  auto out = run_ok(make_node("Concat", ins.size(), 1, {{"axis", ai(axis)}}, opset), ins);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), out_dims) << "axis " << axis;
  expect_picked(out[0], pool, map);
}

TEST(ConcatOp, NodeTestAxesEveryDtype) {
  for (DataType dt : kAllDTypes) {
    check_concat({pattern(dt, {2}), pattern(dt, {3})}, 0);
    check_concat({pattern(dt, {2}), pattern(dt, {3})}, -1);
    for (int64_t axis : {0, 1, -1, -2}) check_concat({pattern(dt, {2, 2}), pattern(dt, {2, 2})}, axis);
    for (int64_t axis : {0, 1, 2, -1, -2, -3})
      check_concat({pattern(dt, {2, 2, 2}), pattern(dt, {2, 2, 2})}, axis);
  }
}

TEST(ConcatOp, UnequalSizesAndManyInputs) {
  check_concat({pattern(DataType::kFloat32, {2, 1, 3}), pattern(DataType::kFloat32, {2, 4, 3}),
                pattern(DataType::kFloat32, {2, 2, 3})}, 1);
  check_concat({pattern(DataType::kInt64, {1, 5})}, 0);  // a single input is a copy
}

TEST(ConcatOp, ZeroLengthInputs) {
  // Same rank, empty along the axis.
  check_concat({pattern(DataType::kFloat32, {2, 0}), pattern(DataType::kFloat32, {2, 3}),
                pattern(DataType::kFloat32, {2, 0})}, 1);
  // An empty 1-D piece next to rank-2 inputs is ignored (as onnxruntime does).
  Tensor a = pattern(DataType::kInt64, {2, 3});
  auto out = run_ok(make_node("Concat", 2, 1, {{"axis", ai(0)}}), {pattern(DataType::kInt64, {0}), a});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  expect_picked(out[0], a, iota_map(6));
  // All inputs empty.
  out = run_ok(make_node("Concat", 2, 1, {{"axis", ai(0)}}), {pattern(DataType::kInt64, {0}), pattern(DataType::kInt64, {0})});
  EXPECT_EQ(out[0].dims(), (Dims{0}));
}

TEST(ConcatOp, Opset1DefaultAxis) {
  check_concat({pattern(DataType::kFloat32, {2, 1}), pattern(DataType::kFloat32, {2, 3})}, 1, 1);
  auto out = run_ok(make_node("Concat", 2, 1, {}, 1), {pattern(DataType::kFloat32, {2, 1}), pattern(DataType::kFloat32, {2, 3})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 4}));
}

TEST(ConcatOp, Errors) {
  auto node = make_node("Concat", 2, 1, {{"axis", ai(1)}});
  EXPECT_FALSE(run_status(node, {pattern(DataType::kFloat32, {2, 3}), pattern(DataType::kFloat32, {3, 3})}).ok());
  EXPECT_FALSE(run_status(node, {pattern(DataType::kFloat32, {2, 3}), pattern(DataType::kFloat32, {2, 3, 1})}).ok());
  EXPECT_FALSE(run_status(node, {pattern(DataType::kFloat32, {2, 3}), pattern(DataType::kInt32, {2, 3})}).ok());
  EXPECT_FALSE(run_status(make_node("Concat", 2, 1, {{"axis", ai(2)}}),
                          {pattern(DataType::kFloat32, {2, 3}), pattern(DataType::kFloat32, {2, 3})}).ok());
  EXPECT_FALSE(run_status(make_node("Concat", 2, 1, {{"axis", ai(-3)}}),
                          {pattern(DataType::kFloat32, {2, 3}), pattern(DataType::kFloat32, {2, 3})}).ok());
  EXPECT_FALSE(run_status(make_node("Concat", 2, 1, {}, 13),  // axis required from opset 4
                          {pattern(DataType::kFloat32, {2, 3}), pattern(DataType::kFloat32, {2, 3})}).ok());
  EXPECT_FALSE(run_status(make_node("Concat", 2, 1, {{"axis", ai(0)}}), {f32({}, {1}), f32({}, {2})}).ok());
}

TEST(ConcatOp, InferDynamic) {
  auto node = make_node("Concat", 3, 1, {{"axis", ai(-1)}});
  auto r = infer(node, {info(DataType::kFloat32, {-1, 4, 2}), info(DataType::kFloat32, {3, -1, 5}),
                        info(DataType::kFloat32, {3, 4, 1})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{3, 4, 8}));
  r = infer(node, {info(DataType::kFloat32, {3, 4, 2}), info(DataType::kFloat32, {3, 4, -1}),
                   info(DataType::kFloat32, {3, 4, 1})});
  EXPECT_EQ(r.outs[0].dims, (Dims{3, 4, -1}));
  r = infer(node, {info(DataType::kFloat32, {3, 4, 2}), unranked(DataType::kFloat32), info(DataType::kFloat32, {3, 4, 1})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{3, 4, -1}));
  r = infer(node, {unranked(DataType::kFloat32), unranked(DataType::kFloat32), unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.outs[0].has_shape);
  r = infer(node, {info(DataType::kFloat32, {3, 4, 2}), info(DataType::kFloat32, {3, 5, -1}),
                   info(DataType::kFloat32, {3, 4, 1})});
  EXPECT_FALSE(r.status.ok());
}

}  // namespace
}  // namespace streamrt

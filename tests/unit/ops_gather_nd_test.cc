#include "indexing_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Naive reference: the flat data element each output element copies. Output dims:
// indices[:-1] + data[b + k:].
std::vector<int64_t> gather_nd_map(const Dims& data, const Dims& idx_dims, const std::vector<int64_t>& idx,
                                   int64_t b, Dims* out_dims) {
  const int64_t k = idx_dims.back();
  Dims out(idx_dims.begin(), idx_dims.end() - 1);
  out.insert(out.end(), data.begin() + b + k, data.end());
  const Dims rows(idx_dims.begin(), idx_dims.end() - 1);
  std::vector<int64_t> map;
  for (int64_t e = 0, n = dims_numel(out); e < n; ++e) {
    const auto o = unravel(e, out);
    const std::vector<int64_t> row_pos(o.begin(), o.begin() + static_cast<int64_t>(rows.size()));
    const int64_t row = ravel(row_pos, rows);
    std::vector<int64_t> d(o.begin(), o.begin() + b);  // batch coordinates
    for (int64_t j = 0; j < k; ++j) {
      const int64_t v = idx[static_cast<size_t>(row * k + j)];
      d.push_back(v < 0 ? v + data[static_cast<size_t>(b + j)] : v);
    }
    d.insert(d.end(), o.begin() + static_cast<int64_t>(rows.size()), o.end());
    map.push_back(ravel(d, data));
  }
  *out_dims = out;
  return map;
}

void check(DataType dt, const Dims& data_dims, const Dims& idx_dims, const std::vector<int64_t>& idx, int64_t b = 0,
           bool int32 = false, int opset = 13) {
  Tensor x = pattern(dt, data_dims);
  std::map<std::string, ir::Attribute> attrs;
  if (b != 0) attrs["batch_dims"] = ai(b);
  auto out = run_ok(make_node("GatherND", 2, 1, attrs, opset), {x, index_tensor(idx_dims, idx, int32)});
  ASSERT_EQ(out.size(), 1u);
  Dims dims;
  auto map = gather_nd_map(data_dims, idx_dims, idx, b, &dims);
  EXPECT_EQ(out[0].dims(), dims);
  expect_picked(out[0], x, map);
}

TEST(GatherNDOp, NodeTestCasesEveryDtype) {
  for (DataType dt : kAllDTypes) {
    check(dt, {2, 2}, {2, 2}, {0, 0, 1, 1});                        // example 1: elements
    check(dt, {2, 2}, {2, 1}, {1, 0}, 0, false, 11);                // example 2: rows
    check(dt, {2, 2, 2}, {2, 2}, {0, 1, 1, 0});                     // test_gathernd_example_float32
    check(dt, {2, 2, 2}, {2, 1, 2}, {0, 1, 1, 0});                  // test_gathernd_example_int32
    check(dt, {2, 2, 2}, {2, 1}, {1, 0}, 1, false, 12);             // ..._batch_dim1
  }
}

TEST(GatherNDOp, NegativeIndicesBatchDimsInt32) {
  check(DataType::kFloat32, {3, 4, 5}, {2, 2}, {-1, -4, 0, 3});
  check(DataType::kInt64, {2, 3, 4, 5}, {2, 3, 2}, {0, -1, 2, 3, 1, 1, 0, 0, -3, 2, 2, -4}, 1, true);
  check(DataType::kFloat16, {2, 3, 4}, {2, 3, 1}, {3, 0, -1, 1, 2, 0}, 2);  // two batch dims
  check(DataType::kUInt8, {2, 3}, {4, 0}, {});                              // k = 0: whole tensors
  check(DataType::kInt8, {4, 3}, {0, 1}, {});                               // no rows
  // Known values: the rows of example 2.
  auto out = run_ok(make_node("GatherND", 2, 1, {}, 13), {f32({2, 2}, {1, 2, 3, 4}), i64({2, 1}, {1, 0})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{3, 4, 1, 2}));
}

TEST(GatherNDOp, Errors) {
  Tensor x = pattern(DataType::kFloat32, {3, 2});
  Status st = run_status(make_node("GatherND", 2), {x, i64({1, 2}, {0, 2})});
  EXPECT_NE(st.message().find("out of range"), std::string::npos) << st.message();
  EXPECT_FALSE(run_status(make_node("GatherND", 2), {x, i64({1, 1}, {-4})}).ok());
  EXPECT_EQ(run_kernel(make_node("GatherND", 2), {x, i64({1, 1}, {3})}, DataType::kFloat32, {1, 2}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(run_status(make_node("GatherND", 2), {x, i64({1, 3}, {0, 0, 0})}).ok());  // k > rank
  EXPECT_FALSE(run_status(make_node("GatherND", 2, 1, {{"batch_dims", ai(1)}}, 13), {x, i64({2, 1}, {0, 1})}).ok());
  EXPECT_FALSE(run_status(make_node("GatherND", 2, 1, {{"batch_dims", ai(2)}}, 13), {x, i64({3, 1}, {0, 1, 0})}).ok());
  EXPECT_FALSE(run_status(make_node("GatherND", 2, 1, {{"batch_dims", ai(1)}}, 11), {x, i64({3, 1}, {0, 1, 0})}).ok());
  EXPECT_FALSE(run_status(make_node("GatherND", 2), {x, f32({1, 1}, {0})}).ok());
}

TEST(GatherNDOp, InferAndVerify) {
  auto node = make_node("GatherND", 2, 1, {{"batch_dims", ai(1)}}, 13);
  auto r = infer(node, {info(DataType::kBFloat16, {-1, 7, 8, 9}), info(DataType::kInt64, {4, -1, 1})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{4, -1, 8, 9}));
  EXPECT_EQ(r.outs[0].dtype, DataType::kBFloat16);
  r = infer(node, {info(DataType::kFloat32, {2, 7, 8}), info(DataType::kInt64, {2, 3, -1})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.outs[0].has_shape);  // the rank depends on the last dim of indices
  EXPECT_FALSE(infer(node, {info(DataType::kFloat32, {2, 7}), info(DataType::kInt64, {3, 1})}).status.ok());
  EXPECT_EQ(ops::OpRegistry::global().find("GatherND")->min_opset, 11);
  const auto ins = {info(DataType::kFloat32, {2, 5}), info(DataType::kInt64, {2, 1})};
  EXPECT_TRUE(run_verify(node, ins).ok());
  EXPECT_FALSE(run_verify(make_node("GatherND", 2, 1, {{"batch_dims", ai(2)}}, 13), ins).ok());
  EXPECT_FALSE(run_verify(make_node("GatherND", 2, 1, {{"batch_dims", ai(-1)}}, 13), ins).ok());
}

}  // namespace
}  // namespace streamrt

#include "indexing_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node scatter_node(int64_t axis, const std::string& reduction = "", int opset = 18,
                      const std::string& op = "ScatterElements") {
  std::map<std::string, ir::Attribute> attrs = {{"axis", ai(axis)}};
  if (!reduction.empty()) attrs["reduction"] = ir::Attribute::make_string(reduction);
  return make_node(op, 3, 1, attrs, opset);
}

// The ONNX node-test examples (test_scatter_elements_*, test_scatter_*), for every dtype the
// values are exact in (bool: nonzero = true, the byte copy keeps them).
TEST(ScatterElementsOp, NodeTestCasesEveryDtype) {
  for (DataType dt : kAllDTypes) {
    if (dt == DataType::kBool) continue;
    // without_axis: 3x3 zeros, axis 0.
    auto out = run_ok(scatter_node(0, "", 11),
                      {typed(dt, {3, 3}, std::vector<double>(9, 0)), index_tensor({2, 3}, {1, 0, 2, 0, 2, 1}),
                       typed(dt, {2, 3}, {1, 10, 12, 2, 21, 22})});
    EXPECT_EQ(values_f32(out[0]), (std::vector<float>{2, 10, 0, 1, 0, 22, 0, 21, 12})) << dtype_name(dt);
    // with_axis and with_negative_indices (int32 indices), axis 1.
    out = run_ok(scatter_node(1, "", 13), {typed(dt, {1, 5}, {1, 2, 3, 4, 5}), index_tensor({1, 2}, {1, -3}, true),
                                           typed(dt, {1, 2}, {11, 21})});
    EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 11, 21, 4, 5})) << dtype_name(dt);
    // The deprecated Scatter (opsets 9, 10) is the same op.
    out = run_ok(scatter_node(1, "", 10, "Scatter"), {typed(dt, {1, 5}, {1, 2, 3, 4, 5}), index_tensor({1, 2}, {1, 3}),
                                                      typed(dt, {1, 2}, {11, 21})});
    EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 11, 3, 21, 5})) << dtype_name(dt);
  }
}

TEST(ScatterElementsOp, ReductionsWithDuplicateIndices) {
  const std::vector<std::pair<std::string, std::vector<float>>> cases = {
      {"add", {1, 12, 3, 4, 5}}, {"mul", {1, 42, 3, 4, 5}}, {"max", {1, 7, 3, 4, 5}}, {"min", {1, 2, 3, 4, 5}}};
  for (DataType dt : kAllDTypes) {
    if (dt == DataType::kBool) continue;
    for (const auto& [red, want] : cases) {
      // data[0][1] = 2 combined with 3 then 7 (test_scatter_elements_with_duplicate_indices: add).
      auto out = run_ok(scatter_node(1, red), {typed(dt, {1, 5}, {1, 2, 3, 4, 5}), index_tensor({1, 2}, {1, 1}),
                                               typed(dt, {1, 2}, {3, 7})});
      EXPECT_EQ(values_f32(out[0]), want) << dtype_name(dt) << " " << red;
    }
  }
  // Floats: the add of the node test; NaN wins max.
  auto out = run_ok(scatter_node(1, "add", 16), {f32({1, 5}, {1, 2, 3, 4, 5}), index_tensor({1, 2}, {1, 1}),
                                                 f32({1, 2}, {1.1f, 2.1f})});
  EXPECT_FLOAT_EQ(values_f32(out[0])[1], 2.f + 1.1f + 2.1f);
  out = run_ok(scatter_node(0, "max"), {f32({2}, {1, 2}), index_tensor({2}, {0, 1}), f32({2}, {NAN, 1})});
  EXPECT_TRUE(std::isnan(values_f32(out[0])[0]));
  EXPECT_EQ(values_f32(out[0])[1], 2.f);
  // Integers wrap instead of overflowing; bools: add = or, mul = and.
  out = run_ok(scatter_node(0, "add"), {typed(DataType::kInt8, {1}, {120}), index_tensor({1}, {0}),
                                        typed(DataType::kInt8, {1}, {10})});
  EXPECT_EQ(values_f32(out[0])[0], -126.f);
  out = run_ok(scatter_node(0, "mul"), {typed(DataType::kBool, {2}, {1, 1}), index_tensor({2}, {0, 1}),
                                        typed(DataType::kBool, {2}, {0, 1})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 1}));
}

TEST(ScatterElementsOp, ByteCopyEveryDtypeRank3) {
  // Updates land at their own multi-index with the axis coordinate replaced: checked against
  // a naive map, every dtype moved byte-exactly.
  for (DataType dt : kAllDTypes) {
    Tensor x = pattern(dt, {2, 3, 4});
    Tensor u = pattern(dt, {2, 2, 4});
    const std::vector<int64_t> idx = {2, 0, 1, 2, 0, -1, 1, 0, 1, 1, 2, 0, -3, 2, 2, 2};  // distinct per column
    auto out = run_ok(scatter_node(1), {x, index_tensor({2, 2, 4}, idx), u});
    ASSERT_EQ(out[0].dims(), (Dims{2, 3, 4}));
    std::vector<int64_t> want_from(24, -1);  // -1: keeps x, else updates element
    for (int64_t i = 0; i < 16; ++i) {
      auto pos = unravel(i, {2, 2, 4});
      const int64_t v = idx[static_cast<size_t>(i)];
      pos[1] = v < 0 ? v + 3 : v;
      want_from[static_cast<size_t>(ravel(pos, {2, 3, 4}))] = i;
    }
    const size_t es = dtype_size(dt);
    for (size_t k = 0; k < 24; ++k) {
      const auto* got = static_cast<const char*>(out[0].data()) + k * es;
      const auto* want = want_from[k] < 0 ? static_cast<const char*>(x.data()) + k * es
                                          : static_cast<const char*>(u.data()) + static_cast<size_t>(want_from[k]) * es;
      EXPECT_EQ(std::memcmp(got, want, es), 0) << dtype_name(dt) << " element " << k;
    }
  }
}

TEST(ScatterElementsOp, Errors) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  // Out-of-range index (build time and kernel), shape mismatches, bad axis, reduction vs opset.
  Status st = run_status(scatter_node(1), {x, index_tensor({1, 1}, {3}), f32({1, 1}, {0})});
  EXPECT_NE(st.message().find("out of range"), std::string::npos) << st.message();
  EXPECT_EQ(run_kernel(scatter_node(1), {x, index_tensor({1, 1}, {-4}), f32({1, 1}, {0})}, DataType::kFloat32, {2, 3})
                .code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(run_status(scatter_node(1), {x, index_tensor({1, 2}, {0, 1}), f32({1, 1}, {0})}).ok());
  EXPECT_FALSE(run_status(scatter_node(0), {x, index_tensor({1, 4}, {0, 1, 0, 1}), f32({1, 4}, {0, 0, 0, 0})}).ok());
  EXPECT_FALSE(run_status(scatter_node(2), {x, index_tensor({1, 1}, {0}), f32({1, 1}, {0})}).ok());
  EXPECT_FALSE(run_status(scatter_node(0, "add", 13), {x, index_tensor({1, 1}, {0}), f32({1, 1}, {0})}).ok());
  EXPECT_FALSE(run_status(scatter_node(0, "max", 17), {x, index_tensor({1, 1}, {0}), f32({1, 1}, {0})}).ok());
  EXPECT_FALSE(run_status(scatter_node(0, "avg"), {x, index_tensor({1, 1}, {0}), f32({1, 1}, {0})}).ok());
  EXPECT_FALSE(run_status(scatter_node(0, "add", 18, "Scatter"), {x, index_tensor({1, 1}, {0}), f32({1, 1}, {0})}).ok());
  EXPECT_FALSE(run_status(scatter_node(0), {x, index_tensor({1, 1}, {0}), i64({1, 1}, {0})}).ok());  // updates type
}

TEST(ScatterElementsOp, InferAndVerify) {
  auto r = infer(scatter_node(1), {info(DataType::kFloat16, {-1, 8}), info(DataType::kInt64, {-1, 2}),
                                   info(DataType::kFloat16, {4, -1})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 8}));
  EXPECT_EQ(r.outs[0].dtype, DataType::kFloat16);
  EXPECT_FALSE(infer(scatter_node(1), {info(DataType::kFloat32, {2, 8}), info(DataType::kInt64, {2, 2}),
                                       info(DataType::kFloat32, {3, 2})})
                   .status.ok());
  EXPECT_EQ(ops::OpRegistry::global().find("ScatterElements")->min_opset, 11);
  EXPECT_EQ(ops::OpRegistry::global().find("Scatter")->min_opset, 9);
  const auto ins = {info(DataType::kFloat32, {2, 5}), info(DataType::kInt64, {2, 5}), info(DataType::kFloat32, {2, 5})};
  EXPECT_FALSE(run_verify(scatter_node(2), ins).ok());
  EXPECT_TRUE(run_verify(scatter_node(-1), ins).ok());
}

}  // namespace
}  // namespace streamrt

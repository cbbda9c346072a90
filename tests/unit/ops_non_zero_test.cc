// NonZero: indices of non-zero elements, [rank, count]; a data-dependent output shape that the
// runtime sizes from the input's contents (end to end through an engine with a runtime input).
#include <cmath>
#include <filesystem>

#include "engine_test_util.h"
#include "op_test_util.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node nonzero_node() { return make_node("NonZero", 1, 1, {}, 13); }

// Column-major reference: the indices of each non-zero element in row-major order.
std::vector<int64_t> reference(const std::vector<float>& x, const Dims& dims) {
  std::vector<std::vector<int64_t>> cols;
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    if (x[static_cast<size_t>(i)] == 0.f) continue;
    std::vector<int64_t> idx(dims.size());
    int64_t r = i;
    for (size_t d = dims.size(); d-- > 0;) idx[d] = r % dims[d], r /= dims[d];
    cols.push_back(idx);
  }
  std::vector<int64_t> out;
  for (size_t d = 0; d < dims.size(); ++d)
    for (const auto& c : cols) out.push_back(c[d]);
  return out;
}

TEST(NonZero, IndicesInRowMajorOrder) {
  const std::vector<float> x = {0, 1.5f, 0, -2, 0, 0, -0.f, 3};
  auto out = run_ok(nonzero_node(), {f32({2, 2, 2}, x)});
  EXPECT_EQ(out[0].dtype(), DataType::kInt64);
  EXPECT_EQ(out[0].dims(), (Dims{3, 3}));
  EXPECT_EQ(values_i64(out[0]), reference(x, {2, 2, 2}));
}

TEST(NonZero, BoolIntegersNanScalarAndNone) {
  auto b = Tensor::from_vector(DataType::kBool, {4}, std::vector<uint8_t>{0, 1, 1, 0});
  EXPECT_EQ(values_i64(run_ok(nonzero_node(), {b})[0]), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(values_i64(run_ok(nonzero_node(), {i64({3}, {0, 0, 7})})[0]), (std::vector<int64_t>{2}));
  auto nan = run_ok(nonzero_node(), {f32({2}, {0.f, std::nanf("")})});
  EXPECT_EQ(values_i64(nan[0]), (std::vector<int64_t>{1}));
  auto scalar = run_ok(nonzero_node(), {f32({}, {5.f})});
  EXPECT_EQ(scalar[0].dims(), (Dims{1, 1}));
  auto none = run_ok(nonzero_node(), {f32({2, 3}, std::vector<float>(6, 0.f))});
  EXPECT_EQ(none[0].dims(), (Dims{2, 0}));
}

// x [2, 3] is a graph input: the build knows only [2, -1]; each run sizes the output from x.
TEST(NonZero, RuntimeInputSizesTheOutputPerRun) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT, {int64_t{2}, int64_t{3}});
  add_output(g, "y", onnx::TensorProto_DataType_INT64, {int64_t{2}, std::string("n")});
  add_node(g, "NonZero", "nz", {"x"}, {"y"});
  auto engine = cpu_engine_from_model(m);
  ASSERT_NE(engine, nullptr);
  auto ctx = engine->create_execution_context().value();
  for (const std::vector<float>& x : {std::vector<float>{1, 0, 2, 0, 0, 3}, std::vector<float>{1, 1, 1, 1, 1, 1},
                                      std::vector<float>{0, 0, 0, 0, 0, 0}}) {
    std::vector<int64_t> y(12, -7);
    ASSERT_TRUE(ctx->set_tensor_address("x", const_cast<float*>(x.data()), x.size() * 4).ok());
    ASSERT_TRUE(ctx->set_tensor_address("y", y.data(), y.size() * 8).ok());
    ASSERT_TRUE(ctx->execute().ok());
    const std::vector<int64_t> want = reference(x, {2, 3});
    EXPECT_EQ(ctx->tensor_shape("y").value(), (Dims{2, static_cast<int64_t>(want.size() / 2)}));
    EXPECT_EQ(std::vector<int64_t>(y.begin(), y.begin() + static_cast<long>(want.size())), want);
  }
}

}  // namespace
}  // namespace streamrt

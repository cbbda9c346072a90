#include <algorithm>

#include "indexing_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node scatter_nd(const std::string& reduction = "", int opset = 18) {
  std::map<std::string, ir::Attribute> attrs;
  if (!reduction.empty()) attrs["reduction"] = ir::Attribute::make_string(reduction);
  return make_node("ScatterND", 3, 1, attrs, opset);
}

// Naive reference in double: rows of indices in order, each combining its slice of updates
// into the addressed slice of data.
std::vector<float> reference(std::vector<double> data, const Dims& dd, const std::vector<int64_t>& idx, int64_t k,
                             const std::vector<double>& upd, const std::string& red) {
  int64_t slice = 1;
  for (size_t d = static_cast<size_t>(k); d < dd.size(); ++d) slice *= dd[d];
  const int64_t rows = k == 0 ? static_cast<int64_t>(upd.size()) / slice : static_cast<int64_t>(idx.size()) / k;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> pos(dd.size(), 0);
    for (int64_t j = 0; j < k; ++j) {
      const int64_t v = idx[static_cast<size_t>(r * k + j)];
      pos[static_cast<size_t>(j)] = v < 0 ? v + dd[static_cast<size_t>(j)] : v;
    }
    const int64_t base = ravel(pos, dd);
    for (int64_t e = 0; e < slice; ++e) {
      double& y = data[static_cast<size_t>(base + e)];
      const double u = upd[static_cast<size_t>(r * slice + e)];
      if (red == "add") y += u;
      else if (red == "mul") y *= u;
      else if (red == "max") y = std::max(y, u);
      else if (red == "min") y = std::min(y, u);
      else y = u;
    }
  }
  return std::vector<float>(data.begin(), data.end());
}

void check(DataType dt, const std::vector<double>& data, const Dims& dd, const std::vector<int64_t>& idx,
           const Dims& id, const std::vector<double>& upd, const Dims& ud, const std::string& red, bool int32 = false) {
  auto out = run_ok(scatter_nd(red), {typed(dt, dd, data), index_tensor(id, idx, int32), typed(dt, ud, upd)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), dd);
  EXPECT_EQ(values_f32(out[0]), reference(data, dd, idx, id.back(), upd, red)) << dtype_name(dt) << " " << red;
}

std::vector<double> iota(int64_t n, double start = 1) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<double>(i % 9);
  return v;
}

// 0, 1, 2, 0, ...: updates whose repeated products stay exact in int8.
std::vector<double> small(int64_t n) {
  std::vector<double> v(static_cast<size_t>(n));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 3);
  return v;
}

TEST(ScatterNDOp, NodeTestCasesEveryDtypeAndReduction) {
  for (DataType dt : kAllDTypes) {
    if (dt == DataType::kBool) continue;
    for (const std::string red : {"", "add", "mul", "max", "min"}) {
      // 1-D example of the spec: single elements.
      check(dt, iota(8), {8}, {4, 3, 1, 7}, {4, 1}, {9, 10, 11, 12}, {4}, red);
      // test_scatternd / _add / _multiply: 4x4 slices of a 4x4x4 tensor (then duplicate rows,
      // as in the add / multiply cases).
      check(dt, iota(64), {4, 4, 4}, {0, 2}, {2, 1}, iota(32, 0), {2, 4, 4}, red);
      check(dt, iota(64), {4, 4, 4}, {0, 0}, {2, 1}, small(32), {2, 4, 4}, red, true);
      // Rows of k = 2 with negative indices, k = 3 (elements).
      check(dt, iota(24), {2, 3, 4}, {1, -1, -2, 0, 1, 2}, {3, 2}, iota(12, 2), {3, 4}, red);
      check(dt, iota(24), {2, 3, 4}, {1, 2, 3, 0, 0, -1}, {2, 3}, {7, 6}, {2}, red);
    }
  }
}

TEST(ScatterNDOp, KnownValuesAndBytes) {
  auto out = run_ok(scatter_nd("", 11), {f32({8}, {1, 2, 3, 4, 5, 6, 7, 8}), i64({4, 1}, {4, 3, 1, 7}),
                                         f32({4}, {9, 10, 11, 12})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));
  // Bools and every other dtype move byte-exactly without a reduction.
  for (DataType dt : kAllDTypes) {
    Tensor x = pattern(dt, {3, 2});
    Tensor u = pattern(dt, {1, 2});
    out = run_ok(scatter_nd(), {x, i64({1, 1}, {-2}), u});
    const size_t row = 2 * dtype_size(dt);
    const auto* got = static_cast<const char*>(out[0].data());
    const auto* xs = static_cast<const char*>(x.data());
    EXPECT_EQ(std::memcmp(got, xs, row), 0);
    EXPECT_EQ(std::memcmp(got + row, u.data(), row), 0);
    EXPECT_EQ(std::memcmp(got + 2 * row, xs + 2 * row, row), 0);
  }
  out = run_ok(scatter_nd("add"), {typed(DataType::kBool, {2}, {0, 1}), i64({2, 1}, {0, 1}),
                                   typed(DataType::kBool, {2}, {1, 0})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 1}));  // add = or
}

TEST(ScatterNDOp, Errors) {
  Tensor x = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Status st = run_status(scatter_nd(), {x, i64({1, 1}, {2}), f32({1, 3}, {0, 0, 0})});
  EXPECT_NE(st.message().find("out of range"), std::string::npos) << st.message();
  EXPECT_EQ(run_kernel(scatter_nd(), {x, i64({1, 2}, {0, -4}), f32({1}, {0})}, DataType::kFloat32, {2, 3}).code(),
            StatusCode::kInvalidArgument);
  EXPECT_FALSE(run_status(scatter_nd(), {x, i64({1, 1}, {0}), f32({1, 2}, {0, 0})}).ok());    // updates shape
  EXPECT_FALSE(run_status(scatter_nd(), {x, i64({1, 3}, {0, 0, 0}), f32({1}, {0})}).ok());   // k > rank
  EXPECT_FALSE(run_status(scatter_nd("mul", 15), {x, i64({1, 1}, {0}), f32({1, 3}, {0, 0, 0})}).ok());
  EXPECT_FALSE(run_status(scatter_nd("min", 16), {x, i64({1, 1}, {0}), f32({1, 3}, {0, 0, 0})}).ok());
  EXPECT_FALSE(run_status(scatter_nd(), {x, f32({1, 1}, {0}), f32({1, 3}, {0, 0, 0})}).ok());  // float indices
}

TEST(ScatterNDOp, Infer) {
  auto r = infer(scatter_nd(), {info(DataType::kFloat16, {-1, 8, 4}), info(DataType::kInt64, {5, 2}),
                                info(DataType::kFloat16, {-1, 4})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 8, 4}));
  EXPECT_FALSE(infer(scatter_nd(), {info(DataType::kFloat32, {6, 8, 4}), info(DataType::kInt64, {5, 2}),
                                    info(DataType::kFloat32, {5, 3})})
                   .status.ok());
  EXPECT_EQ(ops::OpRegistry::global().find("ScatterND")->min_opset, 11);
}

}  // namespace
}  // namespace streamrt

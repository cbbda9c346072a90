#include <limits>

#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Naive reference over the last two axes.
std::vector<int64_t> trilu_ref(const std::vector<int64_t>& x, const Dims& dims, bool upper, int64_t k) {
  const int64_t rows = dims[dims.size() - 2], cols = dims.back();
  std::vector<int64_t> out(x.size());
  for (size_t n = 0; n < x.size(); ++n) {
    const int64_t j = static_cast<int64_t>(n) % cols, i = (static_cast<int64_t>(n) / cols) % rows;
    const bool keep = upper ? j - i >= k : j - i <= k;
    out[n] = keep ? x[n] : 0;
  }
  return out;
}

std::vector<int64_t> counting(size_t n) {
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<int64_t>(i) + 1;
  return v;
}

TEST(Trilu, UpperAndLowerWithEveryK) {
  for (const Dims& dims : {Dims{4, 5}, Dims{5, 4}, Dims{2, 3, 3}, Dims{3, 1, 5}, Dims{2, 2, 2, 3}}) {
    auto x = counting(static_cast<size_t>(dims_numel(dims)));
    for (int64_t upper : {0, 1}) {
      for (int64_t k : {-7, -2, -1, 0, 1, 2, 7}) {
        SCOPED_TRACE(dims_to_string(dims) + " upper " + std::to_string(upper) + " k " + std::to_string(k));
        auto out = run_ok(make_node("Trilu", 2, 1, {{"upper", attr_i(upper)}}, 14), {i64(dims, x), i64({}, {k})});
        ASSERT_EQ(out.size(), 1u);
        EXPECT_EQ(out[0].dims(), dims);
        EXPECT_EQ(values_i64(out[0]), trilu_ref(x, dims, upper != 0, k));
      }
    }
  }
}

TEST(Trilu, DefaultsAreUpperAndKZero) {
  auto x = counting(12);
  auto out = run_ok(make_node("Trilu", 1, 1, {}, 14), {i64({3, 4}, x)});
  EXPECT_EQ(values_i64(out[0]), trilu_ref(x, {3, 4}, true, 0));
}

TEST(Trilu, HugeKIsClamped) {
  auto x = counting(6);
  const int64_t big = std::numeric_limits<int64_t>::max(), small = std::numeric_limits<int64_t>::min();
  auto out = run_ok(make_node("Trilu", 2, 1, {}, 14), {i64({2, 3}, x), i64({}, {big})});
  EXPECT_EQ(values_i64(out[0]), std::vector<int64_t>(6, 0));
  out = run_ok(make_node("Trilu", 2, 1, {}, 14), {i64({2, 3}, x), i64({}, {small})});
  EXPECT_EQ(values_i64(out[0]), x);
  out = run_ok(make_node("Trilu", 2, 1, {{"upper", attr_i(0)}}, 14), {i64({2, 3}, x), i64({}, {big})});
  EXPECT_EQ(values_i64(out[0]), x);
  out = run_ok(make_node("Trilu", 2, 1, {{"upper", attr_i(0)}}, 14), {i64({2, 3}, x), i64({}, {small})});
  EXPECT_EQ(values_i64(out[0]), std::vector<int64_t>(6, 0));
}

TEST(Trilu, OtherTypesAndEmpty) {
  auto out = run_ok(make_node("Trilu", 1, 1, {{"upper", attr_i(0)}}, 14), {f32({2, 2}, {1.5f, 2.5f, 3.5f, 4.5f})});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1.5f, 0, 3.5f, 4.5f}));
  out = run_ok(make_node("Trilu", 1, 1, {}, 14), {f16({2, 2}, {1, 2, 3, 4})});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 2, 0, 4}));
  out = run_ok(make_node("Trilu", 1, 1, {}, 14),
               {Tensor::from_vector(DataType::kBool, {2, 2}, std::vector<uint8_t>{1, 1, 1, 1})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{1, 1, 0, 1}));
  out = run_ok(make_node("Trilu", 2, 1, {}, 14), {empty_of(DataType::kInt64, {3, 0, 5}), i64({}, {6})});
  EXPECT_EQ(out[0].dims(), (Dims{3, 0, 5}));
}

TEST(Trilu, InferAndErrors) {
  auto r = infer_infos(make_node("Trilu", 2, 1, {}, 14), {known(DataType::kFloat32, {-1, -1, 4}),
                                                         known(DataType::kInt64, {})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, -1, 4}));
  r = infer_infos(make_node("Trilu", 1, 1, {}, 14), {unranked(DataType::kInt32)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
  EXPECT_EQ((*r)[0].dtype, DataType::kInt32);
  EXPECT_FALSE(run_status(make_node("Trilu", 1, 1, {}, 14), {i64({3}, {1, 2, 3})}).ok());
  EXPECT_FALSE(run_status(make_node("Trilu", 2, 1, {}, 14), {i64({2, 2}, counting(4)), f32({}, {1})}).ok());
  EXPECT_FALSE(run_status(make_node("Trilu", 2, 1, {}, 14), {i64({2, 2}, counting(4)), i64({2}, {1, 2})}).ok());
  EXPECT_FALSE(run_status(make_node("Trilu", 1, 1, {{"upper", attr_f(1)}}, 14), {i64({2, 2}, counting(4))}).ok());
}

}  // namespace
}  // namespace streamrt

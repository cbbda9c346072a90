#include <limits>

#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node range_node() { return make_node("Range", 3, 1, {}, 11); }

Tensor sf(float v) { return f32({}, {v}); }
Tensor si(int64_t v) { return i64({}, {v}); }

// Naive reference: count by stepping (not by the closed-form length).
template <typename T>
std::vector<T> range_ref(T start, T limit, T delta) {
  std::vector<T> out;
  for (int64_t i = 0;; ++i) {
    T v = static_cast<T>(start + static_cast<T>(i) * delta);
    if (delta > 0 ? v >= limit : v <= limit) break;
    out.push_back(v);
  }
  return out;
}

TEST(Range, FloatAndIntegerTypes) {
  auto out = run_ok(range_node(), {sf(1), sf(5), sf(2)});
  EXPECT_EQ(out[0].dims(), (Dims{2}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{1, 3}));
  out = run_ok(range_node(), {sf(0), sf(1), sf(0.3f)});
  EXPECT_EQ(values_f32(out[0]), range_ref<float>(0, 1, 0.3f));
  EXPECT_EQ(out[0].numel(), 4);
  out = run_ok(range_node(), {sf(2.5f), sf(-1), sf(-0.75f)});
  EXPECT_EQ(values_f32(out[0]), range_ref<float>(2.5f, -1, -0.75f));
  out = run_ok(range_node(), {i32({}, {10}), i32({}, {4}), i32({}, {-3})});
  EXPECT_EQ(out[0].dtype(), DataType::kInt32);
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{10, 7}));
  out = run_ok(range_node(), {si(-4), si(9), si(3)});
  EXPECT_EQ(values_i64(out[0]), range_ref<int64_t>(-4, 9, 3));
}

TEST(Range, EmptyWhenDeltaPointsAway) {
  auto out = run_ok(range_node(), {si(5), si(1), si(2)});
  EXPECT_EQ(out[0].dims(), (Dims{0}));
  out = run_ok(range_node(), {sf(1), sf(1), sf(-1)});
  EXPECT_EQ(out[0].dims(), (Dims{0}));
}

TEST(Range, ExtremeIntegersDoNotOverflow) {
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  auto out = run_ok(range_node(), {si(lo), si(hi), si(hi)});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{lo, -1, hi - 1}));
}

TEST(Range, AcceptsOneElementVectors) {
  auto out = run_ok(range_node(), {i64({1}, {0}), i64({1}, {3}), i64({1}, {1})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{0, 1, 2}));
}

TEST(Range, InferLengthKnownOnlyWithValues) {
  Tensor s = si(0), l = si(10), d = si(4);
  auto r = infer_infos(range_node(), {value_of(s), value_of(l), value_of(d)});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{3}));
  r = infer_infos(range_node(), {value_of(s), known(DataType::kInt64, {}), value_of(d)});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].has_shape);
  EXPECT_EQ((*r)[0].dims, (Dims{-1}));
  EXPECT_EQ((*r)[0].dtype, DataType::kInt64);
  r = infer_infos(range_node(), {unranked(DataType::kFloat32), unranked(DataType::kFloat32),
                                 unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{-1}));
  const auto* schema = ops::OpRegistry::global().find("Range");
  ASSERT_NE(schema, nullptr);
  EXPECT_EQ(schema->shape_inputs, (std::vector<int>{0, 1, 2}));
}

TEST(Range, Errors) {
  EXPECT_EQ(run_status(range_node(), {si(0), si(5), si(0)}).code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(run_status(range_node(), {sf(0), sf(5), sf(0)}).ok());
  Tensor zero = si(0), five = si(5), dz = si(0);
  EXPECT_FALSE(infer_infos(range_node(), {value_of(zero), value_of(five), value_of(dz)}).ok());
  EXPECT_FALSE(run_status(range_node(), {si(0), sf(5), si(1)}).ok());             // mixed types
  EXPECT_FALSE(run_status(range_node(), {i64({2}, {0, 1}), si(5), si(1)}).ok());  // not a scalar
  EXPECT_EQ(run_status(range_node(), {f16({}, {0}), f16({}, {4}), f16({}, {1})}).code(), StatusCode::kUnsupported);
  Status st = run_status(range_node(), {si(0), si(std::numeric_limits<int64_t>::max()), si(1)});
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("too large"), std::string::npos) << st.message();
  EXPECT_FALSE(run_status(range_node(), {sf(0), sf(INFINITY), sf(1)}).ok());
  EXPECT_FALSE(run_status(range_node(), {sf(0), sf(NAN), sf(1)}).ok());
  EXPECT_FALSE(run_status(make_node("Range", 2, 1, {}, 11), {si(0), si(1)}).ok());
}

}  // namespace
}  // namespace streamrt

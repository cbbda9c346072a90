#include <cmath>
#include <limits>

#include "elementwise_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node arg_node(const char* op, int64_t axis, int64_t keepdims, int64_t last = 0, int opset = 13) {
  std::map<std::string, ir::Attribute> a{{"axis", ir::Attribute::make_int(axis)},
                                         {"keepdims", ir::Attribute::make_int(keepdims)}};
  if (opset >= 12) a["select_last_index"] = ir::Attribute::make_int(last);
  return make_node(op, 1, 1, std::move(a), opset);
}

// Naive reference over a [2, 3, 4] tensor: index along `axis` of the extreme, first or last.
std::vector<int64_t> reference(const std::vector<float>& x, int axis, bool is_max, bool last) {
  const int64_t d[3] = {2, 3, 4};
  std::vector<int64_t> out;
  int64_t c[3];
  const int a1 = (axis + 1) % 3, a2 = (axis + 2) % 3;
  const int lo = std::min(a1, a2), hi = std::max(a1, a2);
  for (c[lo] = 0; c[lo] < d[lo]; ++c[lo])
    for (c[hi] = 0; c[hi] < d[hi]; ++c[hi]) {
      int64_t best = -1;
      float bv = 0;
      for (c[axis] = 0; c[axis] < d[axis]; ++c[axis]) {
        const float v = x[(c[0] * 3 + c[1]) * 4 + c[2]];
        const bool take = best < 0 || (is_max ? (last ? v >= bv : v > bv) : (last ? v <= bv : v < bv));
        if (take) best = c[axis], bv = v;
      }
      out.push_back(best);
    }
  return out;
}

TEST(ArgReduce, EveryAxisKeepdimsAndSelectLast) {
  std::vector<float> x(24);
  for (int i = 0; i < 24; ++i) x[i] = static_cast<float>((i * 7) % 5);  // many ties
  for (const char* op : {"ArgMax", "ArgMin"}) {
    for (int axis = 0; axis < 3; ++axis) {
      for (int64_t last : {0, 1}) {
        SCOPED_TRACE(std::string(op) + " axis " + std::to_string(axis) + " last " + std::to_string(last));
        auto want = reference(x, axis, std::string(op) == "ArgMax", last != 0);
        auto out = run_ok(arg_node(op, axis, 1, last), {f32({2, 3, 4}, x)});
        Dims kept{2, 3, 4};
        kept[axis] = 1;
        EXPECT_EQ(out[0].dtype(), DataType::kInt64);
        EXPECT_EQ(out[0].dims(), kept);
        EXPECT_EQ(values_i64(out[0]), want);
        out = run_ok(arg_node(op, axis - 3, 0, last), {f32({2, 3, 4}, x)});  // negative axis, dropped
        Dims dropped{2, 3, 4};
        dropped.erase(dropped.begin() + axis);
        EXPECT_EQ(out[0].dims(), dropped);
        EXPECT_EQ(values_i64(out[0]), want);
      }
    }
  }
}

TEST(ArgReduce, DefaultsAndOldOpsets) {
  // Opset 1 / 11: axis 0, keepdims 1, no select_last_index (the first extreme).
  for (int opset : {1, 11}) {
    auto out = run_ok(make_node("ArgMax", 1, 1, {}, opset), {f32({3, 2}, {1, 5, 7, 5, 7, 2})});
    EXPECT_EQ(out[0].dims(), (Dims{1, 2}));
    EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{1, 0}));
  }
}

TEST(ArgReduce, IntegerHalfAndNaN) {
  auto out = run_ok(arg_node("ArgMin", 0, 0), {i8({4}, {3, -128, 5, -128})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{1}));
  out = run_ok(arg_node("ArgMin", 0, 0, 1), {u8({4}, {3, 0, 5, 0})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{3}));
  out = run_ok(arg_node("ArgMax", 1, 0), {bf16({2, 3}, {1, 2, 3, 6, 5, 4})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{2, 0}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* op : {"ArgMax", "ArgMin"}) {
    out = run_ok(arg_node(op, 0, 0), {f32({5}, {1, nan, 9, nan, -9})});
    EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{1})) << op;  // numpy: the first NaN
    out = run_ok(arg_node(op, 0, 0, 1), {f32({5}, {1, nan, 9, nan, -9})});
    EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{3})) << op;
  }
}

TEST(ArgReduce, ShapesAndErrors) {
  auto infos = infer_only(arg_node("ArgMax", -1, 0), {info(DataType::kFloat32, {-1, 7})});
  ASSERT_TRUE(infos.ok());
  EXPECT_EQ((*infos)[0].dims, (Dims{-1}));
  EXPECT_EQ((*infos)[0].dtype, DataType::kInt64);
  EXPECT_EQ(run_status(arg_node("ArgMax", 2, 1), {f32({2, 2}, {1, 2, 3, 4})}).code(), StatusCode::kInvalidModel);
  EXPECT_FALSE(run_status(arg_node("ArgMax", 0, 1), {f32({}, {1})}).ok());
  // An empty axis has no extreme; an empty outer part is just an empty result.
  EXPECT_FALSE(run_status(arg_node("ArgMax", 1, 1), {Tensor::allocate(DataType::kFloat32, {2, 0}).value()}).ok());
  auto out = run_ok(arg_node("ArgMax", 1, 1), {Tensor::allocate(DataType::kFloat32, {0, 3}).value()});
  EXPECT_EQ(out[0].dims(), (Dims{0, 1}));
}

TEST(ArgReduce, PlanLoadBoundsAxis) {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    const ops::OpSchema* s = ops::OpRegistry::global().find(op);
    ASSERT_TRUE(s && s->verify);
    for (int64_t axis : {-3, -1, 0, 2, 3}) {
      ir::Node n = arg_node(op, axis, 1);
      ops::InferContext ctx(n, {info(DataType::kFloat32, {2, 3, 4})}, 1);
      EXPECT_EQ(s->verify(ctx).ok(), axis < 3) << op << " axis " << axis;
    }
  }
}

}  // namespace
}  // namespace streamrt

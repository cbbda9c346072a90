#include <functional>
#include <limits>

#include "ops_norm_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

using Fold = std::function<double(const std::vector<double>&)>;

// Naive reference: each output gathers the inputs whose coordinates on the kept axes match.
std::vector<double> reduce_ref(const std::vector<float>& x, const Dims& dims, const std::vector<bool>& red,
                               const Fold& fold) {
  const size_t rank = dims.size();
  Dims keep(rank);
  for (size_t d = 0; d < rank; ++d) keep[d] = red[d] ? 1 : dims[d];
  const int64_t n_out = dims_numel(keep), n_in = dims_numel(dims);
  std::vector<double> out;
  for (int64_t o = 0; o < n_out; ++o) {
    Dims oc(rank);
    for (int64_t r = o, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) { oc[d] = r % keep[d]; r /= keep[d]; }
    std::vector<double> group;
    for (int64_t i = 0; i < n_in; ++i) {
      bool match = true;
      for (int64_t r = i, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
        if (!red[d] && r % dims[d] != oc[d]) match = false;
        r /= dims[d];
      }
      if (match) group.push_back(x[i]);
    }
    out.push_back(fold(group));
  }
  return out;
}

const std::map<std::string, Fold>& folds() {
  static const std::map<std::string, Fold> f = {
      {"ReduceSum", [](const auto& g) { double s = 0; for (double v : g) s += v; return s; }},
      {"ReduceMean", [](const auto& g) { double s = 0; for (double v : g) s += v; return s / g.size(); }},
      {"ReduceMax", [](const auto& g) { double m = -INFINITY; for (double v : g) m = std::max(m, v); return m; }},
      {"ReduceMin", [](const auto& g) { double m = INFINITY; for (double v : g) m = std::min(m, v); return m; }},
      {"ReduceProd", [](const auto& g) { double p = 1; for (double v : g) p *= v; return p; }},
      {"ReduceL1", [](const auto& g) { double s = 0; for (double v : g) s += std::abs(v); return s; }},
      {"ReduceL2", [](const auto& g) { double s = 0; for (double v : g) s += v * v; return std::sqrt(s); }},
      {"ReduceSumSquare", [](const auto& g) { double s = 0; for (double v : g) s += v * v; return s; }},
      {"ReduceLogSum", [](const auto& g) { double s = 0; for (double v : g) s += v; return std::log(s); }},
      {"ReduceLogSumExp", [](const auto& g) { double s = 0; for (double v : g) s += std::exp(v); return std::log(s); }},
  };
  return f;
}

// Positive data (LogSum needs it), a mix of magnitudes.
std::vector<float> data(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = 0.5f + static_cast<float>((i * 7) % 11) * 0.25f;
  return v;
}

// Node for `op` at `opset` with axes given the way that opset expects (input from ReduceSum 13 /
// others 18, attribute before). Returns the extra inputs to pass.
ir::Node reduce_node(const std::string& op, int opset, const std::optional<std::vector<int64_t>>& axes,
                     int64_t keepdims, std::vector<Tensor>& inputs, int64_t noop = -1) {
  const bool axes_input = opset >= (op == "ReduceSum" ? 13 : 18);
  std::map<std::string, ir::Attribute> attrs{{"keepdims", attr_i(keepdims)}};
  if (noop >= 0) attrs["noop_with_empty_axes"] = attr_i(noop);
  if (axes && !axes_input) attrs["axes"] = attr_is(*axes);
  if (axes && axes_input) {
    inputs.push_back(i64({static_cast<int64_t>(axes->size())}, *axes));
    return make_node(op, 2, 1, attrs, opset);
  }
  return make_node(op, 1, 1, attrs, opset);
}

struct Case {
  std::optional<std::vector<int64_t>> axes;
  std::vector<bool> reduced;
};

TEST(Reduce, EveryOpAxesKeepdimsAndOpsets) {
  const Dims dims{3, 2, 4};
  auto x = data(24);
  const std::vector<Case> cases = {
      {std::vector<int64_t>{1}, {false, true, false}},
      {std::vector<int64_t>{-2}, {false, true, false}},
      {std::vector<int64_t>{0, 2}, {true, false, true}},
      {std::vector<int64_t>{2, -3}, {true, false, true}},
      {std::nullopt, {true, true, true}},
  };
  for (const auto& [op, fold] : folds()) {
    for (int opset : {11, 13, 18}) {
      for (const auto& c : cases) {
        for (int64_t keepdims : {0, 1}) {
          std::vector<Tensor> inputs{f32(dims, x)};
          auto node = reduce_node(op, opset, c.axes, keepdims, inputs);
          SCOPED_TRACE(op + " opset " + std::to_string(opset) + " keepdims " + std::to_string(keepdims) +
                       " axes " + (c.axes ? dims_to_string(*c.axes) : "none"));
          auto out = run_ok(node, inputs);
          ASSERT_EQ(out.size(), 1u);
          Dims want_dims;
          for (size_t d = 0; d < 3; ++d)
            if (!c.reduced[d]) want_dims.push_back(dims[d]);
            else if (keepdims) want_dims.push_back(1);
          EXPECT_EQ(out[0].dims(), want_dims);
          expect_close(values_f32(out[0]), reduce_ref(x, dims, c.reduced, fold), 1e-5, 1e-5);
        }
      }
    }
  }
}

TEST(Reduce, EmptyAxesInputReducesAllOrNothing) {
  auto x = data(12);
  std::vector<Tensor> none{f32({3, 4}, x), i64({0}, {})};
  // noop_with_empty_axes = 0: every axis.
  auto out = run_ok(make_node("ReduceSum", 2, 1, {{"keepdims", attr_i(1)}}, 13), none);
  EXPECT_EQ(out[0].dims(), (Dims{1, 1}));
  expect_close(values_f32(out[0]), reduce_ref(x, {3, 4}, {true, true}, folds().at("ReduceSum")));
  // noop_with_empty_axes = 1: identity for Sum; each element alone for SumSquare / L1 (opset 18).
  out = run_ok(make_node("ReduceSum", 2, 1, {{"noop_with_empty_axes", attr_i(1)}}, 13), none);
  EXPECT_EQ(out[0].dims(), (Dims{3, 4}));
  EXPECT_EQ(values_f32(out[0]), x);
  std::vector<float> neg(x);
  for (auto& v : neg) v = -v;
  out = run_ok(make_node("ReduceSumSquare", 2, 1, {{"noop_with_empty_axes", attr_i(1)}}, 18),
               {f32({3, 4}, neg), i64({0}, {})});
  expect_close(values_f32(out[0]), reduce_ref(neg, {3, 4}, {false, false}, folds().at("ReduceSumSquare")));
  out = run_ok(make_node("ReduceL1", 1, 1, {{"noop_with_empty_axes", attr_i(1)}}, 18), {f32({3, 4}, neg)});
  EXPECT_EQ(values_f32(out[0]), x);
  // Opset 11: an empty axes attribute means all axes.
  out = run_ok(make_node("ReduceMax", 1, 1, {{"axes", attr_is({})}, {"keepdims", attr_i(0)}}, 11),
               {f32({3, 4}, x)});
  EXPECT_EQ(out[0].dims(), Dims{});
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{*std::max_element(x.begin(), x.end())}));
}

TEST(Reduce, IntegerTypes) {
  auto out = run_ok(make_node("ReduceSum", 2, 1, {{"keepdims", attr_i(0)}}, 13),
                    {i64({2, 3}, {1, 2, 3, 4, 5, 6}), i64({1}, {1})});
  EXPECT_EQ(out[0].dtype(), DataType::kInt64);
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{6, 15}));
  out = run_ok(make_node("ReduceMax", 1, 1, {{"axes", attr_is({0})}}, 13), {i32({2, 3}, {1, -7, 3, -4, 5, 2})});
  EXPECT_EQ(out[0].dtype(), DataType::kInt32);
  EXPECT_EQ(out[0].dims(), (Dims{1, 3}));
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{1, 5, 3}));
  out = run_ok(make_node("ReduceMin", 1, 1, {{"axes", attr_is({1})}, {"keepdims", attr_i(0)}}, 13),
               {i32({2, 3}, {1, -7, 3, -4, 5, 2})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-7, -4}));
  out = run_ok(make_node("ReduceProd", 1, 1, {{"keepdims", attr_i(0)}}, 13), {i64({4}, {2, -3, 4, 5})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-120}));
  out = run_ok(make_node("ReduceMin", 1, 1, {{"keepdims", attr_i(0)}}, 13), {u8({3}, {200, 7, 255})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{7}));
  // Overflow wraps (two's complement) instead of being undefined.
  const int64_t big = std::numeric_limits<int64_t>::max();
  out = run_ok(make_node("ReduceSum", 1, 1, {{"keepdims", attr_i(0)}}, 11), {i64({2}, {big, 1})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{std::numeric_limits<int64_t>::min()}));
  out = run_ok(make_node("ReduceSum", 1, 1, {{"keepdims", attr_i(0)}}, 11), {i32({2}, {2147483647, 1})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{-2147483648LL}));
  // Integer mean truncates.
  out = run_ok(make_node("ReduceMean", 1, 1, {{"keepdims", attr_i(0)}}, 13), {i64({3}, {1, 2, 4})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{2}));
}

TEST(Reduce, HalfTypes) {
  auto x = data(12);
  auto xh = values_f32(f16({3, 4}, x));
  auto out = run_ok(make_node("ReduceMean", 1, 1, {{"axes", attr_is({1})}}, 13), {f16({3, 4}, x)});
  EXPECT_EQ(out[0].dtype(), DataType::kFloat16);
  expect_close(values_f32(out[0]), reduce_ref(xh, {3, 4}, {false, true}, folds().at("ReduceMean")), 1e-3, 2.5e-3);
  auto xb = values_f32(bf16({3, 4}, x));
  out = run_ok(make_node("ReduceLogSumExp", 1, 1, {{"axes", attr_is({0})}}, 13), {bf16({3, 4}, x)});
  EXPECT_EQ(out[0].dtype(), DataType::kBFloat16);
  expect_close(values_f32(out[0]), reduce_ref(xb, {3, 4}, {true, false}, folds().at("ReduceLogSumExp")), 1e-2, 2e-2);
}

TEST(Reduce, LogSumExpIsStableAndEmptyReductionsGiveIdentities) {
  auto out = run_ok(make_node("ReduceLogSumExp", 1, 1, {{"keepdims", attr_i(0)}}, 13),
                    {f32({2}, {1000.f, 1000.f})});
  expect_close(values_f32(out[0]), {1000.0 + std::log(2.0)});
  out = run_ok(make_node("ReduceLogSumExp", 1, 1, {{"keepdims", attr_i(0)}}, 13),
               {f32({2}, {-INFINITY, -INFINITY})});
  expect_close(values_f32(out[0]), {-INFINITY});
  // Reducing an axis of length 0.
  const std::map<std::string, double> want = {
      {"ReduceSum", 0.0}, {"ReduceProd", 1.0}, {"ReduceMax", -INFINITY}, {"ReduceMin", INFINITY},
      {"ReduceL2", 0.0},  {"ReduceLogSumExp", -INFINITY}, {"ReduceLogSum", -INFINITY}, {"ReduceMean", NAN}};
  for (const auto& [op, v] : want) {
    SCOPED_TRACE(op);
    auto o = run_ok(make_node(op, 1, 1, {{"axes", attr_is({1})}}, 13), {f32({2, 0}, {})});
    ASSERT_EQ(o.size(), 1u);
    EXPECT_EQ(o[0].dims(), (Dims{2, 1}));
    expect_close(values_f32(o[0]), {v, v});
  }
  // Keeping an empty axis gives an empty output.
  out = run_ok(make_node("ReduceSum", 1, 1, {{"axes", attr_is({1})}}, 11), {f32({0, 3}, {})});
  EXPECT_EQ(out[0].dims(), (Dims{0, 1}));
}

TEST(Reduce, InferWithDynamicDimsAndUnknownAxes) {
  // Known axes, dynamic dims.
  auto r = infer_infos(make_node("ReduceMean", 1, 1, {{"axes", attr_is({1})}, {"keepdims", attr_i(0)}}, 13),
                       {known(DataType::kFloat32, {-1, 3, -1})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, -1}));
  r = infer_infos(make_node("ReduceMean", 1, 1, {{"axes", attr_is({-1})}}, 13), {known(DataType::kFloat16, {-1, 3, -1})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 3, 1}));
  EXPECT_EQ((*r)[0].dtype, DataType::kFloat16);
  // Axes input of known value.
  Tensor axes = i64({1}, {0});
  r = infer_infos(make_node("ReduceSum", 2, 1, {{"keepdims", attr_i(0)}}, 13),
                  {known(DataType::kFloat32, {-1, 5}), value_of(axes)});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims, (Dims{5}));
  // Axes input of unknown value: keepdims keeps the rank, otherwise the axes length tells it.
  r = infer_infos(make_node("ReduceSum", 2, 1, {}, 13),
                  {known(DataType::kFloat32, {-1, 1, 5}), known(DataType::kInt64, {2})});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims, (Dims{-1, 1, -1}));
  r = infer_infos(make_node("ReduceMax", 2, 1, {{"keepdims", attr_i(0)}}, 18),
                  {known(DataType::kFloat32, {-1, 1, 5}), known(DataType::kInt64, {2})});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].has_shape);
  EXPECT_EQ((*r)[0].dims, (Dims{-1}));
  r = infer_infos(make_node("ReduceMax", 2, 1, {{"keepdims", attr_i(0)}}, 18),
                  {known(DataType::kFloat32, {-1, 1, 5}), known(DataType::kInt64, {-1})});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
  // Unknown rank: reducing everything without keepdims is a scalar; otherwise unranked.
  r = infer_infos(make_node("ReduceL2", 1, 1, {{"keepdims", attr_i(0)}}, 13), {unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)[0].has_shape);
  EXPECT_EQ((*r)[0].dims, Dims{});
  r = infer_infos(make_node("ReduceL2", 1, 1, {{"axes", attr_is({0})}}, 13), {unranked(DataType::kFloat32)});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE((*r)[0].has_shape);
}

TEST(Reduce, Errors) {
  auto x = f32({2, 3}, data(6));
  auto expect_fail = [&](const ir::Node& node, const std::vector<Tensor>& in, const std::string& what) {
    Status st = run_status(node, in);
    EXPECT_FALSE(st.ok()) << what;
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
  };
  expect_fail(make_node("ReduceSum", 1, 1, {{"axes", attr_is({2})}}, 11), {x}, "out of range");
  expect_fail(make_node("ReduceMean", 1, 1, {{"axes", attr_is({-3})}}, 13), {x}, "out of range");
  expect_fail(make_node("ReduceMax", 1, 1, {{"axes", attr_is({1, -1})}}, 13), {x}, "repeated");
  expect_fail(make_node("ReduceSum", 2, 1, {}, 13), {x, f32({1}, {0})}, "axes must be int64");
  expect_fail(make_node("ReduceSum", 2, 1, {}, 13), {x, i64({1, 1}, {0})}, "1-D");
  expect_fail(make_node("ReduceSum", 2, 1, {}, 13), {x, i64({1}, {5})}, "out of range");
  EXPECT_EQ(run_status(make_node("ReduceL2", 1, 1, {}, 13), {i64({2}, {3, 4})}).code(), StatusCode::kUnsupported);
  EXPECT_EQ(run_status(make_node("ReduceLogSumExp", 1, 1, {}, 13), {i32({1}, {3})}).code(),
            StatusCode::kUnsupported);
  EXPECT_FALSE(run_status(make_node("ReduceSum", 1, 1, {{"keepdims", attr_f(1.f)}}, 11), {x}).ok());
  EXPECT_FALSE(run_status(make_node("ReduceSum", 1, 1, {{"axes", attr_i(0)}}, 11), {x}).ok());
  EXPECT_FALSE(infer_infos(make_node("ReduceMax", 2, 1, {{"keepdims", attr_i(0)}}, 18),
                           {known(DataType::kFloat32, {-1, 5}), known(DataType::kInt64, {3})})
                   .ok());
}

}  // namespace
}  // namespace streamrt

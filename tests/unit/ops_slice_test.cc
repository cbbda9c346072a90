#include <climits>

#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// Independent reference for one axis: walks the selected indices one step at a time from the
// wrapped start (the kernel uses the spec's closed-form clamping and a length formula).
// As the spec says (and unlike Python), a start before the front with a negative step is
// clamped to 0 rather than selecting nothing.
std::vector<int64_t> picked(int64_t dim, int64_t start, int64_t end, int64_t step) {
  std::vector<int64_t> out;
  if (dim == 0) return out;
  const int64_t s = start < 0 ? std::max<int64_t>(start + dim, 0) : std::min(start, step > 0 ? dim : dim - 1);
  if (step > 0) {
    const int64_t e = end < 0 ? std::max<int64_t>(end + dim, 0) : std::min(end, dim);
    for (int64_t i = s; i < e;) {
      out.push_back(i);
      if (step >= e - i) break;
      i += step;
    }
  } else {
    const int64_t e = end < 0 ? std::max<int64_t>(end + dim, -1) : end;  // -1: past the front
    for (int64_t i = s; i > e;) {
      out.push_back(i);
      if (step <= e - i) break;
      i += step;
    }
  }
  return out;
}

struct SliceCase {
  Dims in;
  std::vector<int64_t> starts, ends;
  std::optional<std::vector<int64_t>> axes, steps;
};

// Expected dims and map from `picked` on each sliced axis.
std::vector<int64_t> slice_map(const SliceCase& c, Dims* out_dims) {
  const int64_t rank = static_cast<int64_t>(c.in.size());
  std::vector<std::vector<int64_t>> sel(c.in.size());
  for (size_t d = 0; d < c.in.size(); ++d)
    for (int64_t i = 0; i < c.in[d]; ++i) sel[d].push_back(i);
  for (size_t k = 0; k < c.starts.size(); ++k) {
    int64_t a = c.axes ? (*c.axes)[k] : static_cast<int64_t>(k);
    if (a < 0) a += rank;
    sel[a] = picked(c.in[a], c.starts[k], c.ends[k], c.steps ? (*c.steps)[k] : 1);
  }
  Dims out;
  for (const auto& s : sel) out.push_back(static_cast<int64_t>(s.size()));
  std::vector<int64_t> map;
  for (int64_t i = 0, n = dims_numel(out); i < n; ++i) {
    auto idx = unravel(i, out);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] = sel[d][idx[d]];
    map.push_back(ravel(idx, c.in));
  }
  *out_dims = out;
  return map;
}

Tensor list(const std::vector<int64_t>& v) { return i64({static_cast<int64_t>(v.size())}, v); }

void check_slice(const SliceCase& c, DataType dt = DataType::kFloat32) {
  Tensor x = pattern(dt, c.in);
  Dims dims;
  auto map = slice_map(c, &dims);
  std::vector<Tensor> ins = {x, list(c.starts), list(c.ends)};
  ins.push_back(c.axes ? list(*c.axes) : Tensor());
  ins.push_back(c.steps ? list(*c.steps) : Tensor());
  auto out = run_ok(make_node("Slice", 5, 1, {}, 13), ins);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), dims);
  expect_picked(out[0], x, map);
}

TEST(SliceOp, NodeTestCases) {
  const Dims in = {20, 10, 5};
  check_slice({in, {0, 0}, {3, 10}, std::vector<int64_t>{0, 1}, std::vector<int64_t>{1, 1}});  // test_slice
  check_slice({in, {0}, {-1}, std::vector<int64_t>{1}, std::vector<int64_t>{1}});  // neg
  check_slice({in, {1000}, {1000}, std::vector<int64_t>{1}, std::vector<int64_t>{1}});  // start_out_of_bounds
  check_slice({in, {1}, {1000}, std::vector<int64_t>{1}, std::vector<int64_t>{1}});  // end_out_of_bounds
  check_slice({in, {0, 0, 3}, {20, 10, 4}, std::nullopt, std::nullopt});  // default_axes
  check_slice({in, {0, 0, 3}, {20, 10, 4}, std::vector<int64_t>{0, 1, 2}, std::nullopt});  // default_steps
  check_slice({in, {20, 10, 4}, {0, 0, 1}, std::vector<int64_t>{0, 1, 2}, std::vector<int64_t>{-1, -3, -2}});
  check_slice({in, {0, 0, 3}, {20, 10, 4}, std::vector<int64_t>{0, -2, -1}, std::nullopt});  // negative_axes
  Dims d;
  slice_map({in, {20, 10, 4}, {0, 0, 1}, std::vector<int64_t>{0, 1, 2}, std::vector<int64_t>{-1, -3, -2}}, &d);
  EXPECT_EQ(d, (Dims{19, 3, 2}));  // the node test's expected shape, as a check of the reference
}

TEST(SliceOp, EveryDtype) {
  for (DataType dt : kAllDTypes)
    check_slice({{4, 6}, {1, -1}, {-1, 0}, std::vector<int64_t>{0, 1}, std::vector<int64_t>{2, -2}}, dt);
}

TEST(SliceOp, ExtremeBoundsAndSteps) {
  const Dims in = {5, 4};
  check_slice({in, {1}, {INT64_MAX}, std::vector<int64_t>{0}, std::nullopt});
  check_slice({in, {-1}, {INT64_MIN}, std::vector<int64_t>{0}, std::vector<int64_t>{-1}});  // full reverse
  check_slice({in, {INT64_MIN}, {INT64_MAX}, std::vector<int64_t>{1}, std::nullopt});
  check_slice({in, {INT64_MAX}, {INT64_MIN}, std::vector<int64_t>{1}, std::vector<int64_t>{-1}});
  check_slice({in, {0}, {INT64_MAX}, std::vector<int64_t>{0}, std::vector<int64_t>{INT64_MAX}});  // one element
  check_slice({in, {-1}, {INT64_MIN}, std::vector<int64_t>{0}, std::vector<int64_t>{INT64_MIN}});
  check_slice({in, {3}, {1}, std::vector<int64_t>{0}, std::nullopt});   // empty: start > end
  check_slice({in, {1}, {3}, std::vector<int64_t>{0}, std::vector<int64_t>{-1}});  // empty backwards
  check_slice({in, {-7}, {-6}, std::vector<int64_t>{0}, std::nullopt});  // both clamp to 0
  check_slice({{0, 3}, {0}, {5}, std::vector<int64_t>{0}, std::vector<int64_t>{-1}});  // empty dim
  check_slice({in, {1, 3}, {5, 0}, std::vector<int64_t>{0, 1}, std::vector<int64_t>{3, -2}});
  // Spec clamping by hand: start -100 with step -1 clamps to 0, end INT64_MIN to -1: one element.
  EXPECT_EQ(picked(5, -100, INT64_MIN, -1), (std::vector<int64_t>{0}));
  EXPECT_EQ(picked(5, 100, -100, -2), (std::vector<int64_t>{4, 2, 0}));
  EXPECT_EQ(picked(5, -3, 100, 2), (std::vector<int64_t>{2, 4}));
  check_slice({in, {-100}, {INT64_MIN}, std::vector<int64_t>{0}, std::vector<int64_t>{-1}});
}

TEST(SliceOp, Int32BoundsAndOpset1Attributes) {
  Tensor x = pattern(DataType::kInt64, {4, 6});
  Dims dims;
  auto map = slice_map({{4, 6}, {1, 2}, {3, 6}, std::nullopt, std::nullopt}, &dims);
  auto out = run_ok(make_node("Slice", 3, 1, {}, 13), {x, i32({2}, {1, 2}), i32({2}, {3, 6})});
  EXPECT_EQ(out[0].dims(), dims);
  expect_picked(out[0], x, map);
  auto out1 = run_ok(make_node("Slice", 1, 1, {{"starts", ais({1, 2})}, {"ends", ais({3, 6})}}, 1), {x});
  EXPECT_EQ(out1[0].dims(), dims);
  expect_picked(out1[0], x, map);
  map = slice_map({{4, 6}, {-2}, {100}, std::vector<int64_t>{1}, std::nullopt}, &dims);
  out1 = run_ok(make_node("Slice", 1, 1, {{"starts", ais({-2})}, {"ends", ais({100})}, {"axes", ais({1})}}, 1), {x});
  EXPECT_EQ(out1[0].dims(), dims);
  expect_picked(out1[0], x, map);
}

TEST(SliceOp, Errors) {
  Tensor x = pattern(DataType::kFloat32, {4, 6});
  auto node = make_node("Slice", 5, 1, {}, 13);
  EXPECT_FALSE(run_status(node, {x, list({0}), list({1}), list({0}), list({0})}).ok());  // step 0
  EXPECT_FALSE(run_status(node, {x, list({0}), list({1}), list({2}), Tensor()}).ok());  // axis 2
  EXPECT_FALSE(run_status(node, {x, list({0}), list({1}), list({-3}), Tensor()}).ok());
  EXPECT_FALSE(run_status(node, {x, list({0, 0}), list({1, 1}), list({1, -1}), Tensor()}).ok());  // repeated
  EXPECT_FALSE(run_status(node, {x, list({0, 0}), list({1}), Tensor(), Tensor()}).ok());  // lengths
  EXPECT_FALSE(run_status(node, {x, list({0}), list({1}), list({0, 1}), Tensor()}).ok());
  EXPECT_FALSE(run_status(node, {x, list({0}), list({1}), Tensor(), list({1, 1})}).ok());
  EXPECT_FALSE(run_status(make_node("Slice", 1, 1, {{"starts", ais({0})}}, 1), {x}).ok());  // no ends
}

TEST(SliceOp, InferDynamic) {
  auto node = make_node("Slice", 5, 1, {}, 13);
  Tensor starts = list({1, 0}), ends = list({3, INT64_MAX}), axes = list({0, -1});
  auto r = infer(node, {info(DataType::kFloat32, {10, -1, 7}), known(starts), known(ends), known(axes), absent()});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{2, -1, 7}));
  r = infer(node, {info(DataType::kFloat32, {10, 8, -1}), known(starts), known(ends), known(axes), absent()});
  EXPECT_EQ(r.outs[0].dims, (Dims{2, 8, -1}));
  // Unknown bounds, known axes: only the sliced axes become dynamic.
  r = infer(node, {info(DataType::kFloat32, {10, 8, 7}), info(DataType::kInt64, {2}), info(DataType::kInt64, {2}),
                   known(axes), absent()});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 8, -1}));
  // Unknown bounds, default axes: the first len(starts) axes.
  r = infer(node, {info(DataType::kFloat32, {10, 8, 7}), info(DataType::kInt64, {2}), info(DataType::kInt64, {2}),
                   absent(), absent()});
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1, 7}));
  // Unknown axes: every dim may change.
  r = infer(node, {info(DataType::kFloat32, {10, 8, 7}), known(starts), known(ends), info(DataType::kInt64, {2}), absent()});
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1, -1}));
  r = infer(node, {unranked(DataType::kFloat32), known(starts), known(ends), known(axes), absent()});
  ASSERT_TRUE(r.status.ok());
  EXPECT_FALSE(r.outs[0].has_shape);
}

}  // namespace
}  // namespace streamrt

// Unique: distinct elements or slices, sorted or by first occurrence, with first indices,
// inverse indices and counts, checked against a naive reference.
#include <map>

#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node unique_node(std::optional<int64_t> axis, int64_t sorted) {
  std::map<std::string, ir::Attribute> attrs{{"sorted", ir::Attribute::make_int(sorted)}};
  if (axis) attrs["axis"] = ir::Attribute::make_int(*axis);
  return make_node("Unique", 1, 4, attrs, 11);
}

// Reference without an axis: values in first-occurrence order (or sorted), and the rest.
struct Ref {
  std::vector<float> y;
  std::vector<int64_t> first, inverse, counts;
};
Ref reference(const std::vector<float>& x, bool sorted) {
  std::vector<float> values;
  for (float v : x)
    if (std::find(values.begin(), values.end(), v) == values.end()) values.push_back(v);
  if (sorted) std::sort(values.begin(), values.end());
  Ref r{values, {}, {}, {}};
  for (float v : values) {
    r.first.push_back(std::find(x.begin(), x.end(), v) - x.begin());
    r.counts.push_back(std::count(x.begin(), x.end(), v));
  }
  for (float v : x) r.inverse.push_back(std::find(values.begin(), values.end(), v) - values.begin());
  return r;
}

TEST(Unique, FlattenedSortedAndUnsorted) {
  const std::vector<float> x = {2, 1, 1, 3, 4, 3, -0.f, 0};
  for (int64_t sorted : {1, 0}) {
    auto out = run_ok(unique_node(std::nullopt, sorted), {f32({2, 4}, x)});
    const Ref r = reference(x, sorted != 0);
    EXPECT_EQ(values_f32(out[0]), r.y) << sorted;
    EXPECT_EQ(values_i64(out[1]), r.first) << sorted;
    EXPECT_EQ(values_i64(out[2]), r.inverse) << sorted;
    EXPECT_EQ(values_i64(out[3]), r.counts) << sorted;
  }
}

TEST(Unique, SlicesAlongAnAxis) {
  // Rows [1 0], [1 0], [0 1]: sorted rows [0 1], [1 0].
  auto out = run_ok(unique_node(0, 1), {i64({3, 2}, {1, 0, 1, 0, 0, 1})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{0, 1, 1, 0}));
  EXPECT_EQ(values_i64(out[1]), (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(values_i64(out[2]), (std::vector<int64_t>{1, 1, 0}));
  EXPECT_EQ(values_i64(out[3]), (std::vector<int64_t>{1, 2}));
  // Columns of [[1 1 2], [3 3 4]] along axis -1: [1 3] twice, then [2 4].
  out = run_ok(unique_node(-1, 0), {i64({2, 3}, {1, 1, 2, 3, 3, 4})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(values_i64(out[2]), (std::vector<int64_t>{0, 0, 1}));
}

TEST(Unique, EmptyInputAndBadAxis) {
  auto out = run_ok(unique_node(std::nullopt, 1), {f32({0}, {})});
  EXPECT_EQ(out[0].dims(), (Dims{0}));
  EXPECT_FALSE(run_status(unique_node(2, 1), {f32({2, 2}, {1, 2, 3, 4})}).ok());
}

}  // namespace
}  // namespace streamrt

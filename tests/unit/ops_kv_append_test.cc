// KvAppend (ops/kv_append.h) on the CPU: in place it writes only the new rows of each (batch, head)
// block, otherwise it copies the past rows first; entries past the present are left alone; shape
// rule and plan-load checks. And Attention's kv_capacity: K and V read from capacity-strided
// buffers give exactly the dense result.
#include <gtest/gtest.h>

#include "compute_test_util.h"
#include "core/capacity_layout.h"
#include "ops/attention.h"
#include "ops/kv_append.h"

namespace streamrt::testing {
namespace {

using ir::Attribute;

constexpr int64_t kCap = 6;
constexpr float kUntouched = -777.f;

ir::Node append_node(int64_t axis = 2, int64_t capacity = kCap) {
  return make_node("KvAppend", 2, 1, {{"axis", Attribute::make_int(axis)}, {"capacity", Attribute::make_int(capacity)}});
}

// [B, H, positions, D] stored with kCap places: element (b, h, s, d) at ((b * H + h) * kCap + s) * D + d.
std::vector<float> stored(const Dims& dims, const std::vector<float>& dense, float fill) {
  std::vector<float> out(static_cast<size_t>(dims[0] * dims[1] * kCap * dims[3]), fill);
  copy_dense_to_stored(*capacity_rows(dims, 2, kCap), 4, dense.data(), out.data());
  return out;
}

float at(const std::vector<float>& buf, const Dims& d, int64_t b, int64_t h, int64_t s, int64_t x) {
  return buf[static_cast<size_t>(((b * d[1] + h) * kCap + s) * d[3] + x)];
}

struct Appended {
  std::vector<float> past, fresh, out;
  Dims pd, nd;
};

// Runs the CPU kernel on past [2, 3, 2, 4] + new [2, 3, 3, 4]; in place: output buffer = past's.
Status run_append(bool in_place, Appended* a) {
  a->pd = {2, 3, 2, 4};
  a->nd = {2, 3, 3, 4};
  a->past = stored(a->pd, random_values(numel(a->pd), 1), kUntouched);
  a->fresh = random_values(numel(a->nd), 2);
  a->out = in_place ? a->past : std::vector<float>(a->past.size(), kUntouched);
  float* out = in_place ? a->past.data() : a->out.data();
  const ir::Node node = append_node();
  const std::vector<ops::TensorRef> in = {{DataType::kFloat32, a->pd, a->past.data()},
                                          {DataType::kFloat32, a->nd, a->fresh.data()}};
  const std::vector<ops::TensorRef> outs = {{DataType::kFloat32, {2, 3, 5, 4}, out}};
  ops::KernelContext ctx(node, in, outs);
  Status st = ops::schema_of(node)->cpu(ctx);
  if (in_place) a->out = a->past;
  return st;
}

void expect_appended(const Appended& a, const std::vector<float>& past_rows) {
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t x = 0; x < 4; ++x) {
        for (int64_t s = 0; s < 2; ++s) EXPECT_EQ(at(a.out, a.pd, b, h, s, x), at(past_rows, a.pd, b, h, s, x));
        for (int64_t s = 0; s < 3; ++s)
          EXPECT_EQ(at(a.out, a.pd, b, h, 2 + s, x), a.fresh[static_cast<size_t>(((b * 3 + h) * 3 + s) * 4 + x)]);
        EXPECT_EQ(at(a.out, a.pd, b, h, 5, x), kUntouched) << "the place past the present was written";
      }
}

TEST(KvAppend, InPlaceWritesOnlyTheNewRows) {
  Appended a;
  ASSERT_TRUE(run_append(true, &a).ok());
  const std::vector<float> before = stored(a.pd, random_values(numel(a.pd), 1), kUntouched);
  expect_appended(a, before);
}

TEST(KvAppend, SeparateBuffersCopyThePastFirst) {
  Appended a;
  ASSERT_TRUE(run_append(false, &a).ok());
  expect_appended(a, a.past);
}

TEST(KvAppend, ShapeRuleAndLimits) {
  auto infer = [](const ir::Node& n, Dims p, Dims q) {
    ops::InferContext ctx(n, {{DataType::kFloat16, p, true}, {DataType::kFloat16, q, true}}, 1);
    Status st = ops::schema_of(n)->infer(ctx);
    return std::make_pair(st, ctx.outputs()[0]);
  };
  auto [ok, out] = infer(append_node(), {1, 2, -1, 8}, {1, 2, 1, 8});
  ASSERT_TRUE(ok.ok()) << ok.to_string();
  EXPECT_EQ(out.dtype, DataType::kFloat16);
  EXPECT_EQ(out.dims, (Dims{1, 2, -1, 8}));
  auto [full, d] = infer(append_node(), {1, 2, 4, 8}, {1, 2, 2, 8});
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(d.dims, (Dims{1, 2, 6, 8}));
  auto [over, d2] = infer(append_node(), {1, 2, 5, 8}, {1, 2, 2, 8});
  EXPECT_NE(over.message().find("7 positions, beyond the capacity 6"), std::string::npos) << over.to_string();
  auto [mismatch, d3] = infer(append_node(), {1, 2, 4, 8}, {1, 3, 1, 8});
  EXPECT_FALSE(mismatch.ok());
  auto [axis, d4] = infer(append_node(4), {1, 2, 4, 8}, {1, 2, 1, 8});
  EXPECT_NE(axis.message().find("axis 4 is outside the rank 4"), std::string::npos) << axis.to_string();
  for (auto [a, c] : std::vector<std::pair<int64_t, int64_t>>{{-1, 6}, {2, 0}, {2, int64_t{1} << 31}}) {
    const ir::Node n = append_node(a, c);
    ops::InferContext ctx(n, {{DataType::kFloat32, {1, 2, 4, 8}, true}, {DataType::kFloat32, {1, 2, 1, 8}, true}}, 1);
    EXPECT_FALSE(ops::schema_of(n)->verify(ctx).ok()) << "axis " << a << " capacity " << c;
  }
  // The kernel refuses a present that would not fit, whatever the shape rule was told.
  const ir::Node n = append_node();
  std::vector<float> buf(2 * kCap * 4), fresh(2 * 3 * 4);
  const std::vector<ops::TensorRef> in = {{DataType::kFloat32, {1, 2, 4, 4}, buf.data()},
                                          {DataType::kFloat32, {1, 2, 3, 4}, fresh.data()}};
  const std::vector<ops::TensorRef> outs = {{DataType::kFloat32, {1, 2, 7, 4}, buf.data()}};
  ops::KernelContext ctx(n, in, outs);
  EXPECT_NE(ops::schema_of(n)->cpu(ctx).message().find("exceeds the capacity 6"), std::string::npos);
}

TEST(KvAppend, DeclaresItsCacheLayout) {
  const auto layouts = ops::schema_of(append_node())->capacity_layouts(append_node());
  ASSERT_EQ(layouts.size(), 2u);
  EXPECT_FALSE(layouts[0].output);
  EXPECT_TRUE(layouts[1].output);
  for (const auto& l : layouts) {
    EXPECT_EQ(l.index, 0);
    EXPECT_EQ(l.axis, 2);
    EXPECT_EQ(l.capacity, kCap);
  }
}

// Attention over K / V [2, 2, 5, 4] stored with kCap places (garbage in the spare ones), grouped
// (4 query heads), causal, 2 queries: exactly the result over the dense tensors.
TEST(AttentionKvCapacity, StridedCacheGivesTheDenseResult) {
  const Dims qd = {2, 4, 2, 4}, kd = {2, 2, 5, 4};
  const auto q = random_values(numel(qd), 3), k = random_values(numel(kd), 4), v = random_values(numel(kd), 5);
  std::map<std::string, Attribute> attrs = {{"causal", Attribute::make_int(1)}, {"kv_group", Attribute::make_int(2)}};
  const auto dense = run_ok(make_node("Attention", 3, 1, attrs), {f32(qd, q), f32(kd, k), f32(kd, v)});
  ASSERT_EQ(dense.size(), 1u);
  attrs["kv_capacity"] = Attribute::make_int(kCap);
  const ir::Node node = make_node("Attention", 3, 1, attrs);
  std::vector<float> ks = stored(kd, k, 1e6f), vs = stored(kd, v, -1e6f);
  std::vector<float> y(static_cast<size_t>(numel(qd)), 0.f);
  std::vector<float> qc = q;
  const std::vector<ops::TensorRef> in = {{DataType::kFloat32, qd, qc.data()}, {DataType::kFloat32, kd, ks.data()},
                                          {DataType::kFloat32, kd, vs.data()}};
  const std::vector<ops::TensorRef> outs = {{DataType::kFloat32, qd, y.data()}};
  ops::KernelContext ctx(node, in, outs);
  ASSERT_TRUE(ops::schema_of(node)->cpu(ctx).ok());
  EXPECT_EQ(y, values_f32(dense[0]));

  // More positions than the capacity, and layouts the stride does not apply to, are refused.
  const std::vector<ops::TensorRef> long_in = {in[0], {DataType::kFloat32, {2, 2, 7, 4}, ks.data()},
                                               {DataType::kFloat32, {2, 2, 7, 4}, vs.data()}};
  ops::KernelContext long_ctx(node, long_in, outs);
  EXPECT_NE(ops::schema_of(node)->cpu(long_ctx).message().find("beyond kv_capacity 6"), std::string::npos);
  for (const char* bad : {"k_transposed", "bshd"}) {
    auto a = attrs;
    a[bad] = Attribute::make_int(bad == std::string("bshd") ? ops::kBshdV : 1);
    EXPECT_FALSE(ops::attention_attrs(make_node("Attention", 3, 1, a), 4).ok()) << bad;
  }
  const auto layouts = ops::schema_of(node)->capacity_layouts(node);
  ASSERT_EQ(layouts.size(), 2u);
  EXPECT_EQ(layouts[0].index, 1);
  EXPECT_EQ(layouts[1].index, 2);
  EXPECT_EQ(layouts[0].axis, -2);
  EXPECT_EQ(layouts[0].capacity, kCap);
  EXPECT_TRUE(ops::schema_of(make_node("Attention", 3, 1))->capacity_layouts(make_node("Attention", 3, 1)).empty());
}

}  // namespace
}  // namespace streamrt::testing

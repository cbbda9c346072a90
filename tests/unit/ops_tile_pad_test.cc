// Tile and Pad.
#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

// ---- Tile -------------------------------------------------------------------------------

std::vector<int64_t> tile_map(const Dims& in, const std::vector<int64_t>& reps, Dims* out_dims) {
  Dims out;
  for (size_t d = 0; d < in.size(); ++d) out.push_back(in[d] * reps[d]);
  std::vector<int64_t> map;
  for (int64_t i = 0, n = dims_numel(out); i < n; ++i) {
    auto idx = unravel(i, out);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] %= in[d];
    map.push_back(ravel(idx, in));
  }
  *out_dims = out;
  return map;
}

void check_tile(DataType dt, const Dims& in, const std::vector<int64_t>& reps) {
  Tensor x = pattern(dt, in);
  Dims dims;
  auto map = tile_map(in, reps, &dims);
  auto out = run_ok(make_node("Tile", 2), {x, i64({static_cast<int64_t>(reps.size())}, reps)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), dims);
  expect_picked(out[0], x, map);
}

TEST(TileOp, Precomputed) {
  auto out = run_ok(make_node("Tile", 2), {f32({2, 2}, {0, 1, 2, 3}), i64({2}, {2, 2})});
  EXPECT_EQ(out[0].dims(), (Dims{4, 4}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2, 3, 2, 3}));
}

TEST(TileOp, EveryDtypeAndShapes) {
  for (DataType dt : kAllDTypes) {
    check_tile(dt, {2, 3, 4, 5}, {2, 1, 3, 2});  // test_tile's shape
    check_tile(dt, {3}, {4});
  }
  check_tile(DataType::kFloat32, {2, 3}, {0, 2});  // zero repeats
  check_tile(DataType::kFloat32, {0, 3}, {2, 2});
  check_tile(DataType::kInt64, {1, 1, 2}, {3, 2, 1});
  auto out = run_ok(make_node("Tile", 2), {f32({}, {5}), pattern(DataType::kInt64, {0})});  // scalar
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{5}));
}

TEST(TileOp, ErrorsAndInfer) {
  Tensor x = pattern(DataType::kFloat32, {2, 3});
  EXPECT_FALSE(run_status(make_node("Tile", 2), {x, i64({1}, {2})}).ok());
  EXPECT_FALSE(run_status(make_node("Tile", 2), {x, i64({2}, {2, -1})}).ok());
  Tensor reps = i64({2}, {3, 0});
  auto r = infer(make_node("Tile", 2), {info(DataType::kFloat32, {-1, -1}), known(reps)});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 0}));
  r = infer(make_node("Tile", 2), {info(DataType::kFloat32, {4, 5}), info(DataType::kInt64, {2})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1}));
  r = infer(make_node("Tile", 2), {unranked(DataType::kFloat32), info(DataType::kInt64, {3})});
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1, -1}));
}

// ---- Pad --------------------------------------------------------------------------------

// Independent source index: bounce / walk the out-of-range index back into [0, n).
int64_t ref_source(const std::string& mode, int64_t s, int64_t n) {
  if (s >= 0 && s < n) return s;
  if (mode == "constant") return -1;
  if (mode == "edge") return s < 0 ? 0 : n - 1;
  if (mode == "wrap") {
    while (s < 0) s += n;
    while (s >= n) s -= n;
    return s;
  }
  if (n == 1) return 0;
  while (s < 0 || s >= n) s = s < 0 ? -s : 2 * (n - 1) - s;  // reflect without repeating the edge
  return s;
}

// Expected output as float values (constant = `value`) for an input filled by pattern().
std::vector<float> pad_expect(const Tensor& x, const std::vector<int64_t>& pads, const std::string& mode,
                              float value, Dims* out_dims) {
  const Dims& in = x.dims();
  const size_t r = in.size();
  Dims out;
  for (size_t d = 0; d < r; ++d) out.push_back(in[d] + pads[d] + pads[d + r]);
  auto xv = values_f32(x);
  std::vector<float> y;
  for (int64_t i = 0, n = dims_numel(out); i < n; ++i) {
    auto idx = unravel(i, out);
    bool constant = false;
    for (size_t d = 0; d < r; ++d) {
      idx[d] = ref_source(mode, idx[d] - pads[d], in[d]);
      constant = constant || idx[d] < 0;
    }
    y.push_back(constant ? value : xv[static_cast<size_t>(ravel(idx, in))]);
  }
  *out_dims = out;
  return y;
}

std::map<std::string, ir::Attribute> mode_attr(const std::string& mode) {
  return {{"mode", ir::Attribute::make_string(mode)}};
}

void check_pad(DataType dt, const Dims& in, const std::vector<int64_t>& pads, const std::string& mode) {
  Tensor x = pattern(dt, in);
  Dims dims;
  auto expect = pad_expect(x, pads, mode, 0.f, &dims);
  auto out = run_ok(make_node("Pad", 2, 1, mode_attr(mode), 13), {x, i64({static_cast<int64_t>(pads.size())}, pads)});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dims(), dims) << mode;
  EXPECT_EQ(values_f32(out[0]), expect) << mode << " " << dtype_name(dt);
}

TEST(PadOp, ConstantPadNodeTest) {
  // test_constant_pad: (1,3,4,5), pads [0,0,1,3,0,0,2,4], value 1.2.
  Tensor x = pattern(DataType::kFloat32, {1, 3, 4, 5});
  const std::vector<int64_t> pads = {0, 0, 1, 3, 0, 0, 2, 4};
  Dims dims;
  auto expect = pad_expect(x, pads, "constant", 1.2f, &dims);
  EXPECT_EQ(dims, (Dims{1, 3, 7, 12}));
  auto out = run_ok(make_node("Pad", 3, 1, mode_attr("constant"), 13), {x, i64({8}, pads), f32({}, {1.2f})});
  EXPECT_EQ(out[0].dims(), dims);
  EXPECT_EQ(values_f32(out[0]), expect);
  // Opset 2: pads and value are attributes.
  auto out2 = run_ok(make_node("Pad", 1, 1, {{"pads", ais(pads)}, {"value", ir::Attribute::make_float(1.2f)}}, 2), {x});
  EXPECT_EQ(values_f32(out2[0]), expect);
}

TEST(PadOp, AllModesEveryDtype) {
  for (DataType dt : kAllDTypes)
    for (const char* mode : {"constant", "reflect", "edge", "wrap"}) check_pad(dt, {3, 4}, {1, 2, 2, 3}, mode);
  // Reflect / edge node tests use (1,3,4,5) with pads [0,0,1,1,0,0,1,1].
  for (const char* mode : {"reflect", "edge"}) check_pad(DataType::kFloat32, {1, 3, 4, 5}, {0, 0, 1, 1, 0, 0, 1, 1}, mode);
  check_pad(DataType::kFloat32, {2, 3}, {0, 5, 0, 6}, "reflect");  // pads longer than the dim
  check_pad(DataType::kFloat32, {2, 1}, {0, 2, 0, 2}, "reflect");
}

TEST(PadOp, NegativePadsCrop) {
  for (const char* mode : {"constant", "edge"}) check_pad(DataType::kInt32, {4, 5}, {-1, 2, 0, -3}, mode);
}

TEST(PadOp, Opset18AxesAndInt8Constant) {
  Tensor x = pattern(DataType::kInt8, {2, 3});
  Tensor value = Tensor::from_vector(DataType::kInt8, {}, std::vector<int8_t>{-5});
  auto out = run_ok(make_node("Pad", 4, 1, mode_attr("constant"), 18), {x, i64({2}, {1, 2}), value, i64({1}, {-1})});
  Dims dims;
  auto expect = pad_expect(x, {0, 1, 0, 2}, "constant", -5.f, &dims);
  EXPECT_EQ(out[0].dims(), dims);
  EXPECT_EQ(values_f32(out[0]), expect);
}

TEST(PadOp, ErrorsAndInfer) {
  Tensor x = pattern(DataType::kFloat32, {2, 3});
  EXPECT_FALSE(run_status(make_node("Pad", 2), {x, i64({2}, {1, 1})}).ok());  // wrong length
  EXPECT_FALSE(run_status(make_node("Pad", 2), {x, i64({4}, {0, -4, 0, 0})}).ok());  // crops below 0
  EXPECT_EQ(run_status(make_node("Pad", 2, 1, mode_attr("mirror")), {x, i64({4}, {0, 0, 0, 0})}).code(),
            StatusCode::kUnsupported);
  EXPECT_FALSE(run_status(make_node("Pad", 3), {x, i64({4}, {0, 1, 0, 0}), i64({}, {1})}).ok());  // value type
  EXPECT_FALSE(run_status(make_node("Pad", 2, 1, mode_attr("edge")), {pattern(DataType::kFloat32, {0, 2}), i64({4}, {1, 0, 1, 0})}).ok());
  Tensor pads = i64({4}, {1, 0, 1, 2});
  auto r = infer(make_node("Pad", 2), {info(DataType::kFloat32, {-1, 3}), known(pads)});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 5}));
  r = infer(make_node("Pad", 2), {info(DataType::kFloat32, {2, 3}), info(DataType::kInt64, {4})});
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1}));
  Tensor axes = i64({1}, {0});
  r = infer(make_node("Pad", 4, 1, {}, 18), {info(DataType::kFloat32, {2, 3}), info(DataType::kInt64, {2}), absent(), known(axes)});
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 3}));
}

}  // namespace
}  // namespace streamrt

namespace streamrt {
namespace {
using namespace testing;

TEST(PadOp, Opset2ValueSaturatesForIntegers) {
  auto node = make_node("Pad", 1, 1, {{"pads", ais({1, 0})}, {"value", ir::Attribute::make_float(1000.f)}}, 2);
  auto out = run_ok(node, {Tensor::from_vector(DataType::kInt8, {1}, std::vector<int8_t>{3})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{127, 3}));
  node.attrs["value"] = ir::Attribute::make_float(-1e30f);
  out = run_ok(node, {i64({1}, {3})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{INT64_MIN, 3}));
}

}  // namespace
}  // namespace streamrt

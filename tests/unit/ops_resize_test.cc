// Resize and Upsample on the CPU. Expected values are from ONNX's reference implementation
// (onnx.reference, op_resize.py) or worked out by hand where noted.
#include <cmath>

#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Attribute as(const std::string& s) { return ir::Attribute::make_string(s); }
ir::Attribute af(float v) { return ir::Attribute::make_float(v); }

Tensor x16() {
  std::vector<float> v(16);
  for (int i = 0; i < 16; ++i) v[i] = static_cast<float>(i + 1);
  return f32({1, 1, 4, 4}, v);
}
Tensor empty_f32() { return f32({0}, {}); }

void expect_near(const Tensor& t, const Dims& dims, const std::vector<float>& want, float tol = 1e-5f) {
  EXPECT_EQ(t.dims(), dims);
  const std::vector<float> got = values_f32(t);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol * std::max(1.f, std::fabs(want[i]))) << i;
}

// Resize at `opset` with inputs X, roi, scales, sizes (empty tensors where not given).
std::vector<Tensor> resize(int opset, std::map<std::string, ir::Attribute> attrs, const Tensor& x, const Tensor& roi,
                           const Tensor& scales, const Tensor& sizes) {
  return run_ok(make_node("Resize", 4, 1, std::move(attrs), opset), {x, roi, scales, sizes});
}

TEST(ResizeOp, UpsampleNearestAndLinear) {
  // test_upsample_nearest (opset 9: scales input).
  auto out = run_ok(make_node("Upsample", 2, 1, {{"mode", as("nearest")}}, 9),
                    {f32({1, 1, 2, 2}, {1, 2, 3, 4}), f32({4}, {1, 1, 2, 3})});
  expect_near(out[0], {1, 1, 4, 6}, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4});
  // Opset 7 (scales attribute), linear: asymmetric coordinates 0, .5, 1, 1.5, the last clamped (by hand).
  out = run_ok(make_node("Upsample", 1, 1, {{"mode", as("linear")}, {"scales", ir::Attribute::make_floats({1, 2})}}, 7),
               {f32({1, 2}, {1, 2})});
  expect_near(out[0], {1, 4}, {1, 1.5f, 2, 2});
  // Resize-10: the same mapping, downscaling picks floor(x / scale) (by hand: 0, 2).
  out = run_ok(make_node("Resize", 2, 1, {}, 10), {f32({1, 5}, {10, 11, 12, 13, 14}), f32({2}, {1, 0.5f})});
  expect_near(out[0], {1, 2}, {10, 12});
}

TEST(ResizeOp, LinearHalfPixel) {
  // test_resize_upsample_scales_linear.
  auto out = resize(13, {{"mode", as("linear")}}, f32({1, 1, 2, 2}, {1, 2, 3, 4}), empty_f32(), f32({4}, {1, 1, 2, 2}),
                    i64({0}, {}));
  expect_near(out[0], {1, 1, 4, 4}, {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f, 2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4});
}

TEST(ResizeOp, Cubic) {
  auto out = resize(13, {{"mode", as("cubic")}}, x16(), empty_f32(), f32({4}, {1, 1, 1.5f, 1.5f}), i64({0}, {}));
  expect_near(out[0], {1, 1, 6, 6},
              {0.56597275f, 1.0590283f, 1.8657432f, 2.439816f,  3.246529f,  3.7395866f, 2.5381956f, 3.03125f,  3.8379655f,
               4.412038f,   5.21875f,   5.7118077f, 5.765054f,  6.2581077f, 7.064825f,  7.638898f,  8.445609f, 8.938668f,
               8.061346f,   8.554399f,  9.361116f,  9.935189f,  10.7418995f, 11.23496f, 11.288199f, 11.78125f, 12.587969f,
               13.162042f,  13.96875f,  14.461812f, 13.260427f, 13.753478f, 14.560198f, 15.134271f, 15.940979f, 16.434042f});
  // exclude_outside, A = -0.5, pytorch_half_pixel.
  out = resize(13, {{"mode", as("cubic")}, {"exclude_outside", ai(1)}, {"cubic_coeff_a", af(-0.5f)},
                    {"coordinate_transformation_mode", as("pytorch_half_pixel")}},
               x16(), empty_f32(), f32({4}, {1, 1, 0.75f, 0.75f}), i64({0}, {}));
  expect_near(out[0], {1, 1, 3, 3},
              {1.5142215f, 2.9113772f, 4.308533f, 7.102844f, 8.5f, 9.897156f, 12.691467f, 14.088623f, 15.485779f});
}

TEST(ResizeOp, Antialias) {
  auto out = resize(18, {{"mode", as("linear")}, {"antialias", ai(1)}}, x16(), empty_f32(), f32({4}, {1, 1, 0.5f, 0.5f}),
                    i64({0}, {}));
  expect_near(out[0], {1, 1, 2, 2}, {4.125f, 5.875f, 11.125f, 12.875f});
  std::vector<float> v(36);
  for (int i = 0; i < 36; ++i) v[i] = std::pow(static_cast<float>(i) * 0.37f, 1.5f);
  out = resize(18, {{"mode", as("cubic")}, {"antialias", ai(1)}}, f32({1, 1, 6, 6}, v), empty_f32(),
               f32({4}, {1, 1, 0.5f, 0.6f}), i64({0}, {}));
  expect_near(out[0], {1, 1, 3, 3},
              {1.4558357f, 2.4974833f, 3.8883977f, 13.364061f, 15.6671715f, 18.202053f, 32.35299f, 35.377956f, 38.651012f},
              1e-4f);
}

TEST(ResizeOp, AxesAndAspectRatio) {
  auto out = run_ok(make_node("Resize", 4, 1,
                              {{"mode", as("linear")}, {"axes", ais({2, 3})}, {"keep_aspect_ratio_policy", as("not_larger")}},
                              18),
                    {x16(), Tensor(), Tensor(), i64({2}, {3, 5})});
  expect_near(out[0], {1, 1, 3, 3},
              {1.8333334f, 3.1666667f, 4.5f, 7.1666665f, 8.5f, 9.833333f, 12.5f, 13.833333f, 15.166667f});
  out = run_ok(make_node("Resize", 4, 1,
                         {{"mode", as("nearest")}, {"axes", ais({3, -2})}, {"keep_aspect_ratio_policy", as("not_smaller")}},
                         18),
               {x16(), Tensor(), Tensor(), i64({2}, {3, 5})});
  expect_near(out[0], {1, 1, 5, 5}, {1, 2, 2, 3, 4, 5, 6, 6, 7, 8, 5, 6, 6, 7, 8, 9, 10, 10, 11, 12, 13, 14, 14, 15, 16});
}

TEST(ResizeOp, CoordinateModes) {
  // tf_crop_and_resize with points outside the input.
  auto out = resize(13,
                    {{"mode", as("linear")}, {"coordinate_transformation_mode", as("tf_crop_and_resize")},
                     {"extrapolation_value", af(10)}},
                    x16(), f32({8}, {0, 0, 0.4f, 0.6f, 1, 1, 1.2f, 1.7f}), f32({0}, {}), i64({4}, {1, 1, 3, 3}));
  expect_near(out[0], {1, 1, 3, 3}, {7.6f, 10, 10, 12.4f, 10, 10, 10, 10, 10});
  out = resize(19, {{"mode", as("linear")}, {"coordinate_transformation_mode", as("half_pixel_symmetric")}}, x16(),
               empty_f32(), f32({4}, {1, 1, 0.7f, 1.3f}), i64({0}, {}));
  expect_near(out[0], {1, 1, 2, 5},
              {4.142857f, 4.873626f, 5.642857f, 6.412088f, 7.142857f, 9.857142f, 10.587913f, 11.357142f, 12.126373f, 12.857142f});
  // 3 spatial axes, align_corners, sizes.
  std::vector<float> v;
  for (int i = 0; i < 8; ++i) v.push_back(static_cast<float>(i * i));
  out = resize(13, {{"mode", as("linear")}, {"coordinate_transformation_mode", as("align_corners")}},
               f32({1, 1, 2, 2, 2}, v), empty_f32(), empty_f32(), i64({5}, {1, 1, 3, 2, 3}));
  expect_near(out[0], {1, 1, 3, 2, 3}, {0, 0.5f, 1, 4, 6.5f, 9, 8, 10.5f, 13, 20, 24.5f, 29, 16, 20.5f, 25, 36, 42.5f, 49});
}

TEST(ResizeOp, NearestModesAndIntegers) {
  // test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric's first row, 1-D, as int64
  // (copied exactly): asymmetric x / 2 = 0, .5, 1, 1.5, ... rounds up on ties.
  const int64_t big = int64_t{1} << 60;
  auto out = run_ok(make_node("Resize", 4, 1,
                              {{"coordinate_transformation_mode", as("asymmetric")}, {"nearest_mode", as("round_prefer_ceil")}},
                              13),
                    {i64({4}, {big + 1, big + 2, big + 3, big + 4}), Tensor(), Tensor(), i64({1}, {8})});
  EXPECT_EQ(values_i64(out[0]), (std::vector<int64_t>{big + 1, big + 2, big + 2, big + 3, big + 3, big + 4, big + 4, big + 4}));
  // floor / ceil with half_pixel on uint8 (by hand: x = (o + .5) / 2 - .5 = -.25, .25, .75, 1.25).
  Tensor u = Tensor::from_vector<uint8_t>(DataType::kUInt8, {2}, {7, 9});
  out = run_ok(make_node("Resize", 4, 1, {{"nearest_mode", as("ceil")}}, 13), {u, Tensor(), Tensor(), i64({1}, {4})});
  EXPECT_EQ(out[0].to_int64_vector().value(), (std::vector<int64_t>{7, 9, 9, 9}));
  out = run_ok(make_node("Resize", 4, 1, {{"nearest_mode", as("floor")}}, 13), {u, Tensor(), Tensor(), i64({1}, {4})});
  EXPECT_EQ(out[0].to_int64_vector().value(), (std::vector<int64_t>{7, 7, 7, 9}));
  // Linear on int32 rounds half to even (by hand: asymmetric 0, .25, .5, .75, 1, then clamped).
  out = run_ok(make_node("Resize", 4, 1, {{"mode", as("linear")}, {"coordinate_transformation_mode", as("asymmetric")}}, 13),
               {i32({2}, {0, 1}), Tensor(), f32({1}, {4}), Tensor()});
  EXPECT_EQ(out[0].to_int64_vector().value(), (std::vector<int64_t>{0, 0, 0, 1, 1, 1, 1, 1}));
}

TEST(ResizeOp, Errors) {
  const Tensor x = x16();
  auto st = run_status(make_node("Resize", 4, 1, {}, 13), {x, Tensor(), f32({4}, {1, 1, 2, 2}), i64({4}, {1, 1, 8, 8})});
  EXPECT_EQ(st.code(), StatusCode::kInvalidModel);  // both scales and sizes
  EXPECT_FALSE(run_status(make_node("Resize", 4, 1, {}, 13), {x, Tensor(), Tensor(), Tensor()}).ok());
  EXPECT_FALSE(run_status(make_node("Resize", 4, 1, {}, 13), {x, Tensor(), f32({4}, {1, 1, -2, 2}), Tensor()}).ok());
  EXPECT_FALSE(run_status(make_node("Resize", 4, 1, {}, 13), {x, Tensor(), f32({3}, {1, 2, 2}), Tensor()}).ok());
  EXPECT_FALSE(run_status(make_node("Resize", 4, 1, {}, 13), {x, Tensor(), f32({4}, {1, 1, 1e30f, 1}), Tensor()}).ok());
  EXPECT_FALSE(
      run_status(make_node("Resize", 4, 1, {}, 13), {x, Tensor(), Tensor(), i64({4}, {1, 1, int64_t{1} << 40, 1})}).ok());
  EXPECT_FALSE(run_status(make_node("Resize", 4, 1, {{"mode", as("area")}}, 13), {x, Tensor(), f32({4}, {1, 1, 2, 2}), Tensor()})
                   .ok());
  // tf_crop_and_resize without roi.
  EXPECT_FALSE(run_status(make_node("Resize", 4, 1, {{"coordinate_transformation_mode", as("tf_crop_and_resize")}}, 13),
                          {x, Tensor(), f32({4}, {1, 1, 2, 2}), Tensor()})
                   .ok());
  // Plan check: a bad attribute is refused before the shape rule.
  const ops::OpSchema* schema = ops::OpRegistry::global().find("Resize");
  ASSERT_NE(schema, nullptr);
  ir::Node n = make_node("Resize", 4, 1, {{"exclude_outside", ai(7)}}, 13);
  ops::InferContext ctx(n, {info(DataType::kFloat32, {1, 1, 4, 4}), absent(), absent(), absent()}, 1);
  EXPECT_FALSE(schema->verify(ctx).ok());
}

TEST(ResizeOp, Infer) {
  Tensor sizes = i64({4}, {1, 3, 8, 9});
  Tensor scales = f32({4}, {1, 1, 2, 0.5f});
  // Known sizes fix every dim, even of a dynamic X.
  auto r = infer(make_node("Resize", 4, 1, {}, 13), {info(DataType::kFloat32, {-1, -1, 4, 4}), absent(), absent(), known(sizes)});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{1, 3, 8, 9}));
  // Scales: dynamic dims stay dynamic.
  r = infer(make_node("Resize", 4, 1, {}, 13), {info(DataType::kFloat32, {-1, 3, 4, 5}), absent(), known(scales), absent()});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 3, 8, 2}));
  // keep_aspect_ratio_policy: a dynamic resized axis hides the common scale.
  Tensor two = i64({2}, {3, 5});
  r = infer(make_node("Resize", 4, 1, {{"axes", ais({2, 3})}, {"keep_aspect_ratio_policy", as("not_larger")}}, 18),
            {info(DataType::kFloat32, {2, 3, -1, 4}), absent(), absent(), known(two)});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{2, 3, -1, -1}));
  // Unknown sizes: the rank only.
  r = infer(make_node("Resize", 4, 1, {}, 13),
            {info(DataType::kFloat32, {1, 3, 4, 4}), absent(), absent(), info(DataType::kInt64, {4})});
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, -1, -1, -1}));
  // An unknown roi does not hide the shape.
  r = infer(make_node("Resize", 4, 1, {{"coordinate_transformation_mode", as("tf_crop_and_resize")}}, 13),
            {info(DataType::kFloat32, {1, 3, 4, 4}), info(DataType::kFloat32, {8}), absent(), known(sizes)});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{1, 3, 8, 9}));
}

}  // namespace
}  // namespace streamrt

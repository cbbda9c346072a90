// GridSample: coordinates, interpolation and padding checked on small images whose expected values
// are worked out by hand (the node tests cover the ONNX reference's data).
#include <cmath>

#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

ir::Node gs(const std::string& mode, const std::string& pad, int64_t align, int opset = 16) {
  return make_node("GridSample", 2, 1,
                   {{"mode", ir::Attribute::make_string(mode)}, {"padding_mode", ir::Attribute::make_string(pad)},
                    {"align_corners", ir::Attribute::make_int(align)}},
                   opset);
}

// X [1, 1, 2, 3] = [[1 2 3] [4 5 6]].
Tensor image() { return f32({1, 1, 2, 3}, {1, 2, 3, 4, 5, 6}); }

TEST(GridSample, AlignedCornersHitPixelsAndTheLastAxisIsWidth) {
  // (x, y) = (1, -1) is the top-right pixel, (-1, 1) the bottom-left, (0, 0) the centre.
  auto out = run_ok(gs("bilinear", "zeros", 1), {image(), f32({1, 1, 3, 2}, {1, -1, -1, 1, 0, 0})});
  EXPECT_EQ(out[0].dims(), (Dims{1, 1, 1, 3}));
  EXPECT_EQ(values_f32(out[0]), (std::vector<float>{3, 4, 3.5f}));  // centre: mean of 2, 3, 5, 6 -> 3.5
}

TEST(GridSample, NearestAndPaddingModes) {
  // Without align_corners pixel centres are at (2i + 1) / n - 1: x = -1 is half a pixel left of column 0.
  const Tensor far_left = f32({1, 1, 1, 2}, {-3.f, -1.f});  // x = -3 (outside), y = -1 (top edge)
  EXPECT_EQ(values_f32(run_ok(gs("bilinear", "zeros", 0), {image(), far_left})[0]), (std::vector<float>{0}));
  EXPECT_EQ(values_f32(run_ok(gs("bilinear", "border", 0), {image(), far_left})[0]), (std::vector<float>{1}));
  EXPECT_EQ(values_f32(run_ok(gs("nearest", "border", 1), {image(), f32({1, 1, 1, 2}, {0.4f, 0.9f})})[0]),
            (std::vector<float>{5}));  // x = 1.4 -> 1, y = 0.95 -> 1
  // Reflection with align_corners: x = 1.5 reflects to 0.5 -> halfway between columns 1 and 2 of row 0.
  EXPECT_EQ(values_f32(run_ok(gs("bilinear", "reflection", 1), {image(), f32({1, 1, 1, 2}, {1.5f, -1.f})})[0]),
            (std::vector<float>{2.5f}));
}

TEST(GridSample, NanInfiniteAndOnePixelAxesAreSafe) {
  const Tensor grid = f32({1, 1, 3, 2}, {std::nanf(""), 0.f, INFINITY, 0.f, -1e30f, 0.f});
  EXPECT_EQ(values_f32(run_ok(gs("bilinear", "zeros", 0), {image(), grid})[0]), (std::vector<float>{0, 0, 0}));
  const auto border = values_f32(run_ok(gs("bicubic", "reflection", 1), {image(), grid})[0]);
  EXPECT_EQ(border[0], 0.f);
  const Tensor one = f32({1, 1, 1, 1}, {9});
  EXPECT_EQ(values_f32(run_ok(gs("bilinear", "reflection", 1), {one, f32({1, 1, 1, 2}, {0.7f, -0.3f})})[0]),
            (std::vector<float>{9}));
}

TEST(GridSample, BicubicReproducesAConstantAndVolumesNeedOpset20) {
  const Tensor flat = f32({1, 1, 3, 3}, std::vector<float>(9, 7.f));
  auto out = run_ok(gs("bicubic", "border", 0), {flat, f32({1, 1, 2, 2}, {0.3f, -0.2f, 0.9f, 0.9f})});
  for (float v : values_f32(out[0])) EXPECT_NEAR(v, 7.f, 1e-5f);
  // A 3-D volume [1, 1, 2, 2, 2] sampled at its aligned corner (x, y, z) = (1, -1, 1): X[1][0][1].
  const Tensor vol = f32({1, 1, 2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  const Tensor g3 = f32({1, 1, 1, 1, 3}, {1, -1, 1});
  EXPECT_EQ(values_f32(run_ok(gs("linear", "zeros", 1, 20), {vol, g3})[0]), (std::vector<float>{5}));
  EXPECT_FALSE(run_status(gs("bilinear", "zeros", 1, 16), {vol, g3}).ok());
  EXPECT_FALSE(run_status(gs("linear", "zeros", 1, 16), {image(), f32({1, 1, 1, 2}, {0, 0})}).ok());  // 16: bilinear
  EXPECT_FALSE(run_status(gs("bilinear", "mirror", 1, 16), {image(), f32({1, 1, 1, 2}, {0, 0})}).ok());
}

}  // namespace
}  // namespace streamrt

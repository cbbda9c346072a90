// ConvTranspose on the CPU against a direct scatter written from the ONNX definition (every input
// element times every tap added at output position i * stride - pad_begin + t * dilation), with
// the effective pads and output sizes worked out here from the spec's formulas.
#include <random>

#include "shape_ops_test_util.h"

namespace streamrt {
namespace {
using namespace testing;

struct CtCase {
  int64_t n = 1, c = 1, m = 1, group = 1;  // m: output channels (W.dims[1] * group)
  Dims in, kernel, strides, dilations, pads, output_padding, output_shape;
  std::string auto_pad = "NOTSET";
  bool bias = false;
};

int64_t floor_half(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// Effective begin pads and output sizes, from the spec.
void geometry(const CtCase& cc, std::vector<int64_t>& pb, Dims& out) {
  const size_t r = cc.in.size();
  pb.assign(r, 0);
  out.assign(r, 0);
  for (size_t d = 0; d < r; ++d) {
    const int64_t natural = cc.strides[d] * (cc.in[d] - 1) + cc.output_padding[d] + (cc.kernel[d] - 1) * cc.dilations[d] + 1;
    const bool same = cc.auto_pad == "SAME_UPPER" || cc.auto_pad == "SAME_LOWER";
    if (!cc.output_shape.empty() || same) {
      out[d] = cc.output_shape.empty() ? cc.in[d] * cc.strides[d] : cc.output_shape[d];
      const int64_t total = natural - out[d];
      pb[d] = cc.auto_pad == "SAME_UPPER" ? floor_half(total) : total - floor_half(total);
    } else if (cc.auto_pad == "VALID") {
      out[d] = natural;
    } else {
      pb[d] = cc.pads[d];
      out[d] = natural - cc.pads[d] - cc.pads[r + d];
    }
  }
}

std::vector<float> naive(const CtCase& cc, const std::vector<float>& x, const std::vector<float>& w,
                         const std::vector<float>& b, Dims& ydims) {
  std::vector<int64_t> pb;
  Dims out;
  geometry(cc, pb, out);
  const size_t r = cc.in.size();
  const int64_t cg = cc.c / cc.group, mg = cc.m / cc.group;
  const int64_t in_size = dims_numel(cc.in), out_size = dims_numel(out), taps = dims_numel(cc.kernel);
  ydims = {cc.n, cc.m};
  ydims.insert(ydims.end(), out.begin(), out.end());
  std::vector<double> y(static_cast<size_t>(cc.n * cc.m * out_size), 0.0);
  for (int64_t n = 0; n < cc.n; ++n)
    for (int64_t c = 0; c < cc.c; ++c)
      for (int64_t i = 0; i < in_size; ++i)
        for (int64_t j = 0; j < mg; ++j)
          for (int64_t t = 0; t < taps; ++t) {
            auto ii = unravel(i, cc.in);
            auto tt = unravel(t, cc.kernel);
            std::vector<int64_t> o(r);
            bool inside = true;
            for (size_t d = 0; d < r; ++d) {
              o[d] = ii[d] * cc.strides[d] - pb[d] + tt[d] * cc.dilations[d];
              inside = inside && o[d] >= 0 && o[d] < out[d];
            }
            if (!inside) continue;
            const int64_t m = (c / cg) * mg + j;
            y[static_cast<size_t>((n * cc.m + m) * out_size + ravel(o, out))] +=
                double(x[static_cast<size_t>((n * cc.c + c) * in_size + i)]) * w[static_cast<size_t>((c * mg + j) * taps + t)];
          }
  std::vector<float> yf(y.size());
  for (size_t k = 0; k < y.size(); ++k) yf[k] = static_cast<float>(y[k] + (cc.bias ? b[(k / out_size) % cc.m] : 0.0));
  return yf;
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& f : v) f = dist(rng);
  return v;
}

void check(const CtCase& cc) {
  Dims xd = {cc.n, cc.c}, wd = {cc.c, cc.m / cc.group};
  xd.insert(xd.end(), cc.in.begin(), cc.in.end());
  wd.insert(wd.end(), cc.kernel.begin(), cc.kernel.end());
  const auto x = random_values(static_cast<size_t>(dims_numel(xd)), 1);
  const auto w = random_values(static_cast<size_t>(dims_numel(wd)), 2);
  const auto b = random_values(static_cast<size_t>(cc.m), 3);
  std::map<std::string, ir::Attribute> attrs = {{"group", ai(cc.group)}, {"strides", ais(cc.strides)},
                                                {"dilations", ais(cc.dilations)},
                                                {"output_padding", ais(cc.output_padding)}};
  if (!cc.pads.empty()) attrs["pads"] = ais(cc.pads);
  if (!cc.output_shape.empty()) attrs["output_shape"] = ais(cc.output_shape);
  attrs["auto_pad"] = ir::Attribute::make_string(cc.auto_pad);
  std::vector<Tensor> ins = {f32(xd, x), f32(wd, w)};
  if (cc.bias) ins.push_back(f32({cc.m}, b));
  auto out = run_ok(make_node("ConvTranspose", ins.size(), 1, attrs, 11), ins);
  ASSERT_EQ(out.size(), 1u);
  Dims yd;
  const auto want = naive(cc, x, w, b, yd);
  EXPECT_EQ(out[0].dims(), yd);
  const auto got = values_f32(out[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4f) << i;
}

TEST(ConvTransposeOp, Precomputed) {
  // test_convtranspose: X 0..8 (3x3), W all ones, 2 output channels.
  std::vector<float> x(9);
  for (int i = 0; i < 9; ++i) x[i] = static_cast<float>(i);
  auto out = run_ok(make_node("ConvTranspose", 2, 1, {}, 1), {f32({1, 1, 3, 3}, x), f32({1, 2, 3, 3}, std::vector<float>(18, 1.f))});
  const std::vector<float> plane = {0, 1, 3, 3, 2, 3, 8, 15, 12, 7, 9, 21, 36, 27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
  std::vector<float> want = plane;
  want.insert(want.end(), plane.begin(), plane.end());
  EXPECT_EQ(out[0].dims(), (Dims{1, 2, 5, 5}));
  EXPECT_EQ(values_f32(out[0]), want);
}

TEST(ConvTransposeOp, AgainstScatter) {
  check({.n = 2, .c = 3, .m = 2, .in = {5}, .kernel = {3}, .strides = {2}, .dilations = {1}, .pads = {1, 0},
         .output_padding = {1}, .bias = true});
  check({.n = 2, .c = 4, .m = 6, .group = 2, .in = {3, 3}, .kernel = {2, 3}, .strides = {2, 1}, .dilations = {1, 2},
         .pads = {1, 0, 0, 2}, .output_padding = {1, 0}, .bias = true});
  check({.n = 1, .c = 2, .m = 2, .group = 2, .in = {2, 3, 2}, .kernel = {2, 2, 3}, .strides = {1, 2, 3},
         .dilations = {2, 1, 1}, .pads = {0, 1, 0, 1, 0, 2}, .output_padding = {0, 1, 2}});
  // auto_pad SAME_UPPER / SAME_LOWER (odd total padding), VALID.
  for (const char* ap : {"SAME_UPPER", "SAME_LOWER", "VALID"})
    check({.c = 2, .m = 3, .in = {3, 4}, .kernel = {3, 2}, .strides = {2, 3}, .dilations = {1, 1}, .output_padding = {0, 0},
           .auto_pad = ap, .bias = true});
  // output_shape larger than the natural size (negative end pad: bias only there) and smaller.
  check({.c = 1, .m = 2, .in = {3, 3}, .kernel = {3, 3}, .strides = {3, 2}, .dilations = {1, 1}, .output_padding = {0, 0},
         .output_shape = {10, 8}, .bias = true});
  check({.c = 2, .m = 1, .in = {4, 3}, .kernel = {3, 3}, .strides = {2, 2}, .dilations = {1, 1}, .output_padding = {1, 1},
         .output_shape = {6, 5}});
}

TEST(ConvTransposeOp, InferAndErrors) {
  auto r = infer(make_node("ConvTranspose", 3, 1, {{"strides", ais({2, 2})}, {"output_padding", ais({1, 0})}}, 11),
                 {info(DataType::kFloat32, {-1, 4, 5, -1}), info(DataType::kFloat32, {4, 3, 3, 3}), info(DataType::kFloat32, {3})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{-1, 3, 12, -1}));  // 2 * 4 + 1 + 3 = 12
  r = infer(make_node("ConvTranspose", 2, 1, {{"group", ai(2)}, {"output_shape", ais({1, 6, 20, 21})}}, 11),
            {info(DataType::kFloat32, {1, 4, -1, 7}), info(DataType::kFloat32, {4, 3, 3, 3})});
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_EQ(r.outs[0].dims, (Dims{1, 6, 20, 21}));
  const Tensor x = f32({1, 2, 3, 3}, std::vector<float>(18, 1.f));
  // Channels of X and W disagree; group does not divide them; pads larger than the output.
  EXPECT_FALSE(run_status(make_node("ConvTranspose", 2, 1, {}, 11), {x, f32({3, 1, 2, 2}, std::vector<float>(12, 1.f))}).ok());
  EXPECT_FALSE(
      run_status(make_node("ConvTranspose", 2, 1, {{"group", ai(4)}}, 11), {x, f32({2, 1, 2, 2}, std::vector<float>(8, 1.f))}).ok());
  EXPECT_FALSE(run_status(make_node("ConvTranspose", 2, 1, {{"pads", ais({4, 4, 4, 4})}}, 11),
                          {x, f32({2, 1, 2, 2}, std::vector<float>(8, 1.f))})
                   .ok());
  // Plan check bounds the size attributes.
  const ops::OpSchema* schema = ops::OpRegistry::global().find("ConvTranspose");
  ASSERT_NE(schema, nullptr);
  for (auto [attr, v] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"output_padding", {-1, 0}}, {"output_shape", {int64_t{1} << 40, 3}}, {"strides", {0, 1}}, {"group", {0}}}) {
    ir::Node n = make_node("ConvTranspose", 2, 1, {{attr, attr == "group" ? ai(v[0]) : ais(v)}}, 11);
    ops::InferContext ctx(n, {info(DataType::kFloat32, {1, 2, 3, 3}), info(DataType::kFloat32, {2, 1, 2, 2})}, 1);
    EXPECT_FALSE(schema->verify(ctx).ok()) << attr;
  }
}

}  // namespace
}  // namespace streamrt

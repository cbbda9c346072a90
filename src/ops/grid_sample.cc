// GridSample (opset 16: 2-D, modes bilinear / nearest / bicubic; opset 20: N-D, modes linear /
// nearest / cubic): Y[n, c, o...] = X[n, c] sampled at grid[n, o...], whose last axis holds the
// normalized coordinates (-1..1) of the spatial axes, innermost (width) first. padding_mode zeros /
// border / reflection, align_corners. Interpolation is separable: per spatial axis a few (index,
// weight) taps (1 nearest, 2 linear, 4 cubic with a = -0.75), their product summed, in double; the
// coordinate and padding rules follow the ONNX reference (onnx/reference/ops/op_grid_sample.py).
// CPU only: the CUDA engine runs it on the host.
#include <cmath>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {
namespace {

enum class Mode { kNearest, kLinear, kCubic };
enum class Pad { kZeros, kBorder, kReflection };

struct Attrs {
  Mode mode = Mode::kLinear;
  Pad pad = Pad::kZeros;
  bool align = false;
};

Result<Attrs> attrs_of(const ir::Node& node) {
  Attrs a;
  const bool v20 = node.opset >= 20;
  SRT_ASSIGN_OR_RETURN(std::string mode, node.attr_string("mode", v20 ? "linear" : "bilinear"));
  if (mode == "nearest") a.mode = Mode::kNearest;
  else if (mode == (v20 ? "linear" : "bilinear")) a.mode = Mode::kLinear;
  else if (mode == (v20 ? "cubic" : "bicubic")) a.mode = Mode::kCubic;
  else return node.error(StatusCode::kInvalidModel, "mode '" + mode + "' is not one of this opset's modes");
  SRT_ASSIGN_OR_RETURN(std::string pad, node.attr_string("padding_mode", "zeros"));
  if (pad == "zeros") a.pad = Pad::kZeros;
  else if (pad == "border") a.pad = Pad::kBorder;
  else if (pad == "reflection") a.pad = Pad::kReflection;
  else return node.error(StatusCode::kInvalidModel, "padding_mode '" + pad + "' is not zeros, border or reflection");
  SRT_ASSIGN_OR_RETURN(int64_t align, node.attr_int("align_corners", 0));
  a.align = align != 0;
  return a;
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats | kFloat64));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, kFloats | kFloat64));
  SRT_RETURN_IF_ERROR(attrs_of(ctx.node()).status());
  const TensorInfo& x = ctx.input(0);
  const TensorInfo& g = ctx.input(1);
  if (!x.has_shape || !g.has_shape) {
    ctx.set_output_unranked(0, x.dtype);
    return ok_status();
  }
  const size_t r = x.dims.size();
  if (r < 3 || g.dims.size() != r) return ctx.error("X must be [N, C, spatial...] and grid [N, spatial..., k] of X's rank");
  if (ctx.opset() < 20 && r != 4) return ctx.error("opset " + std::to_string(ctx.opset()) + " samples 2-D images only");
  if (g.dims.back() >= 0 && g.dims.back() != static_cast<int64_t>(r - 2))
    return ctx.error("grid's last axis must hold " + std::to_string(r - 2) + " coordinates");
  if (x.dims[0] >= 0 && g.dims[0] >= 0 && x.dims[0] != g.dims[0]) return ctx.error("X and grid disagree on the batch size");
  Dims out = {x.dims[0], x.dims[1]};
  out.insert(out.end(), g.dims.begin() + 1, g.dims.end() - 1);
  ctx.set_output(0, x.dtype, out);
  return ok_status();
}

double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;  // a one-pixel axis with align_corners
  if (x < lo) {
    const double dx = lo - x;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    const double dx = x - hi;
    const int64_t n = static_cast<int64_t>(dx / range);
    const double r = dx - static_cast<double>(n) * range;
    return n % 2 == 0 ? hi - r : lo + r;
  }
  return x;
}

void cubic_coeffs(double t, double c[4]) {
  constexpr double a = -0.75;
  const double x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
  c[0] = ((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a;
  c[1] = ((a + 2) * x1 - (a + 3)) * x1 * x1 + 1;
  c[2] = ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1;
  c[3] = ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a;
}

constexpr double kFar = 1e9;

struct Tap {
  int64_t index = -1;  // -1: outside (zeros padding), contributes nothing
  double weight = 0;
};

// The taps of one spatial axis of `dim` pixels for normalized coordinate `g`.
std::vector<Tap> taps(double g, int64_t dim, const Attrs& a) {
  if (std::isnan(g)) return {{-1, 0.0}};  // samples nothing (0), whatever the padding
  // Far beyond any image, and small enough that floor() converts to int64 safely.
  g = std::clamp(g, -kFar, kFar);
  double x = a.align ? (g + 1) / 2.0 * static_cast<double>(dim - 1) : ((g + 1) * static_cast<double>(dim) - 1) / 2.0;
  const double lo = a.align ? 0.0 : -0.5, hi = a.align ? static_cast<double>(dim - 1) : static_cast<double>(dim) - 0.5;
  if (a.mode == Mode::kNearest) x = std::nearbyint(x);
  if (x < lo || x > hi) {
    if (a.pad == Pad::kBorder) x = std::clamp(x, 0.0, static_cast<double>(dim - 1));
    else if (a.pad == Pad::kReflection) x = reflect(x, lo, hi);
  }
  auto pixel = [&](int64_t i) -> int64_t {
    if (a.pad == Pad::kZeros) return i >= 0 && i < dim ? i : -1;
    if (a.pad == Pad::kBorder) return std::clamp<int64_t>(i, 0, dim - 1);
    return std::clamp<int64_t>(static_cast<int64_t>(reflect(static_cast<double>(i), lo, hi)), 0, dim - 1);
  };
  if (a.mode == Mode::kNearest) return {{pixel(static_cast<int64_t>(x)), 1.0}};
  const double f = std::floor(x), t = x - f;
  const int64_t i0 = static_cast<int64_t>(f);
  if (a.mode == Mode::kLinear) return {{pixel(i0), 1 - t}, {pixel(i0 + 1), t}};
  double c[4];
  cubic_coeffs(t, c);
  return {{pixel(i0 - 1), c[0]}, {pixel(i0), c[1]}, {pixel(i0 + 1), c[2]}, {pixel(i0 + 2), c[3]}};
}

template <typename T, typename G>
void sample(const T* x, const G* grid, T* y, const Dims& xd, const Dims& yd, const Attrs& a) {
  const size_t k = xd.size() - 2;
  int64_t in_plane = 1, out_plane = 1;
  for (size_t d = 0; d < k; ++d) in_plane *= xd[d + 2], out_plane *= yd[d + 2];
  std::vector<std::vector<Tap>> axis_taps(k);
  std::vector<size_t> at(k);
  for (int64_t n = 0; n < xd[0]; ++n)
    for (int64_t o = 0; o < out_plane; ++o) {
      const G* gp = grid + (n * out_plane + o) * static_cast<int64_t>(k);
      for (size_t d = 0; d < k; ++d)  // grid's component 0 is the innermost axis
        axis_taps[d] = taps(static_cast<double>(load(gp[k - 1 - d])), xd[d + 2], a);
      for (int64_t c = 0; c < xd[1]; ++c) {
        const T* plane = x + (n * xd[1] + c) * in_plane;
        double sum = 0;
        std::fill(at.begin(), at.end(), 0);
        for (;;) {  // every combination of one tap per axis
          double w = 1;
          int64_t off = 0;
          bool inside = true;
          for (size_t d = 0; d < k; ++d) {
            const Tap& tp = axis_taps[d][at[d]];
            w *= tp.weight;
            inside = inside && tp.index >= 0;
            off = off * xd[d + 2] + tp.index;
          }
          if (inside) sum += w * static_cast<double>(load(plane[off]));
          size_t d = k;
          while (d > 0 && ++at[d - 1] == axis_taps[d - 1].size()) at[--d] = 0;
          if (d == 0) break;
        }
        y[(n * xd[1] + c) * out_plane + o] = store<T>(static_cast<compute_t<T>>(sum));
      }
    }
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 2));
  SRT_ASSIGN_OR_RETURN(Attrs a, attrs_of(ctx.node()));
  const TensorRef& x = ctx.input(0);
  const TensorRef& g = ctx.input(1);
  const TensorRef& y = ctx.output(0);
  if (y.numel() == 0) return ok_status();
  for (size_t d = 2; d < x.dims.size(); ++d)
    if (x.dims[d] == 0) return ctx.error("cannot sample an empty image");
  return dispatch<kFloats | kFloat64>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    return dispatch<kFloats | kFloat64>(g.dtype, ctx.node().describe() + " grid", [&]<typename G>() {
      sample<T, G>(x.as<const T>(), g.as<const G>(), y.as<T>(), x.dims, y.dims, a);
      return ok_status();
    });
  });
}

}  // namespace

STREAMRT_REGISTER_OP(GridSample, {.op_type = "GridSample", .min_opset = 16, .infer = infer, .cpu = cpu,
                                  .cpu_dtypes = dtypes(kFloats | kFloat64)});

}  // namespace streamrt::ops

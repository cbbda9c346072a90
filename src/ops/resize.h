// Resize (opsets 10-19) and the deprecated Upsample (7, 9): the geometry both devices share.
// resize_params() (host) reads attributes and the roi / scales / sizes inputs into a by-value
// ResizeParams; the inline functions below (host and device) turn it into, for each output
// index along one axis, a window of input taps and their weights, exactly as the ONNX reference
// does (onnx/reference/ops/op_resize.py): coordinates and weights in double, taps outside the
// input clamped to its edge (or dropped with exclude_outside), antialias widening the filter by
// 1/scale when downscaling, tf_crop_and_resize's out-of-roi points set to extrapolation_value.
// An output element is the sum over the product of its axes' windows.
#pragma once

#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define SRT_RESIZE_HD __host__ __device__
#else
#define SRT_RESIZE_HD
#endif

#if !defined(__CUDACC_RTC__)
#include "ops/op.h"
#endif

namespace streamrt::ops {

inline constexpr int kResizeMaxRank = 8;

enum class ResizeMode : int { kNearest, kLinear, kCubic };
enum class ResizeCoord : int {
  kHalfPixel, kHalfPixelSymmetric, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNN,
  kTfCropAndResize
};
enum class ResizeNearest : int { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeAxis {
  int64_t in = 1, out = 1;
  double scale = 1;                 // output / input as the coordinate mapping uses it
  double roi_start = 0, roi_end = 1;  // tf_crop_and_resize's region, normalized
  bool identity = true;             // out == in at scale 1 (and the whole roi): copied as is
};

struct ResizeParams {
  int rank = 0;
  ResizeAxis axis[kResizeMaxRank];
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoord coord = ResizeCoord::kHalfPixel;
  ResizeNearest nearest = ResizeNearest::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0;
};

// The input taps of one output index along one axis: `taps` consecutive input indices from
// `start` (clamped to [0, in) when read), weight k = raw_weight(k) * norm.
struct ResizeWindow {
  int64_t start = 0;
  int taps = 1;
  double ratio = 0;  // source coordinate minus its floor
  double norm = 1;
  bool outside = false;  // tf_crop_and_resize: the point lies outside the input
};

// Source coordinate of output index `o` (the reference's x_original). Its "output_width" is the
// unrounded scale * in, as the reference's.
SRT_RESIZE_HD inline double resize_source(const ResizeParams& p, const ResizeAxis& a, int64_t o) {
  const double x = static_cast<double>(o), in = static_cast<double>(a.in);
  const double out_f = a.scale * in;
  switch (p.coord) {
    case ResizeCoord::kAlignCorners: return out_f == 1 ? 0.0 : x * (in - 1) / (out_f - 1);
    case ResizeCoord::kAsymmetric: return x / a.scale;
    case ResizeCoord::kTfHalfPixelForNN: return (x + 0.5) / a.scale;
    case ResizeCoord::kTfCropAndResize: {
      const double span = (a.roi_end - a.roi_start) * (in - 1);
      return a.roi_start * (in - 1) + (out_f == 1 ? span / 2 : x * span / (out_f - 1));
    }
    case ResizeCoord::kPytorchHalfPixel: return out_f == 1 ? -0.5 : (x + 0.5) / a.scale - 0.5;
    case ResizeCoord::kHalfPixelSymmetric: {
      const double adjustment = static_cast<double>(a.out) / out_f;
      return in / 2 * (1 - adjustment) + (x + 0.5) / a.scale - 0.5;
    }
    case ResizeCoord::kHalfPixel: break;
  }
  return (x + 0.5) / a.scale - 0.5;
}

// The filter's scale: antialias stretches it by 1/scale when downscaling.
SRT_RESIZE_HD inline double resize_filter_scale(const ResizeParams& p, const ResizeAxis& a) {
  return p.antialias && a.scale < 1 ? a.scale : 1.0;
}

// Cubic convolution kernel of parameter A at distance |x|.
SRT_RESIZE_HD inline double resize_cubic(double x, double A) {
  x = fabs(x);
  if (x <= 1) return ((A + 2) * x - (A + 3)) * x * x + 1;
  if (x < 2) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A;
  return 0;
}

// Weight of tap k before normalization.
SRT_RESIZE_HD inline double resize_raw_weight(const ResizeParams& p, const ResizeAxis& a, const ResizeWindow& w,
                                              int k) {
  if (p.mode == ResizeMode::kNearest || a.identity) return 1;
  const double s = resize_filter_scale(p, a);
  // Distance of tap k from the source point, in filter units: the taps are floor(x) + i for
  // i in [1 - taps / 2, taps / 2].
  const double d = (static_cast<double>(1 - w.taps / 2 + k) - w.ratio) * s;
  if (p.mode == ResizeMode::kLinear) {
    const double c = 1 - fabs(d);
    return c > 0 ? c : 0;
  }
  return resize_cubic(d, p.cubic_a);
}

SRT_RESIZE_HD inline bool resize_tap_inside(const ResizeAxis& a, const ResizeWindow& w, int k) {
  return w.start + k >= 0 && w.start + k < a.in;
}

// The window of output index `o` along axis `a`.
SRT_RESIZE_HD inline ResizeWindow resize_window(const ResizeParams& p, const ResizeAxis& a, int64_t o) {
  ResizeWindow w;
  if (a.identity) {
    w.start = o;
    return w;
  }
  const double x = resize_source(p, a, o);
  if (p.coord == ResizeCoord::kTfCropAndResize && (x < 0 || x > static_cast<double>(a.in) - 1)) w.outside = true;
  const double fl = floor(x);
  w.ratio = x - fl;
  const int64_t base = static_cast<int64_t>(fl);
  if (p.mode == ResizeMode::kNearest) {
    bool up = false;  // round to floor + 1
    if (w.ratio != 0) {
      switch (p.nearest) {
        case ResizeNearest::kRoundPreferFloor: up = w.ratio > 0.5; break;
        case ResizeNearest::kRoundPreferCeil: up = w.ratio >= 0.5; break;
        case ResizeNearest::kFloor: up = false; break;
        case ResizeNearest::kCeil: up = true; break;
      }
    }
    w.start = base + (up ? 1 : 0);
    return w;
  }
  // Linear: 2 taps (floor, floor + 1); cubic: 4 (floor - 1 .. floor + 2); antialias widens
  // either to every tap within the filter's support, 1 (linear) or 2 (cubic) over the scale.
  const double s = resize_filter_scale(p, a);
  const double support = p.mode == ResizeMode::kLinear ? 1 : 2;
  const int half = static_cast<int>(-floor(-support / s));  // ceil(support / s)
  w.taps = 2 * half;
  w.start = base + 1 - half;
  if (p.antialias || p.exclude_outside) {
    double sum = 0;
    for (int k = 0; k < w.taps; ++k)
      if (!p.exclude_outside || resize_tap_inside(a, w, k)) sum += resize_raw_weight(p, a, w, k);
    w.norm = sum != 0 ? 1 / sum : 1;
  }
  return w;
}

// Normalized weight of tap k (0 for a tap exclude_outside drops).
SRT_RESIZE_HD inline double resize_weight(const ResizeParams& p, const ResizeAxis& a, const ResizeWindow& w, int k) {
  if (p.exclude_outside && !resize_tap_inside(a, w, k)) return 0;
  return resize_raw_weight(p, a, w, k) * w.norm;
}

// Input index of tap k, clamped to the input (the reference pads with edge values).
SRT_RESIZE_HD inline int64_t resize_index(const ResizeAxis& a, const ResizeWindow& w, int k) {
  const int64_t i = w.start + k;
  return i < 0 ? 0 : (i >= a.in ? a.in - 1 : i);
}

#if !defined(__CUDACC_RTC__)
// The roi / scales / sizes tensors of a node, null where absent (or empty: "not given").
struct ResizeInputs {
  const Tensor* roi = nullptr;
  const Tensor* scales = nullptr;
  const Tensor* sizes = nullptr;
  bool roi_unknown = false;  // shape inference: roi is given but not known yet (whole input)
};

// Which input holds roi / scales / sizes at the node's op and opset (-1: none).
struct ResizeSlots {
  int roi = -1, scales = -1, sizes = -1;
};
ResizeSlots resize_slots(const ir::Node& node);

// The node's attributes and inputs resolved for X of dims `x` (static): output dims, per-axis
// scale and roi. kInvalidModel for inconsistent inputs or an output dim beyond kMaxAttrExtent;
// kUnsupported past kResizeMaxRank axes.
Result<ResizeParams> resize_params(const ir::Node& node, const Dims& x, const ResizeInputs& in);

// Output dims of `p`.
Dims resize_output_dims(const ResizeParams& p);
#endif

}  // namespace streamrt::ops

// Resize (opsets 10, 11, 13, 18, 19) and the deprecated Upsample (7, 9): nearest, linear and cubic
// over any number of axes, every coordinate_transformation_mode, nearest_mode, cubic_coeff_a,
// exclude_outside, extrapolation_value, antialias, axes and keep_aspect_ratio_policy. Upsample and
// Resize-10 resize as ONNX's version converter maps them onto Resize-11: asymmetric coordinates,
// nearest rounding down. scales / sizes (and roi) are shape inputs: they fix the output dims.
// The geometry is ops/resize.h's, shared with the CUDA kernel; this CPU kernel tabulates each
// axis' windows once and sums, per output element, over the product of its axes' taps in double.
#include "ops/resize.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {

ResizeSlots resize_slots(const ir::Node& node) {
  if (node.op_type == "Upsample") return node.opset >= 9 ? ResizeSlots{-1, 1, -1} : ResizeSlots{};
  if (node.opset < 11) return {-1, 1, -1};
  return {1, 2, 3};
}

Dims resize_output_dims(const ResizeParams& p) {
  Dims d(static_cast<size_t>(p.rank));
  for (int i = 0; i < p.rank; ++i) d[static_cast<size_t>(i)] = p.axis[i].out;
  return d;
}

namespace {

Status bad(const ir::Node& node, const std::string& msg) { return node.error(StatusCode::kInvalidModel, msg); }

template <typename E>
Result<E> parse_enum(const ir::Node& node, const char* attr, const char* def,
                     std::initializer_list<std::pair<const char*, E>> names) {
  SRT_ASSIGN_OR_RETURN(std::string v, node.attr_string(attr, def));
  for (const auto& [name, e] : names)
    if (v == name) return e;
  return node.error(StatusCode::kUnsupported, std::string(attr) + " '" + v + "' is not supported");
}

Result<bool> flag_attr(const ir::Node& node, const char* attr) {
  SRT_ASSIGN_OR_RETURN(int64_t v, node.attr_int(attr, 0));
  if (v != 0 && v != 1) return bad(node, std::string(attr) + " is " + std::to_string(v) + ", expected 0 or 1");
  return v == 1;
}

// Upsample and Resize-10 have only `mode`; ONNX's Resize 10 -> 11 adapter fixes the rest.
bool legacy(const ir::Node& node) { return node.op_type == "Upsample" || node.opset < 11; }

Result<ResizeParams> read_attrs(const ir::Node& node) {
  ResizeParams p;
  using M = ResizeMode;
  if (legacy(node)) {
    SRT_ASSIGN_OR_RETURN(p.mode, parse_enum<M>(node, "mode", "nearest",
                                               {{"nearest", M::kNearest}, {"linear", M::kLinear}, {"bilinear", M::kLinear}}));
    p.coord = ResizeCoord::kAsymmetric;
    p.nearest = ResizeNearest::kFloor;
    return p;
  }
  SRT_ASSIGN_OR_RETURN(p.mode, parse_enum<M>(node, "mode", "nearest",
                                             {{"nearest", M::kNearest}, {"linear", M::kLinear}, {"cubic", M::kCubic}}));
  using C = ResizeCoord;
  SRT_ASSIGN_OR_RETURN(p.coord, parse_enum<C>(node, "coordinate_transformation_mode", "half_pixel",
                                              {{"half_pixel", C::kHalfPixel},
                                               {"half_pixel_symmetric", C::kHalfPixelSymmetric},
                                               {"pytorch_half_pixel", C::kPytorchHalfPixel},
                                               {"align_corners", C::kAlignCorners},
                                               {"asymmetric", C::kAsymmetric},
                                               {"tf_half_pixel_for_nn", C::kTfHalfPixelForNN},
                                               {"tf_crop_and_resize", C::kTfCropAndResize}}));
  using N = ResizeNearest;
  SRT_ASSIGN_OR_RETURN(p.nearest, parse_enum<N>(node, "nearest_mode", "round_prefer_floor",
                                                {{"round_prefer_floor", N::kRoundPreferFloor},
                                                 {"round_prefer_ceil", N::kRoundPreferCeil},
                                                 {"floor", N::kFloor},
                                                 {"ceil", N::kCeil}}));
  SRT_ASSIGN_OR_RETURN(float a, node.attr_float("cubic_coeff_a", -0.75f));
  SRT_ASSIGN_OR_RETURN(float e, node.attr_float("extrapolation_value", 0.f));
  if (!std::isfinite(a)) return bad(node, "cubic_coeff_a is not finite");
  p.cubic_a = a;
  p.extrapolation = e;
  SRT_ASSIGN_OR_RETURN(p.exclude_outside, flag_attr(node, "exclude_outside"));
  SRT_ASSIGN_OR_RETURN(p.antialias, flag_attr(node, "antialias"));
  return p;
}

enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

Result<std::vector<double>> float_values(const ir::Node& node, const Tensor& t, const char* what) {
  auto v = t.to_float_vector();
  if (!v.ok()) return bad(node, std::string(what) + ": " + v.status().message());
  return std::vector<double>(v->begin(), v->end());
}

// The resized axes: attribute `axes` (opset 18), else all of them.
Result<std::vector<int64_t>> resized_axes(const ir::Node& node, size_t rank) {
  std::vector<int64_t> axes;
  if (node.has_attr("axes")) {
    SRT_ASSIGN_OR_RETURN(axes, node.attr_ints("axes"));
    return normalize_axes(node, axes, static_cast<int64_t>(rank));
  }
  for (size_t d = 0; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  return axes;
}

Status set_roi(const ir::Node& node, const ResizeInputs& in, const std::vector<int64_t>& axes, ResizeParams& p) {
  if (p.coord != ResizeCoord::kTfCropAndResize) return ok_status();
  if (!in.roi) return in.roi_unknown ? ok_status() : bad(node, "tf_crop_and_resize needs roi");
  SRT_ASSIGN_OR_RETURN(std::vector<double> roi, float_values(node, *in.roi, "roi"));
  if (roi.size() != 2 * axes.size())
    return bad(node, "roi has " + std::to_string(roi.size()) + " values, expected " + std::to_string(2 * axes.size()));
  for (size_t i = 0; i < axes.size(); ++i) {
    if (!std::isfinite(roi[i]) || !std::isfinite(roi[axes.size() + i])) return bad(node, "roi is not finite");
    p.axis[axes[i]].roi_start = roi[i];
    p.axis[axes[i]].roi_end = roi[axes.size() + i];
  }
  return ok_status();
}

// Output dim of an axis of `in` elements at `scale`, bounded so that no later size overflows.
Result<int64_t> scaled_dim(const ir::Node& node, int64_t in, double scale, double add) {
  const double v = std::floor(scale * static_cast<double>(in) + add);
  if (!(v >= 0 && v <= static_cast<double>(kMaxAttrExtent)))
    return bad(node, "output dim " + std::to_string(v) + " (input " + std::to_string(in) + " at scale " +
                         std::to_string(scale) + ") is out of range");
  return static_cast<int64_t>(v);
}

Status from_scales(const ir::Node& node, const std::vector<double>& scales, const std::vector<int64_t>& axes,
                   ResizeParams& p) {
  if (scales.size() != axes.size())
    return bad(node, "scales has " + std::to_string(scales.size()) + " values for " + std::to_string(axes.size()) + " axes");
  for (size_t i = 0; i < axes.size(); ++i) {
    ResizeAxis& a = p.axis[axes[i]];
    if (!(scales[i] > 0) || !std::isfinite(scales[i]))
      return bad(node, "scale " + std::to_string(scales[i]) + " must be positive and finite");
    a.scale = scales[i];
    SRT_ASSIGN_OR_RETURN(a.out, scaled_dim(node, a.in, a.scale, 0));
  }
  return ok_status();
}

Status from_sizes(const ir::Node& node, const std::vector<int64_t>& sizes, const std::vector<int64_t>& axes,
                  ResizeParams& p) {
  if (sizes.size() != axes.size())
    return bad(node, "sizes has " + std::to_string(sizes.size()) + " values for " + std::to_string(axes.size()) + " axes");
  SRT_ASSIGN_OR_RETURN(AspectPolicy policy,
                       parse_enum<AspectPolicy>(node, "keep_aspect_ratio_policy", "stretch",
                                                {{"stretch", AspectPolicy::kStretch},
                                                 {"not_larger", AspectPolicy::kNotLarger},
                                                 {"not_smaller", AspectPolicy::kNotSmaller}}));
  double common = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    ResizeAxis& a = p.axis[axes[i]];
    if (sizes[i] < 0 || sizes[i] > kMaxAttrExtent) return bad(node, "size " + std::to_string(sizes[i]) + " is out of range");
    if (a.in == 0 && sizes[i] != 0) return bad(node, "axis " + std::to_string(axes[i]) + " is empty and cannot be resized");
    a.out = sizes[i];
    a.scale = a.in == 0 ? 1.0 : static_cast<double>(sizes[i]) / static_cast<double>(a.in);
    if (i == 0 || (policy == AspectPolicy::kNotLarger ? a.scale < common : a.scale > common)) common = a.scale;
  }
  if (policy == AspectPolicy::kStretch) return ok_status();
  for (int64_t d : axes) {
    ResizeAxis& a = p.axis[d];
    if (a.in == 0) continue;
    if (!(common > 0)) return bad(node, "keep_aspect_ratio_policy with a zero size");
    a.scale = common;
    SRT_ASSIGN_OR_RETURN(a.out, scaled_dim(node, a.in, common, 0.5));  // rounds half up, as the reference
  }
  return ok_status();
}

// Mirrors the reference's skip: an axis at scale ~1 keeping its size (and the whole roi) is copied.
void mark_identity(ResizeParams& p) {
  for (int d = 0; d < p.rank; ++d) {
    ResizeAxis& a = p.axis[d];
    const bool whole_roi = p.coord != ResizeCoord::kTfCropAndResize || (a.roi_start == 0 && std::fabs(a.roi_end - 1) <= 1e-9);
    a.identity = std::fabs(a.scale - 1) <= 1e-9 * std::max(1.0, a.scale) && a.out == a.in && whole_roi;
  }
}

}  // namespace

Result<ResizeParams> resize_params(const ir::Node& node, const Dims& x, const ResizeInputs& in) {
  if (x.size() > static_cast<size_t>(kResizeMaxRank))
    return node.error(StatusCode::kUnsupported, "X of rank " + std::to_string(x.size()) + " (at most " +
                                                    std::to_string(kResizeMaxRank) + ")");
  SRT_ASSIGN_OR_RETURN(ResizeParams p, read_attrs(node));
  p.rank = static_cast<int>(x.size());
  for (size_t d = 0; d < x.size(); ++d) p.axis[d].in = p.axis[d].out = x[d];
  SRT_ASSIGN_OR_RETURN(std::vector<int64_t> axes, resized_axes(node, x.size()));
  SRT_RETURN_IF_ERROR(set_roi(node, in, axes, p));
  std::optional<std::vector<double>> scales;
  if (node.op_type == "Upsample" && node.opset < 9) {
    SRT_ASSIGN_OR_RETURN(std::vector<float> s, node.attr_floats("scales"));
    scales.emplace(s.begin(), s.end());
  } else if (in.scales) {
    SRT_ASSIGN_OR_RETURN(scales, float_values(node, *in.scales, "scales"));
  }
  if (scales && in.sizes) return bad(node, "scales and sizes are both given");
  if (scales) {
    SRT_RETURN_IF_ERROR(from_scales(node, *scales, axes, p));
  } else if (in.sizes) {
    auto sizes = in.sizes->to_int64_vector();
    if (!sizes.ok()) return bad(node, "sizes: " + sizes.status().message());
    SRT_RETURN_IF_ERROR(from_sizes(node, *sizes, axes, p));
  } else {
    return bad(node, "neither scales nor sizes is given");
  }
  int64_t total = 1;
  for (int d = 0; d < p.rank; ++d)
    if (__builtin_mul_overflow(total, p.axis[d].out, &total)) return bad(node, "the output's size overflows");
  mark_identity(p);
  return p;
}

namespace {

// Input `slot` as a resize input: null when absent or empty (not given); *unknown when it may
// be given but its value is not known at build time.
const Tensor* given_input(const InferContext& ctx, int slot, bool* unknown) {
  if (slot < 0 || !ctx.has_input(static_cast<size_t>(slot))) return nullptr;
  const TensorInfo& t = ctx.input(static_cast<size_t>(slot));
  if (t.value) return t.value->numel() == 0 ? nullptr : t.value;
  if (t.has_shape && dims_static(t.dims) && dims_numel(t.dims) == 0) return nullptr;
  *unknown = true;
  return nullptr;
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kAll));
  SRT_ASSIGN_OR_RETURN(ResizeParams attrs, read_attrs(ctx.node()));
  const DataType t = ctx.input_dtype(0);
  if (attrs.mode != ResizeMode::kNearest && t == DataType::kBool)
    return ctx.unsupported("linear and cubic resize of bool");
  if (!ctx.input(0).has_shape) {
    ctx.set_output_unranked(0, t);
    return ok_status();
  }
  const Dims& x = ctx.input_dims(0);
  const ResizeSlots slots = resize_slots(ctx.node());
  bool unknown = false, roi_unknown = false;
  ResizeInputs in{given_input(ctx, slots.roi, &roi_unknown), given_input(ctx, slots.scales, &unknown),
                  given_input(ctx, slots.sizes, &unknown)};
  in.roi_unknown = roi_unknown;  // roi never changes the shape
  if (unknown || (!dims_static(x) && x.size() > static_cast<size_t>(kResizeMaxRank))) {
    ctx.set_output(0, t, Dims(x.size(), kDynamicDim));
    return ok_status();
  }
  // Unknown input dims: resolve with 1 there, then forget what depended on them (a size
  // given outright does not).
  Dims xs = x;
  for (int64_t& d : xs)
    if (d < 0) d = 1;
  SRT_ASSIGN_OR_RETURN(ResizeParams p, resize_params(ctx.node(), xs, in));
  Dims out = resize_output_dims(p);
  SRT_ASSIGN_OR_RETURN(std::string policy, ctx.node().attr_string("keep_aspect_ratio_policy", "stretch"));
  const bool sized_alone = in.sizes && policy == "stretch";
  SRT_ASSIGN_OR_RETURN(auto axes, resized_axes(ctx.node(), x.size()));
  // keep_aspect_ratio_policy: one scale from every resized axis, so one unknown hides them all.
  bool common_unknown = false;
  for (int64_t d : axes) common_unknown = common_unknown || (in.sizes && policy != "stretch" && x[d] < 0);
  for (size_t d = 0; d < x.size(); ++d) {
    const bool resized = std::find(axes.begin(), axes.end(), static_cast<int64_t>(d)) != axes.end();
    if ((x[d] < 0 && !(sized_alone && resized)) || (resized && common_unknown)) out[d] = kDynamicDim;
  }
  ctx.set_output(0, t, std::move(out));
  return ok_status();
}

// Plan load: the attributes parse, Upsample-7's scales are sane; the rest (output dims from
// scales / sizes, bounded by kMaxAttrExtent) is the shape rule's, which runs next.
Status verify(const InferContext& ctx) {
  SRT_RETURN_IF_ERROR(read_attrs(ctx.node()).status());
  if (ctx.node().has_attr("axes") && ctx.input(0).has_shape)
    SRT_RETURN_IF_ERROR(resized_axes(ctx.node(), ctx.input_dims(0).size()).status());
  if (ctx.node().op_type == "Upsample" && ctx.opset() < 9) {
    SRT_ASSIGN_OR_RETURN(std::vector<float> s, ctx.node().attr_floats("scales"));
    for (float v : s)
      if (!(v > 0 && v <= static_cast<float>(kMaxAttrExtent))) return ctx.error("scales value out of range");
  }
  return ok_status();
}

// One axis' windows, tabulated: taps per output index, their element offsets and weights.
struct AxisTable {
  int taps = 1;
  std::vector<int64_t> off;
  std::vector<double> w;
  std::vector<uint8_t> outside;
};

AxisTable tabulate(const ResizeParams& p, int d, int64_t stride) {
  const ResizeAxis& a = p.axis[d];
  AxisTable t;
  t.outside.resize(static_cast<size_t>(a.out));
  for (int64_t o = 0; o < a.out; ++o) {
    const ResizeWindow win = resize_window(p, a, o);
    if (o == 0) {
      t.taps = win.taps;
      t.off.resize(static_cast<size_t>(a.out * t.taps));
      t.w.resize(t.off.size());
    }
    t.outside[static_cast<size_t>(o)] = win.outside;
    for (int k = 0; k < t.taps; ++k) {
      const size_t i = static_cast<size_t>(o * t.taps + k);
      t.off[i] = resize_index(a, win, k) * stride;
      t.w[i] = resize_weight(p, a, win, k);
    }
  }
  return t;
}

template <typename T>
T to_output(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    // As the reference's saturate_cast: round half to even, clamp to the type.
    const double r = std::nearbyint(v);
    if (std::isnan(r)) return T(0);
    if (r <= static_cast<double>(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
    if (r >= static_cast<double>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  } else {
    return store<T>(static_cast<compute_t<T>>(v));
  }
}

// Nearest: one tap per axis, copied as is (no trip through double).
int64_t nearest_offset(const std::vector<AxisTable>& tabs, const std::vector<int64_t>& o) {
  int64_t off = 0;
  for (size_t d = 0; d < tabs.size(); ++d) off += tabs[d].off[static_cast<size_t>(o[d])];
  return off;
}

template <typename T>
void resize_typed(const ResizeParams& p, const std::vector<AxisTable>& tabs, const T* x, T* y) {
  const size_t r = static_cast<size_t>(p.rank);
  const T extrapolated = to_output<T>(p.extrapolation);
  std::vector<int64_t> o(r, 0);
  const int64_t total = dims_numel(resize_output_dims(p));
  // Sum over the taps of axes d.. of the element at offset `off`, weighted by `w`.
  auto sum = [&](auto& self, size_t d, int64_t off, double w) -> double {
    if (d == r) return w * static_cast<double>(load(x[off]));
    const AxisTable& t = tabs[d];
    double acc = 0;
    for (int k = 0; k < t.taps; ++k) {
      const size_t i = static_cast<size_t>(o[d] * t.taps + k);
      if (t.w[i] != 0) acc += self(self, d + 1, off + t.off[i], w * t.w[i]);
    }
    return acc;
  };
  for (int64_t i = 0; i < total; ++i) {
    bool outside = false;
    for (size_t d = 0; d < r; ++d) outside = outside || tabs[d].outside[static_cast<size_t>(o[d])];
    if (outside) y[i] = extrapolated;
    else if (p.mode == ResizeMode::kNearest) y[i] = x[nearest_offset(tabs, o)];
    else y[i] = to_output<T>(sum(sum, 0, 0, 1.0));
    for (size_t d = r; d-- > 0;) {
      if (++o[d] < p.axis[d].out) break;
      o[d] = 0;
    }
  }
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  const ResizeSlots slots = resize_slots(ctx.node());
  Tensor views[3];
  const int slot_of[3] = {slots.roi, slots.scales, slots.sizes};
  const Tensor* given[3] = {nullptr, nullptr, nullptr};
  for (int k = 0; k < 3; ++k) {
    const int s = slot_of[k];
    if (s < 0 || !ctx.has_input(static_cast<size_t>(s))) continue;
    const TensorRef& t = ctx.input(static_cast<size_t>(s));
    views[k] = Tensor::view(t.dtype, t.dims, t.data, nullptr);
    if (t.numel() > 0) given[k] = &views[k];
  }
  SRT_ASSIGN_OR_RETURN(ResizeParams p, resize_params(ctx.node(), x.dims, {given[0], given[1], given[2]}));
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, resize_output_dims(p)));
  if (ctx.output(0).numel() == 0) return ok_status();
  const std::vector<int64_t> strides = dense_strides(x.dims);
  std::vector<AxisTable> tabs;
  for (int d = 0; d < p.rank; ++d) tabs.push_back(tabulate(p, d, strides[static_cast<size_t>(d)]));
  if (p.mode == ResizeMode::kNearest)
    return dispatch<kAll>(x.dtype, ctx.node().describe(), [&]<typename T>() {
      resize_typed<T>(p, tabs, x.as<T>(), ctx.output(0).as<T>());
      return ok_status();
    });
  return dispatch<kNumeric>(x.dtype, ctx.node().describe(), [&]<typename T>() {
    resize_typed<T>(p, tabs, x.as<T>(), ctx.output(0).as<T>());
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(Resize, {.op_type = "Resize", .min_opset = 10, .infer = infer, .cpu = cpu, .verify = verify,
                              .shape_inputs = {1, 2, 3}, .cpu_dtypes = kAnyDType});
STREAMRT_REGISTER_OP(Upsample, {.op_type = "Upsample", .min_opset = 7, .infer = infer, .cpu = cpu, .verify = verify,
                                .shape_inputs = {1}, .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops

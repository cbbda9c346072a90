// ConvTranspose (opsets 1, 11; 1-D, 2-D, 3-D): group, strides, dilations, pads, auto_pad,
// output_padding, output_shape, optional bias. The gradient of Conv with respect to its input:
// reference kernel per image and group, one sgemm W_g^T [M/g * prod(kernel), C/g] x X_g
// [C/g, prod(in)] into a column matrix, then col2im adding each column entry to the output
// position o = i * stride - pad_begin + tap * dilation it reaches (positions outside Y dropped).
#include "ops/conv_transpose.h"

#include "ops/gemm_util.h"

namespace streamrt::ops {

Dims ConvTransposeGeom::y() const {
  Dims d = {batch, maps};
  d.insert(d.end(), out.begin(), out.end());
  return d;
}

namespace {

Status bad(const ir::Node& node, const std::string& msg) { return node.error(StatusCode::kInvalidModel, msg); }

int64_t floor_div2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

// output_shape as given: its spatial dims (a full [N, M, D1..] form is accepted too), or empty.
Result<std::vector<int64_t>> output_shape_attr(const ir::Node& node, size_t spatial) {
  if (!node.has_attr("output_shape")) return std::vector<int64_t>{};
  SRT_ASSIGN_OR_RETURN(std::vector<int64_t> os, node.attr_ints("output_shape"));
  if (os.size() == spatial + 2) os.erase(os.begin(), os.begin() + 2);
  if (os.size() != spatial)
    return bad(node, "output_shape has " + std::to_string(os.size()) + " values for " + std::to_string(spatial) +
                         " spatial axes");
  for (int64_t v : os)
    if (v < 0 || v > kMaxAttrExtent) return bad(node, "output_shape value " + std::to_string(v) + " is out of range");
  return os;
}

// One spatial axis: effective pads and output size (in and kernel known).
Status axis_geometry(const ir::Node& node, ConvTransposeGeom& g, size_t d, int64_t output_padding,
                     const std::vector<int64_t>& os) {
  const size_t r = g.in.size();
  const Window& w = g.win;
  // Bounded by the verify hook / read_window: each operand below 2^31, so no overflow.
  if (g.in[d] > kMaxAttrExtent) return bad(node, "input axis of " + std::to_string(g.in[d]) + " is too large");
  const int64_t natural = w.strides[d] * (g.in[d] - 1) + output_padding + (w.kernel[d] - 1) * w.dilations[d] + 1;
  const bool same = w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower;
  int64_t& pb = g.pads[d];
  int64_t& pe = g.pads[r + d];
  if (!os.empty() || same) {
    const int64_t target = !os.empty() ? os[d] : g.in[d] * w.strides[d];
    const int64_t total = natural - target;
    if (w.auto_pad == AutoPad::kSameUpper) pb = floor_div2(total), pe = total - pb;
    else pe = floor_div2(total), pb = total - pe;
    g.out[d] = target;
  } else {
    if (w.auto_pad == AutoPad::kValid) pb = pe = 0;
    g.out[d] = natural - pb - pe;
  }
  if (g.out[d] < 0 || g.out[d] > kMaxAttrExtent)
    return bad(node, "output size " + std::to_string(g.out[d]) + " of spatial axis " + std::to_string(d) +
                         " is out of range");
  return ok_status();
}

}  // namespace

Result<ConvTransposeGeom> conv_transpose_geom(const ir::Node& node, const Dims& x, const Dims& w, const Dims* b) {
  if (x.size() < 3 || w.size() != x.size())
    return bad(node, "X " + dims_to_string(x) + " and W " + dims_to_string(w) + " need one rank >= 3");
  const size_t r = x.size() - 2;
  ConvTransposeGeom g;
  SRT_ASSIGN_OR_RETURN(g.group, node.attr_int("group", 1));
  if (g.group < 1 || g.group > kMaxAttrExtent) return bad(node, "group " + std::to_string(g.group) + " is out of range");
  SRT_ASSIGN_OR_RETURN(g.win, read_window(node, r, std::vector<int64_t>(w.begin() + 2, w.end())));
  g.batch = x[0];
  g.channels = x[1];
  if (x[1] >= 0 && w[0] >= 0 && x[1] != w[0])
    return bad(node, "X has " + std::to_string(x[1]) + " channels but W " + dims_to_string(w) + " expects " +
                         std::to_string(w[0]));
  if (g.channels < 0) g.channels = w[0];
  if (g.channels >= 0 && g.channels % g.group != 0)
    return bad(node, "channels " + std::to_string(g.channels) + " not divisible by group " + std::to_string(g.group));
  if (w[1] >= 0) g.maps = w[1] * g.group;
  if (b) {
    if (b->size() != 1) return bad(node, "B has shape " + dims_to_string(*b) + ", expected 1-D");
    if (g.maps < 0) g.maps = (*b)[0];
    else if ((*b)[0] >= 0 && (*b)[0] != g.maps)
      return bad(node, "B has " + std::to_string((*b)[0]) + " values for " + std::to_string(g.maps) + " output channels");
  }
  SRT_ASSIGN_OR_RETURN(std::vector<int64_t> op, node.attr_ints("output_padding", std::vector<int64_t>(r, 0)));
  if (op.size() != r) return bad(node, "output_padding has " + std::to_string(op.size()) + " values, expected " + std::to_string(r));
  for (int64_t v : op)
    if (v < 0 || v > kMaxAttrExtent) return bad(node, "output_padding value " + std::to_string(v) + " is out of range");
  SRT_ASSIGN_OR_RETURN(std::vector<int64_t> os, output_shape_attr(node, r));
  g.in.assign(x.begin() + 2, x.end());
  g.out.assign(r, -1);
  g.pads = g.win.pads;
  for (size_t d = 0; d < r; ++d) {
    if (g.in[d] < 0 || g.win.kernel[d] < 0) {
      if (!os.empty()) g.out[d] = os[d];
      continue;
    }
    SRT_RETURN_IF_ERROR(axis_geometry(node, g, d, op[d], os));
  }
  return g;
}

namespace {

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kFloats));
  SRT_RETURN_IF_ERROR(require_input(ctx, 1, kFloats));
  const DataType t = ctx.input_dtype(0);
  if (ctx.num_inputs() > 3) return ctx.error("has " + std::to_string(ctx.num_inputs()) + " inputs, expected at most 3");
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input_dtype(i) != t)
      return ctx.error("input " + std::to_string(i) + " has type " + dtype_name(ctx.input_dtype(i)) + ", expected " +
                       dtype_name(t));
  const bool xs = ctx.input(0).has_shape, ws = ctx.input(1).has_shape;
  if (!xs && !ws) {
    ctx.set_output_unranked(0, t);
    return ok_status();
  }
  const size_t rank = xs ? ctx.input_dims(0).size() : ctx.input_dims(1).size();
  const Dims x = xs ? ctx.input_dims(0) : Dims(rank, kDynamicDim);
  const Dims w = ws ? ctx.input_dims(1) : Dims(rank, kDynamicDim);
  const Dims* b = ctx.has_input(2) && ctx.input(2).has_shape ? &ctx.input_dims(2) : nullptr;
  SRT_ASSIGN_OR_RETURN(ConvTransposeGeom g, conv_transpose_geom(ctx.node(), x, w, b));
  ctx.set_output(0, t, g.y());
  return ok_status();
}

// Plan load: window attributes, group, output_padding and output_shape bounded, so the shape
// rule's arithmetic stays exact and the kernels' loops are what the dims say.
Status verify(const InferContext& ctx) {
  SRT_RETURN_IF_ERROR(verify_window_attrs(ctx.node()));
  SRT_RETURN_IF_ERROR(verify_attr_range(ctx.node(), "group", 1, kMaxAttrExtent));
  SRT_RETURN_IF_ERROR(verify_attr_range(ctx.node(), "output_padding", 0, kMaxAttrExtent));
  return verify_attr_range(ctx.node(), "output_shape", 0, kMaxAttrExtent);
}

// Adds column matrix `col` ([mg * taps] rows of prod(in)) into the group's output planes `y`.
void col2im(const ConvTransposeGeom& g, int64_t mg, const float* col, float* y) {
  const size_t r = g.in.size();
  const int64_t in_size = dims_numel(g.in), out_size = dims_numel(g.out), taps = dims_numel(g.win.kernel);
  std::vector<int64_t> t(r), i(r);
  for (int64_t m = 0; m < mg; ++m) {
    for (int64_t k = 0; k < taps; ++k) {
      for (size_t d = r, rem = static_cast<size_t>(k); d-- > 0;) {
        t[d] = static_cast<int64_t>(rem) % g.win.kernel[d];
        rem /= static_cast<size_t>(g.win.kernel[d]);
      }
      const float* row = col + (m * taps + k) * in_size;
      std::fill(i.begin(), i.end(), 0);
      for (int64_t p = 0; p < in_size; ++p) {
        int64_t off = 0;
        bool inside = true;
        for (size_t d = 0; d < r && inside; ++d) {
          const int64_t o = i[d] * g.win.strides[d] - g.pads[d] + t[d] * g.win.dilations[d];
          inside = o >= 0 && o < g.out[d];
          off = off * g.out[d] + o;
        }
        if (inside) y[m * out_size + off] += row[p];
        for (size_t d = r; d-- > 0;) {
          if (++i[d] < g.in[d]) break;
          i[d] = 0;
        }
      }
    }
  }
}

Status conv_transpose_f32(const ir::Node& node, const ConvTransposeGeom& g, const float* x, const float* w,
                          const float* b, float* y) {
  const int64_t cg = g.channels / g.group, mg = g.maps / g.group;
  const int64_t in_size = dims_numel(g.in), out_size = dims_numel(g.out), taps = dims_numel(g.win.kernel);
  std::vector<float> col(static_cast<size_t>(mg * taps * in_size));
  std::fill(y, y + g.batch * g.maps * out_size, 0.f);
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t gi = 0; gi < g.group; ++gi) {
      const float* xg = x + (n * g.channels + gi * cg) * in_size;
      const float* wg = w + gi * cg * mg * taps;
      float* yg = y + (n * g.maps + gi * mg) * out_size;
      if (!col.empty())
        SRT_RETURN_IF_ERROR(sgemm(true, false, mg * taps, in_size, cg, 1.f, wg, mg * taps, xg, in_size, 0.f, col.data(),
                                  in_size)
                                .with_context(node.describe()));
      col2im(g, mg, col.data(), yg);
      if (b)
        for (int64_t m = 0; m < mg; ++m)
          for (int64_t o = 0; o < out_size; ++o) yg[m * out_size + o] += b[gi * mg + m];
    }
  }
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  const TensorRef& x = ctx.input(0);
  const TensorRef& w = ctx.input(1);
  const bool has_b = ctx.has_input(2);
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype != x.dtype) return ctx.error("input types differ");
  SRT_ASSIGN_OR_RETURN(ConvTransposeGeom g,
                       conv_transpose_geom(ctx.node(), x.dims, w.dims, has_b ? &ctx.input(2).dims : nullptr));
  if (ctx.output(0).dims != g.y())
    return ctx.error("output has shape " + dims_to_string(ctx.output(0).dims) + ", expected " + dims_to_string(g.y()));
  if (ctx.output(0).numel() == 0) return ok_status();
  return dispatch<kFloats>(x.dtype, ctx.node().describe(), [&]<typename T>() -> Status {
    FloatView<T> fx(x.as<T>(), x.numel()), fw(w.as<T>(), w.numel());
    FloatView<T> fb(has_b ? ctx.input(2).as<T>() : nullptr, has_b ? ctx.input(2).numel() : 0);
    FloatOut<T> fy(ctx.output(0).as<T>(), ctx.output(0).numel());
    SRT_RETURN_IF_ERROR(conv_transpose_f32(ctx.node(), g, fx.get(), fw.get(), has_b ? fb.get() : nullptr, fy.get()));
    fy.flush();
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(ConvTranspose, {.op_type = "ConvTranspose", .infer = infer, .cpu = cpu,
                                     .verify = verify, .cpu_dtypes = dtypes(kFloats),
                                     .streamable_inputs = {1, 2}});

}  // namespace streamrt::ops

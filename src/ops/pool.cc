// MaxPool (with optional Indices output and storage_order) and AveragePool
// (count_include_pad): 1-D, 2-D, 3-D, with strides, pads, dilations, ceil_mode, auto_pad.
#include <limits>

#include "ops/window.h"

namespace streamrt::ops {
namespace {

bool is_max(const ir::Node& node) { return node.op_type == "MaxPool"; }

// Shape of Y for X dims `x` (rank checked against kernel_shape); -1 where unknown.
Result<Dims> pool_output(const ir::Node& node, const Window& w, const Dims& x,
                         std::vector<int64_t>* pads) {
  if (x.size() != w.rank() + 2)
    return node.error(StatusCode::kInvalidModel, "X has shape " + dims_to_string(x) + " but kernel_shape has " +
                                                     std::to_string(w.rank()) + " values");
  SRT_ASSIGN_OR_RETURN(Dims spatial, window_output(node, w, Dims(x.begin() + 2, x.end()), pads));
  Dims y = {x[0], x[1]};
  y.insert(y.end(), spatial.begin(), spatial.end());
  return y;
}

Result<Window> read_pool_window(const ir::Node& node) {
  if (!node.has_attr("kernel_shape"))
    return node.error(StatusCode::kInvalidModel, "missing attribute kernel_shape");
  SRT_ASSIGN_OR_RETURN(auto ks, node.attr_ints("kernel_shape"));
  if (ks.empty()) return node.error(StatusCode::kInvalidModel, "kernel_shape is empty");
  return read_window(node, ks.size());
}

Status infer(InferContext& ctx) {
  const bool max = is_max(ctx.node());
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, max ? kNumeric : kFloats));
  SRT_ASSIGN_OR_RETURN(Window w, read_pool_window(ctx.node()));
  SRT_ASSIGN_OR_RETURN(int64_t order, ctx.node().attr_int("storage_order", 0));
  if (order != 0 && order != 1)
    return ctx.error("storage_order " + std::to_string(order) + " must be 0 or 1");
  Dims y(w.rank() + 2, -1);
  if (ctx.input(0).has_shape) {
    SRT_ASSIGN_OR_RETURN(y, pool_output(ctx.node(), w, ctx.input_dims(0), nullptr));
  }
  ctx.set_output(0, ctx.input_dtype(0), y);
  if (max && ctx.num_outputs() > 1) ctx.set_output(1, DataType::kInt64, y);
  return ok_status();
}

// Input coordinates each window along one axis covers (inside X), and how many of its taps
// lie inside the padded extent [-pad_begin, in + pad_end) (AveragePool's count_include_pad).
struct AxisTaps {
  std::vector<std::vector<int64_t>> coords;  // per output index
  std::vector<int64_t> padded;               // per output index
};

AxisTaps axis_taps(const Window& w, const std::vector<int64_t>& pads, size_t d, int64_t in, int64_t out) {
  AxisTaps t;
  t.coords.resize(static_cast<size_t>(out));
  t.padded.resize(static_cast<size_t>(out));
  const int64_t pb = pads[d], pe = pads[w.rank() + d];
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t k = 0; k < w.kernel[d]; ++k) {
      const int64_t ip = o * w.strides[d] - pb + k * w.dilations[d];
      if (ip >= 0 && ip < in) t.coords[static_cast<size_t>(o)].push_back(ip);
      if (ip >= -pb && ip < in + pe) ++t.padded[static_cast<size_t>(o)];
    }
  }
  return t;
}

struct PoolPlan {
  Dims in, out;  // spatial
  std::vector<AxisTaps> taps;
  int64_t planes = 0;  // N * C
};

// Calls f(y_index_within_plane, window_visitor) for each output position, where
// window_visitor(g) calls g(x_offset_within_plane) for each covered input element and
// padded_count() gives the count_include_pad divisor.
template <typename F>
void for_each_window(const PoolPlan& p, F&& f) {
  const size_t r = p.in.size();
  std::vector<int64_t> o(r, 0);
  const int64_t out_size = dims_numel(p.out);
  for (int64_t yi = 0; yi < out_size; ++yi) {
    int64_t padded = 1;
    for (size_t d = 0; d < r; ++d) padded *= p.taps[d].padded[static_cast<size_t>(o[d])];
    auto visit = [&](auto&& g) {
      auto rec = [&](auto& self, size_t d, int64_t base) -> void {
        for (int64_t ip : p.taps[d].coords[static_cast<size_t>(o[d])]) {
          if (d + 1 == r) g(base * p.in[d] + ip);
          else self(self, d + 1, base * p.in[d] + ip);
        }
      };
      rec(rec, 0, 0);
    };
    f(yi, visit, padded);
    for (size_t d = r; d-- > 0;) {
      if (++o[d] < p.out[d]) break;
      o[d] = 0;
    }
  }
}

// Row-major spatial offset -> column-major (MaxPool storage_order=1).
int64_t to_column_major(int64_t off, const Dims& in) {
  int64_t col = 0, scale = 1;
  std::vector<int64_t> c(in.size());
  for (size_t d = in.size(); d-- > 0;) {
    c[d] = off % in[d];
    off /= in[d];
  }
  for (size_t d = 0; d < in.size(); ++d) {
    col += c[d] * scale;
    scale *= in[d];
  }
  return col;
}

template <typename T>
void max_pool(const PoolPlan& p, const T* x, T* y, int64_t* idx, bool column_major) {
  using C = compute_t<T>;
  const int64_t in_size = dims_numel(p.in), out_size = dims_numel(p.out);
  for (int64_t plane = 0; plane < p.planes; ++plane) {
    const T* xp = x + plane * in_size;
    for_each_window(p, [&](int64_t yi, auto&& visit, int64_t) {
      C best = std::numeric_limits<C>::lowest();
      int64_t arg = -1;
      visit([&](int64_t off) {
        C v = load(xp[off]);
        if (arg < 0 || v > best) best = v, arg = off;
      });
      y[plane * out_size + yi] = store<T>(best);
      if (idx) {
        const int64_t a = arg < 0 ? 0 : column_major ? to_column_major(arg, p.in) : arg;
        idx[plane * out_size + yi] = plane * in_size + a;
      }
    });
  }
}

template <typename T>
void average_pool(const PoolPlan& p, const T* x, T* y, bool count_include_pad) {
  const int64_t in_size = dims_numel(p.in), out_size = dims_numel(p.out);
  for (int64_t plane = 0; plane < p.planes; ++plane) {
    const T* xp = x + plane * in_size;
    for_each_window(p, [&](int64_t yi, auto&& visit, int64_t padded) {
      float sum = 0.f;
      int64_t n = 0;
      visit([&](int64_t off) {
        sum += load(xp[off]);
        ++n;
      });
      const int64_t div = count_include_pad ? padded : n;
      y[plane * out_size + yi] = store<T>(div > 0 ? sum / static_cast<float>(div) : 0.f);
    });
  }
}

// Plan load: window attributes bounded, so the shape rule's arithmetic stays exact.
// Pads no wider than the input plus the kernel.
Status verify(const InferContext& ctx) {
  const ir::Node& node = ctx.node();
  SRT_RETURN_IF_ERROR(verify_window_attrs(node));
  if (!ctx.has_input(0) || !ctx.input(0).has_shape || !node.has_attr("kernel_shape")) return ok_status();
  SRT_ASSIGN_OR_RETURN(auto ks, node.attr_ints("kernel_shape"));
  const Dims& x = ctx.input_dims(0);
  if (x.size() != ks.size() + 2) return ok_status();  // the shape rule's error
  return verify_window_pads(node, Dims(x.begin() + 2, x.end()), ks);
}

Status cpu(KernelContext& ctx) {
  const ir::Node& node = ctx.node();
  const TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(Window w, read_pool_window(node));
  std::vector<int64_t> pads;
  SRT_ASSIGN_OR_RETURN(Dims yd, pool_output(node, w, x.dims, &pads));
  if (ctx.output(0).dims != yd)
    return ctx.error("output has shape " + dims_to_string(ctx.output(0).dims) + ", expected " +
                     dims_to_string(yd));
  PoolPlan p;
  p.in.assign(x.dims.begin() + 2, x.dims.end());
  p.out.assign(yd.begin() + 2, yd.end());
  p.planes = x.dims[0] * x.dims[1];
  for (size_t d = 0; d < w.rank(); ++d) p.taps.push_back(axis_taps(w, pads, d, p.in[d], p.out[d]));
  if (is_max(node)) {
    SRT_ASSIGN_OR_RETURN(int64_t order, node.attr_int("storage_order", 0));
    int64_t* idx = ctx.has_output(1) ? ctx.output(1).as<int64_t>() : nullptr;
    if (idx && (ctx.output(1).dtype != DataType::kInt64 || ctx.output(1).dims != yd))
      return ctx.error("Indices output must be int64 of shape " + dims_to_string(yd));
    return dispatch<kNumeric>(x.dtype, node.describe(), [&]<typename T>() {
      max_pool<T>(p, x.as<T>(), ctx.output(0).as<T>(), idx, order == 1);
      return ok_status();
    });
  }
  SRT_ASSIGN_OR_RETURN(int64_t include_pad, node.attr_int("count_include_pad", 0));
  return dispatch<kFloats>(x.dtype, node.describe(), [&]<typename T>() {
    average_pool<T>(p, x.as<T>(), ctx.output(0).as<T>(), include_pad != 0);
    return ok_status();
  });
}

}  // namespace

STREAMRT_REGISTER_OP(MaxPool, {.op_type = "MaxPool", .infer = infer, .cpu = cpu, .verify = verify,
                               .cpu_dtypes = dtypes(kNumeric)});
STREAMRT_REGISTER_OP(AveragePool, {.op_type = "AveragePool", .infer = infer, .cpu = cpu, .verify = verify,
                                   .cpu_dtypes = dtypes(kFloats)});

}  // namespace streamrt::ops

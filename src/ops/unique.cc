// Unique (opset 11): the distinct elements of X (or, with `axis`, its distinct slices along that
// axis), sorted ascending (lexicographically for slices) when `sorted` = 1 (the default), else in
// order of first occurrence. Outputs: Y; the index of each Y entry's first occurrence in X;
// X's inverse indices into Y; Y's counts (the last three int64, optional).
// How many entries Y has depends on X's contents, so X is a shape input (as NonZero's input):
// sized per run from its host contents (the CUDA engine runs this kernel on the host). Floats
// compare by value (-0.0 equals 0.0; each NaN is distinct, as numpy's sort-based unique leaves it).
#include <algorithm>
#include <cstring>
#include <numeric>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {
namespace {

struct Layout {
  int64_t outer = 1, n = 1, inner = 1;  // X as [outer, n, inner]: n slices along the axis
  size_t axis = 0;
  bool has_axis = false;
};

Result<Layout> layout(const ir::Node& node, const Dims& dims) {
  Layout l;
  if (!node.has_attr("axis")) {
    l.n = dims_numel(dims);
    return l;
  }
  SRT_ASSIGN_OR_RETURN(int64_t a, node.attr_int("axis"));
  SRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, a, static_cast<int64_t>(dims.size())));
  l.axis = static_cast<size_t>(axis), l.has_axis = true;
  for (size_t d = 0; d < dims.size(); ++d) (d < l.axis ? l.outer : d == l.axis ? l.n : l.inner) *= dims[d];
  return l;
}

// Y's slice order, and for each slice of X the Y entry it maps to.
struct Groups {
  std::vector<int64_t> first;    // per Y entry: the X slice of its first occurrence
  std::vector<int64_t> inverse;  // per X slice
  std::vector<int64_t> counts;   // per Y entry
};

template <typename T>
Groups group(const T* x, const Layout& l, bool sorted) {
  auto at = [&](int64_t slice, int64_t o, int64_t i) { return load(x[(o * l.n + slice) * l.inner + i]); };
  // Three-way comparison of slices a and b: element by element, outer-major.
  auto cmp = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t i = 0; i < l.inner; ++i) {
        const auto va = at(a, o, i), vb = at(b, o, i);
        if (va < vb) return -1;
        if (vb < va) return 1;
        if (!(va == vb)) return a < b ? -1 : 1;  // NaN: never equal to anything
      }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(l.n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return cmp(a, b) < 0; });
  Groups g;
  g.inverse.assign(static_cast<size_t>(l.n), 0);
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || cmp(order[k - 1], order[k]) != 0) {
      g.first.push_back(order[k]);  // stable: the earliest equal slice comes first
      g.counts.push_back(0);
    }
    g.inverse[static_cast<size_t>(order[k])] = static_cast<int64_t>(g.first.size()) - 1;
    ++g.counts.back();
  }
  if (!sorted) {  // renumber the groups by first occurrence
    std::vector<int64_t> by_first(g.first.size());
    std::iota(by_first.begin(), by_first.end(), 0);
    std::sort(by_first.begin(), by_first.end(), [&](int64_t a, int64_t b) { return g.first[a] < g.first[b]; });
    std::vector<int64_t> rank(by_first.size());
    for (size_t r = 0; r < by_first.size(); ++r) rank[static_cast<size_t>(by_first[r])] = static_cast<int64_t>(r);
    Groups u;
    for (int64_t gi : by_first) u.first.push_back(g.first[gi]), u.counts.push_back(g.counts[gi]);
    for (int64_t v : g.inverse) u.inverse.push_back(rank[static_cast<size_t>(v)]);
    g = std::move(u);
  }
  return g;
}

Result<Groups> group_any(const ir::Node& node, DataType t, const void* x, const Layout& l) {
  SRT_ASSIGN_OR_RETURN(int64_t sorted, node.attr_int("sorted", 1));
  Groups g;
  SRT_RETURN_IF_ERROR(dispatch<kAll>(t, node.describe(), [&]<typename T>() {
    g = group(static_cast<const T*>(x), l, sorted != 0);
    return ok_status();
  }));
  return g;
}

void set_outputs(InferContext& ctx, const Dims& x, const Layout& l, int64_t count) {
  Dims y = l.has_axis ? x : Dims{count};
  if (l.has_axis) y[l.axis] = count;
  ctx.set_output(0, ctx.input_dtype(0), y);
  ctx.set_output(1, DataType::kInt64, {count});
  ctx.set_output(2, DataType::kInt64, {l.n >= 0 ? l.n : kDynamicDim});
  ctx.set_output(3, DataType::kInt64, {count});
}

Status infer(InferContext& ctx) {
  SRT_RETURN_IF_ERROR(require_input(ctx, 0, kAll));
  const TensorInfo& x = ctx.input(0);
  if (!x.has_shape) {
    for (size_t i = 0; i < 4; ++i) ctx.set_output_unranked(i, i == 0 ? x.dtype : DataType::kInt64);
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(Layout l, layout(ctx.node(), x.dims));
  if (!dims_static(x.dims)) l.n = l.has_axis ? x.dims[l.axis] : kDynamicDim;
  int64_t count = kDynamicDim;
  if (const Tensor* v = ctx.input_value(0)) {
    SRT_ASSIGN_OR_RETURN(Groups g, group_any(ctx.node(), v->dtype(), v->data(), l));
    count = static_cast<int64_t>(g.first.size());
  }
  set_outputs(ctx, x.dims, l, count);
  return ok_status();
}

void write_int64s(const KernelContext& ctx, size_t i, const std::vector<int64_t>& v) {
  if (ctx.has_output(i) && !v.empty()) std::memcpy(ctx.output(i).data, v.data(), v.size() * sizeof(int64_t));
}

Status cpu(KernelContext& ctx) {
  SRT_RETURN_IF_ERROR(require_bound(ctx, 1));
  const TensorRef& x = ctx.input(0);
  SRT_ASSIGN_OR_RETURN(Layout l, layout(ctx.node(), x.dims));
  SRT_ASSIGN_OR_RETURN(Groups g, group_any(ctx.node(), x.dtype, x.data, l));
  const int64_t u = static_cast<int64_t>(g.first.size());
  Dims y = l.has_axis ? x.dims : Dims{u};
  if (l.has_axis) y[l.axis] = u;
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, x.dtype, y));
  for (size_t i : {size_t{1}, size_t{3}})
    if (ctx.has_output(i)) SRT_RETURN_IF_ERROR(check_output(ctx, i, DataType::kInt64, {u}));
  if (ctx.has_output(2)) SRT_RETURN_IF_ERROR(check_output(ctx, 2, DataType::kInt64, {l.n}));
  const size_t row = static_cast<size_t>(l.inner) * dtype_size(x.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(ctx.output(0).data);
  if (row > 0)
    for (int64_t o = 0; o < l.outer; ++o)
      for (int64_t s : g.first) {
        std::memcpy(dst, src + static_cast<size_t>(o * l.n + s) * row, row);
        dst += row;
      }
  write_int64s(ctx, 1, g.first);
  write_int64s(ctx, 2, g.inverse);
  write_int64s(ctx, 3, g.counts);
  return ok_status();
}

}  // namespace

STREAMRT_REGISTER_OP(Unique, {.op_type = "Unique", .min_opset = 11, .infer = infer, .cpu = cpu, .shape_inputs = {0},
                              .cpu_dtypes = kAnyDType});

}  // namespace streamrt::ops

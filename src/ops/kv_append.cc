// KvAppend (see kv_append.h): shape rule, plan-load check, shared layout and the CPU kernel.
#include "ops/kv_append.h"

#include <cstring>

#include "ops/common.h"
#include "ops/data_movement.h"

namespace streamrt::ops {

namespace {

struct Attrs {
  int64_t axis = 0, capacity = 0;
};

Result<Attrs> read_attrs(const ir::Node& node) {
  Attrs a;
  SRT_ASSIGN_OR_RETURN(a.axis, node.attr_int("axis"));
  SRT_ASSIGN_OR_RETURN(a.capacity, node.attr_int("capacity"));
  if (a.capacity < 1 || a.capacity > kMaxAttrExtent)
    return node.error(StatusCode::kInvalidModel, "capacity must be in [1, 2^30], got " + std::to_string(a.capacity));
  if (a.axis < 0) return node.error(StatusCode::kInvalidModel, "axis must be >= 0, got " + std::to_string(a.axis));
  return a;
}

Status check_axis(const ir::Node& node, const Attrs& a, size_t rank) {
  if (a.axis >= static_cast<int64_t>(rank))
    return node.error(StatusCode::kInvalidModel, "axis " + std::to_string(a.axis) + " is outside the rank " +
                                                     std::to_string(rank) + " of past");
  return ok_status();
}

Status infer(InferContext& ctx) {
  if (ctx.num_inputs() != 2 || !ctx.has_input(0) || !ctx.has_input(1)) return ctx.error("takes past and new");
  SRT_ASSIGN_OR_RETURN(Attrs a, read_attrs(ctx.node()));
  const DataType t = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != t)
    return ctx.error(std::string("past is ") + dtype_name(t) + ", new " + dtype_name(ctx.input_dtype(1)));
  if (!ctx.input(0).has_shape || !ctx.input(1).has_shape) {
    ctx.set_output_unranked(0, t);
    return ok_status();
  }
  const Dims &past = ctx.input_dims(0), &fresh = ctx.input_dims(1);
  SRT_RETURN_IF_ERROR(check_axis(ctx.node(), a, past.size()));
  if (fresh.size() != past.size())
    return ctx.error("past " + dims_to_string(past) + " and new " + dims_to_string(fresh) + " differ in rank");
  Dims out = past;
  for (size_t k = 0; k < past.size(); ++k) {
    if (static_cast<int64_t>(k) == a.axis) {
      out[k] = past[k] < 0 || fresh[k] < 0 ? kDynamicDim : past[k] + fresh[k];  // both <= 2^30 when known
      continue;
    }
    auto m = merge_dim(past[k], fresh[k]);
    if (!m) return ctx.error("past " + dims_to_string(past) + " and new " + dims_to_string(fresh) + " differ off axis " +
                             std::to_string(a.axis));
    out[k] = *m;
  }
  if (out[a.axis] > a.capacity)
    return ctx.error("past and new hold " + std::to_string(out[a.axis]) + " positions, beyond the capacity " +
                     std::to_string(a.capacity));
  ctx.set_output(0, t, std::move(out));
  return ok_status();
}

Status verify(const InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(Attrs a, read_attrs(ctx.node()));
  if (ctx.num_inputs() > 0 && ctx.input(0).has_shape) return check_axis(ctx.node(), a, ctx.input_dims(0).size());
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(KvAppendLayout l, kv_append_layout(ctx));
  auto* out = static_cast<char*>(ctx.output(0).data);
  const auto* past = static_cast<const char*>(ctx.input(0).data);
  const auto* fresh = static_cast<const char*>(ctx.input(1).data);
  for (int64_t o = 0; o < l.outer; ++o) {
    char* block = out + o * l.pitch;
    if (!l.in_place && l.past_bytes) std::memmove(block, past + o * l.pitch, static_cast<size_t>(l.past_bytes));
    if (l.new_bytes) std::memmove(block + l.past_bytes, fresh + o * l.new_bytes, static_cast<size_t>(l.new_bytes));
  }
  return ok_status();
}

// past and present are stored with the capacity along the axis; new is dense.
std::vector<CapacityLayout> capacity_layouts(const ir::Node& node) {
  auto a = read_attrs(node);
  if (!a.ok()) return {};
  return {{false, 0, a->axis, a->capacity}, {true, 0, a->axis, a->capacity}};
}

}  // namespace

Result<KvAppendLayout> kv_append_layout(const KernelContext& ctx) {
  if (ctx.num_inputs() != 2 || !ctx.has_input(0) || !ctx.has_input(1) || !ctx.has_output(0))
    return ctx.error("takes past and new and makes present");
  SRT_ASSIGN_OR_RETURN(Attrs a, read_attrs(ctx.node()));
  const TensorRef &past = ctx.input(0), &fresh = ctx.input(1), &out = ctx.output(0);
  if (fresh.dtype != past.dtype) return ctx.error("past and new differ in type");
  SRT_RETURN_IF_ERROR(check_axis(ctx.node(), a, past.dims.size()));
  Dims want = past.dims;
  bool fits = fresh.dims.size() == past.dims.size();
  for (size_t k = 0; fits && k < want.size(); ++k)
    if (static_cast<int64_t>(k) == a.axis) want[k] += fresh.dims[k];
    else fits = fresh.dims[k] == past.dims[k];
  if (!fits) return ctx.error("past " + dims_to_string(past.dims) + " and new " + dims_to_string(fresh.dims) + " do not fit");
  SRT_RETURN_IF_ERROR(check_output(ctx, 0, past.dtype, want));
  if (want[a.axis] > a.capacity)
    return ctx.error("present of " + std::to_string(want[a.axis]) + " positions exceeds the capacity " +
                     std::to_string(a.capacity));
  const auto axis = static_cast<size_t>(a.axis);
  const auto inner = dims_product(past.dims, axis + 1, past.dims.size()) * static_cast<int64_t>(dtype_size(past.dtype));
  KvAppendLayout l;
  l.outer = dims_product(past.dims, 0, axis);
  l.pitch = a.capacity * inner;
  l.past_bytes = past.dims[axis] * inner;
  l.new_bytes = fresh.dims[axis] * inner;
  l.in_place = out.data == past.data;
  return l;
}

STREAMRT_REGISTER_OP(KvAppend, {.op_type = "KvAppend", .infer = infer, .cpu = cpu, .verify = verify,
                                .cpu_dtypes = dtypes(kAll), .capacity_layouts = capacity_layouts});

}  // namespace streamrt::ops

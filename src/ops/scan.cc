// Scan (opset 8, 9, 11, 16, 19, 21). Node inputs [state x N, scan x M, captures...] (opset 8:
// sequence_lens first), body inputs [state x N, scan slice x M, captures...], body outputs
// [state x N, scan output slice x K], node outputs [final state x N, scan output x K].
// Opset 9+: scan input j is sliced along scan_input_axes[j] (default 0; negative from opset 11),
// last to first where scan_input_directions[j] is 1; scan output k stacks its slices along
// scan_output_axes[k], in reverse order where scan_output_directions[k] is 1.
// Opset 8: every state and scan input has a leading batch axis, each batch entry scanned on its
// own along axis 1 (`directions` per scan input); sequence_lens, when given, must be the full
// length for every entry (shorter sequences are refused).
#include "ops/common.h"
#include "ops/subgraph_exec.h"

namespace streamrt::ops {
namespace {

struct Layout {
  const ir::Graph* body = nullptr;
  size_t off = 0;       // 1 for opset 8's sequence_lens
  size_t n = 0, m = 0, k = 0;
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

Status check_list(const ir::Node& node, const char* attr, const std::vector<int64_t>& v, size_t want, bool dirs) {
  if (v.size() != want)
    return node.error(StatusCode::kInvalidModel, std::string("attribute '") + attr + "' has " +
                                                     std::to_string(v.size()) + " entries, needs " + std::to_string(want));
  for (int64_t x : v)
    if (dirs ? (x != 0 && x != 1) : (x < -kMaxAttrExtent || x > kMaxAttrExtent))
      return node.error(StatusCode::kInvalidModel, std::string("attribute '") + attr + "' holds " + std::to_string(x) +
                                                       (dirs ? " (a direction is 0 or 1)" : ""));
  return ok_status();
}

Result<Layout> layout(const ir::Node& node) {
  Layout L;
  SRT_ASSIGN_OR_RETURN(L.body, node.attr_graph("body"));
  SRT_ASSIGN_OR_RETURN(int64_t m, node.attr_int("num_scan_inputs"));
  L.off = node.opset < 9 ? 1 : 0;
  const size_t caps = static_cast<size_t>(std::max(0, L.body->num_captures));
  if (m < 1 || static_cast<uint64_t>(m) + L.off + caps > node.inputs.size())
    return node.error(StatusCode::kInvalidModel, "num_scan_inputs is " + std::to_string(m) + " for " +
                                                     std::to_string(node.inputs.size()) + " inputs");
  L.m = static_cast<size_t>(m);
  L.n = node.inputs.size() - L.off - L.m - caps;
  if (node.outputs.size() < L.n)
    return node.error(StatusCode::kInvalidModel, "has fewer outputs than its " + std::to_string(L.n) + " states");
  L.k = node.outputs.size() - L.n;
  SRT_RETURN_IF_ERROR(check_body(node, *L.body, "body", L.off + L.n + L.m, L.n + L.m, L.n + L.k));
  const std::vector<int64_t> in0(L.m, 0), out0(L.k, 0);
  if (node.opset < 9) {
    L.in_axes = in0;
    L.out_axes = L.out_dirs = out0;
    SRT_ASSIGN_OR_RETURN(L.in_dirs, node.attr_ints("directions", in0));
  } else {
    SRT_ASSIGN_OR_RETURN(L.in_axes, node.attr_ints("scan_input_axes", in0));
    SRT_ASSIGN_OR_RETURN(L.in_dirs, node.attr_ints("scan_input_directions", in0));
    SRT_ASSIGN_OR_RETURN(L.out_axes, node.attr_ints("scan_output_axes", out0));
    SRT_ASSIGN_OR_RETURN(L.out_dirs, node.attr_ints("scan_output_directions", out0));
  }
  SRT_RETURN_IF_ERROR(check_list(node, "scan_input_axes", L.in_axes, L.m, false));
  SRT_RETURN_IF_ERROR(check_list(node, "scan_input_directions", L.in_dirs, L.m, true));
  SRT_RETURN_IF_ERROR(check_list(node, "scan_output_axes", L.out_axes, L.k, false));
  SRT_RETURN_IF_ERROR(check_list(node, "scan_output_directions", L.out_dirs, L.k, true));
  return L;
}

// One unbatched scan (opset 9 form): `in` holds [state..., scan..., captures...].
Result<std::vector<Tensor>> scan_once(const ir::Node& node, const Layout& L, std::vector<Tensor> in) {
  int64_t seq = -1;
  std::vector<int64_t> axes(L.m);
  for (size_t j = 0; j < L.m; ++j) {
    const Tensor& x = in[L.n + j];
    SRT_ASSIGN_OR_RETURN(axes[j], normalize_axis(node, L.in_axes[j], static_cast<int64_t>(x.dims().size())));
    const int64_t len = x.dims()[axes[j]];
    if (seq >= 0 && len != seq)
      return node.error(StatusCode::kInvalidArgument, "scan input " + std::to_string(j) + " has " + std::to_string(len) +
                                                          " steps, scan input 0 has " + std::to_string(seq));
    seq = len;
  }
  const std::vector<Tensor> scans(in.begin() + L.n, in.begin() + L.n + L.m);
  std::vector<TensorInfo> infos(in.size());  // for the dims of empty scan outputs
  for (size_t i = 0; i < in.size(); ++i) infos[i] = TensorInfo{in[i].dtype(), in[i].dims(), true, nullptr};
  std::vector<std::vector<Tensor>> outs(L.k);
  for (int64_t t = 0; t < seq; ++t) {
    for (size_t j = 0; j < L.m; ++j) {
      SRT_ASSIGN_OR_RETURN(in[L.n + j], take_slice(scans[j], axes[j], L.in_dirs[j] ? seq - 1 - t : t));
      if (t == 0) infos[L.n + j] = TensorInfo{in[L.n + j].dtype(), in[L.n + j].dims(), true, nullptr};
    }
    auto r = run_body(*L.body, in);
    if (!r.ok()) return r.status().with_context(node.describe() + " step " + std::to_string(t));
    for (size_t s = 0; s < L.n; ++s) {
      if ((*r)[s].dtype() != in[s].dtype())
        return node.error(StatusCode::kInvalidArgument, "state " + std::to_string(s) + " turned from " +
                                                            dtype_name(in[s].dtype()) + " into " + dtype_name((*r)[s].dtype()));
      in[s] = std::move((*r)[s]);
    }
    for (size_t k = 0; k < L.k; ++k) outs[k].push_back(std::move((*r)[L.n + k]));
  }
  std::vector<Tensor> result(in.begin(), in.begin() + L.n);
  std::vector<TensorInfo> empty;
  if (seq == 0 && L.k > 0) {
    for (size_t j = 0; j < L.m; ++j) {
      Dims d = scans[j].dims();
      d.erase(d.begin() + axes[j]);
      infos[L.n + j] = TensorInfo{scans[j].dtype(), d, true, nullptr};
    }
    for (size_t i = L.n + L.m; i < in.size(); ++i) infos[i].value = &in[i];
    SRT_ASSIGN_OR_RETURN(empty, infer_body(node, *L.body, infos));
  }
  for (size_t k = 0; k < L.k; ++k) {
    if (L.out_dirs[k]) std::reverse(outs[k].begin(), outs[k].end());
    DataType dtype = empty.empty() ? DataType::kUndefined : empty[L.n + k].dtype;
    Dims elem = empty.empty() ? Dims{} : empty[L.n + k].dims;
    for (int64_t& x : elem) x = std::max<int64_t>(x, 0);
    const int64_t rank = static_cast<int64_t>(outs[k].empty() ? elem.size() : outs[k][0].dims().size());
    SRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(node, L.out_axes[k], rank + 1));
    SRT_ASSIGN_OR_RETURN(Tensor y, stack_slices(outs[k], axis, dtype, elem,
                                                node.describe() + " scan output " + std::to_string(k)));
    result.push_back(std::move(y));
  }
  return result;
}

// Opset 8: each batch entry scanned on its own, results stacked along a new axis 0.
Result<std::vector<Tensor>> scan_batched(const ir::Node& node, const Layout& L, const std::vector<Tensor>& inputs) {
  const int64_t batch = inputs[1].dims().empty() ? 0 : inputs[1].dims()[0];
  for (size_t i = 1; i < 1 + L.n + L.m; ++i)
    if (inputs[i].dims().empty() || inputs[i].dims()[0] != batch || (i > L.n && inputs[i].dims().size() < 2))
      return node.error(StatusCode::kInvalidArgument, "input " + std::to_string(i) + " " + dims_to_string(inputs[i].dims()) +
                                                          " lacks the batch (and, for a scan input, sequence) axis of " +
                                                          std::to_string(batch) + " entries");
  if (batch == 0) return node.error(StatusCode::kUnsupported, "an empty batch is not supported");
  if (!inputs[0].empty()) {
    const int64_t seq = inputs[1 + L.n].dims()[1];
    if (inputs[0].dtype() != DataType::kInt64 || inputs[0].numel() != batch)
      return node.error(StatusCode::kInvalidArgument, "sequence_lens must be int64 [" + std::to_string(batch) + "]");
    for (int64_t b = 0; b < batch; ++b)
      if (inputs[0].data_as<int64_t>()[b] != seq)
        return node.error(StatusCode::kUnsupported, "sequence_lens holds " + std::to_string(inputs[0].data_as<int64_t>()[b]) +
                                                        " for a sequence of " + std::to_string(seq) +
                                                        " steps; streamrt scans whole sequences only");
  }
  std::vector<std::vector<Tensor>> per_out(L.n + L.k);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<Tensor> in(inputs.begin() + 1, inputs.end());
    for (size_t i = 0; i < L.n + L.m; ++i) {
      SRT_ASSIGN_OR_RETURN(in[i], take_slice(in[i], 0, b));
    }
    SRT_ASSIGN_OR_RETURN(auto outs, scan_once(node, L, std::move(in)));
    for (size_t k = 0; k < outs.size(); ++k) per_out[k].push_back(std::move(outs[k]));
  }
  std::vector<Tensor> result;
  for (size_t k = 0; k < per_out.size(); ++k) {
    SRT_ASSIGN_OR_RETURN(Tensor y, stack_slices(per_out[k], 0, DataType::kUndefined, {},
                                                node.describe() + " output " + std::to_string(k)));
    result.push_back(std::move(y));
  }
  return result;
}

Result<std::vector<Tensor>> run(const ir::Node& node, const std::vector<Tensor>& inputs) {
  SRT_ASSIGN_OR_RETURN(Layout L, layout(node));
  if (L.off) return scan_batched(node, L, inputs);
  return scan_once(node, L, inputs);
}

Status verify(const InferContext& ctx) { return layout(ctx.node()).status(); }

// `info` without dim `axis`, contents dropped.
TensorInfo without_axis(TensorInfo info, int64_t axis) {
  info.value = nullptr;
  info.partial = nullptr;
  if (info.has_shape) info.dims.erase(info.dims.begin() + axis);
  return info;
}

Status infer(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(Layout L, layout(ctx.node()));
  SRT_ASSIGN_OR_RETURN(bool ran, infer_by_running(ctx, run));
  if (ran) return ok_status();
  const size_t batch_dims = L.off;  // opset 8: a leading batch axis on every state and scan input
  std::vector<TensorInfo> ins;
  for (size_t i = L.off; i < ctx.num_inputs(); ++i) ins.push_back(ctx.input(i));
  int64_t seq = kDynamicDim;
  for (size_t i = 0; i < L.n + L.m; ++i) {
    if (!ins[i].has_shape) {
      if (i >= L.n || batch_dims) return ctx.unsupported("needs the rank of input " + std::to_string(i + L.off));
      continue;
    }
    const int64_t rank = static_cast<int64_t>(ins[i].dims.size());
    if (rank < static_cast<int64_t>(batch_dims) + (i >= L.n ? 1 : 0))
      return ctx.error("input " + std::to_string(i + L.off) + " " + dims_to_string(ins[i].dims) + " lacks its scan axes");
    for (size_t b = 0; b < batch_dims; ++b) ins[i] = without_axis(ins[i], 0);
    if (i < L.n) {
      ins[i].value = nullptr;
      ins[i].partial = nullptr;
      continue;
    }
    SRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, L.in_axes[i - L.n], rank - static_cast<int64_t>(batch_dims)));
    if (seq == kDynamicDim) seq = ins[i].dims[axis];
    ins[i] = without_axis(ins[i], axis);
  }
  std::vector<TensorInfo> outs;
  for (int round = 0; round < 2; ++round) {
    SRT_ASSIGN_OR_RETURN(outs, infer_body(ctx.node(), *L.body, ins));
    for (size_t s = 0; s < L.n; ++s) {
      if (ins[s].dtype != outs[s].dtype)
        return ctx.error("state " + std::to_string(s) + " is " + dtype_name(ins[s].dtype) + " but the body makes " +
                         dtype_name(outs[s].dtype));
      ins[s] = merge_infos(ins[s], outs[s]);
    }
  }
  const int64_t batch = batch_dims && ctx.input(1).has_shape ? ctx.input_dims(1)[0] : kDynamicDim;
  for (size_t s = 0; s < L.n; ++s) {
    Dims d = ins[s].dims;
    if (batch_dims) d.insert(d.begin(), batch);
    if (ins[s].has_shape) ctx.set_output(s, ins[s].dtype, d);
    else ctx.set_output_unranked(s, ins[s].dtype);
  }
  for (size_t k = 0; k < L.k; ++k) {
    const TensorInfo& o = outs[L.n + k];
    if (!o.has_shape) {
      ctx.set_output_unranked(L.n + k, o.dtype);
      continue;
    }
    SRT_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, L.out_axes[k], static_cast<int64_t>(o.dims.size()) + 1));
    Dims d = o.dims;
    d.insert(d.begin() + axis, seq);
    if (batch_dims) d.insert(d.begin(), batch);
    ctx.set_output(L.n + k, o.dtype, std::move(d));
  }
  return ok_status();
}

Status cpu(KernelContext& ctx) { return run_kernel(ctx, run); }

}  // namespace

STREAMRT_REGISTER_OP(Scan, {.op_type = "Scan", .min_opset = 8, .infer = infer, .cpu = cpu, .verify = verify,
                            .cpu_dtypes = kAnyDType, .dtype_input = -1});

}  // namespace streamrt::ops

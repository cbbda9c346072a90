#include "ops/window.h"

namespace streamrt::ops {
namespace {

Status bad(const ir::Node& node, const std::string& msg) {
  return node.error(StatusCode::kInvalidModel, msg);
}

std::string list_to_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Reads an INTS attribute of `len` values (default `def` repeated) whose entries are >= lo.
Result<std::vector<int64_t>> read_list(const ir::Node& node, const char* name, size_t len,
                                       int64_t def, int64_t lo) {
  SRT_ASSIGN_OR_RETURN(auto v, node.attr_ints(name, std::vector<int64_t>(len, def)));
  if (v.size() != len)
    return bad(node, std::string(name) + " " + list_to_string(v) + " has " +
                         std::to_string(v.size()) + " values, expected " + std::to_string(len));
  for (int64_t x : v)
    if (x < lo)
      return bad(node, std::string(name) + " " + list_to_string(v) + " has a value below " +
                           std::to_string(lo));
  return v;
}

// For a >= 0, b >= 1.
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

Result<Window> read_window(const ir::Node& node, size_t rank,
                           const std::optional<std::vector<int64_t>>& kernel) {
  Window w;
  if (node.has_attr("kernel_shape")) {
    SRT_ASSIGN_OR_RETURN(w.kernel, read_list(node, "kernel_shape", rank, 1, 1));
    if (kernel) {
      for (size_t i = 0; i < rank; ++i)
        if ((*kernel)[i] >= 0 && (*kernel)[i] != w.kernel[i])
          return bad(node, "kernel_shape " + list_to_string(w.kernel) +
                               " does not match the kernel dims of W " + list_to_string(*kernel));
    }
  } else if (kernel) {
    w.kernel = *kernel;
    for (int64_t k : w.kernel)
      if (k < 1 && k != -1)
        return bad(node, "kernel shape " + list_to_string(w.kernel) + " has a value below 1");
  } else {
    return bad(node, "missing attribute kernel_shape");
  }
  SRT_ASSIGN_OR_RETURN(w.strides, read_list(node, "strides", rank, 1, 1));
  SRT_ASSIGN_OR_RETURN(w.dilations, read_list(node, "dilations", rank, 1, 1));
  SRT_ASSIGN_OR_RETURN(w.pads, read_list(node, "pads", 2 * rank, 0, 0));
  SRT_ASSIGN_OR_RETURN(int64_t ceil_mode, node.attr_int("ceil_mode", 0));
  w.ceil_mode = ceil_mode != 0;
  SRT_ASSIGN_OR_RETURN(std::string ap, node.attr_string("auto_pad", "NOTSET"));
  if (ap == "NOTSET" || ap.empty()) w.auto_pad = AutoPad::kNotSet;
  else if (ap == "SAME_UPPER") w.auto_pad = AutoPad::kSameUpper;
  else if (ap == "SAME_LOWER") w.auto_pad = AutoPad::kSameLower;
  else if (ap == "VALID") w.auto_pad = AutoPad::kValid;
  else return bad(node, "unknown auto_pad '" + ap + "'");
  return w;
}

Status verify_window_attrs(const ir::Node& node) {
  for (const char* attr : {"kernel_shape", "strides", "dilations"})
    SRT_RETURN_IF_ERROR(verify_attr_range(node, attr, 1, kMaxAttrExtent));
  return verify_attr_range(node, "pads", 0, kMaxAttrExtent);
}

Status verify_window_pads(const ir::Node& node, const Dims& in, const Dims& kernel) {
  const size_t rank = in.size();
  if (!node.has_attr("pads") || kernel.size() != rank) return ok_status();
  SRT_ASSIGN_OR_RETURN(auto pads, node.attr_ints("pads"));
  SRT_ASSIGN_OR_RETURN(auto dil, node.attr_ints("dilations", std::vector<int64_t>(rank, 1)));
  if (pads.size() != 2 * rank || dil.size() != rank) return ok_status();  // the shape rule's error
  for (size_t i = 0; i < pads.size(); ++i) {
    const size_t a = i % rank;
    // Bounded operands only (a kernel from a weight's dims may be anything).
    if (in[a] < 0 || in[a] > kMaxAttrExtent || kernel[a] < 1 || kernel[a] > kMaxAttrExtent) continue;
    const int64_t limit = in[a] + (kernel[a] - 1) * dil[a] + 1;
    if (pads[i] > limit)
      return bad(node, "attribute 'pads'[" + std::to_string(i) + "] is " + std::to_string(pads[i]) +
                           ", more than spatial axis " + std::to_string(a) + "'s input size " +
                           std::to_string(in[a]) + " plus its dilated kernel (" + std::to_string(limit) + ")");
  }
  return ok_status();
}

Result<Dims> window_output(const ir::Node& node, const Window& w, const Dims& in,
                           std::vector<int64_t>* pads_out) {
  const size_t rank = w.rank();
  if (in.size() != rank)
    return bad(node, "input has " + std::to_string(in.size()) + " spatial dims, window has " +
                         std::to_string(rank));
  Dims out(rank, -1);
  std::vector<int64_t> pads(2 * rank, 0);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t s = w.strides[i];
    if (w.auto_pad == AutoPad::kSameUpper || w.auto_pad == AutoPad::kSameLower) {
      // SAME: out = ceil(in / stride) whatever the kernel; pads split to make it so, the odd
      // one at the end (UPPER) or at the beginning (LOWER).
      if (in[i] < 0) continue;
      out[i] = ceil_div(in[i], s);
      if (w.kernel[i] < 0) continue;
      const int64_t ek = (w.kernel[i] - 1) * w.dilations[i] + 1;
      const int64_t total = std::max<int64_t>(0, (out[i] - 1) * s + ek - in[i]);
      const int64_t small = total / 2, large = total - small;
      pads[i] = w.auto_pad == AutoPad::kSameUpper ? small : large;
      pads[rank + i] = w.auto_pad == AutoPad::kSameUpper ? large : small;
      continue;
    }
    if (w.auto_pad == AutoPad::kNotSet) {
      pads[i] = w.pads[i];
      pads[rank + i] = w.pads[rank + i];
    }
    if (in[i] < 0 || w.kernel[i] < 0) continue;
    const int64_t ek = (w.kernel[i] - 1) * w.dilations[i] + 1;
    const int64_t span = in[i] + pads[i] + pads[rank + i] - ek;
    if (span < 0)
      return bad(node, "spatial axis " + std::to_string(i) + ": input size " + std::to_string(in[i]) +
                           " with pads " + std::to_string(pads[i]) + "+" +
                           std::to_string(pads[rank + i]) + " is smaller than the dilated kernel " +
                           std::to_string(ek));
    // ceil_mode applies to explicit pads only (the auto_pad formulas fix the size).
    if (w.ceil_mode && w.auto_pad == AutoPad::kNotSet) {
      out[i] = ceil_div(span, s) + 1;
      // A last window starting inside the end padding would see no input: drop it (the rule
      // of PyTorch, onnxruntime and the ONNX reference since opset 19).
      if ((out[i] - 1) * s >= in[i] + pads[i]) --out[i];
    } else {
      out[i] = span / s + 1;
    }
  }
  if (pads_out) *pads_out = std::move(pads);
  return out;
}

}  // namespace streamrt::ops

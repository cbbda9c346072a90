// Sliding-window geometry shared by Conv and the pooling ops: reading kernel_shape / strides /
// dilations / pads / auto_pad / ceil_mode, and the output size and effective pads they imply.
#pragma once

#include <optional>
#include <vector>

#include "ops/common.h"

namespace streamrt::ops {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

struct Window {
  std::vector<int64_t> kernel;     // per spatial axis; -1 when only known at run time
  std::vector<int64_t> strides;    // default 1
  std::vector<int64_t> dilations;  // default 1
  std::vector<int64_t> pads;       // [begin_0.., end_0..], from the attribute (auto_pad NOTSET)
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;

  size_t rank() const { return kernel.size(); }
};

// Reads the window attributes of `node` for `rank` spatial axes. `kernel` is the kernel shape
// when the caller knows it otherwise (Conv: the weight's trailing dims, may hold -1); the
// kernel_shape attribute, when present, must agree with it. Validates lengths and values
// (strides, dilations, kernel >= 1; pads >= 0) and returns kInvalidModel naming the node.
Result<Window> read_window(const ir::Node& node, size_t rank,
                           const std::optional<std::vector<int64_t>>& kernel = std::nullopt);

// Plan load (Conv / pooling verify hooks): kernel_shape, strides, dilations within
// [1, kMaxAttrExtent] and pads within [0, kMaxAttrExtent], so the window arithmetic of
// window_output and of the kernels cannot overflow.
Status verify_window_attrs(const ir::Node& node);
// Plan load: with the window's input sizes `in` (spatial, -1 unknown) and kernel sizes known,
// no pad may exceed its axis' input size plus the dilated kernel: beyond that every window
// sees padding only, which no model asks for, while the output (and its memory) grows with
// the pad. Call after verify_window_attrs.
Status verify_window_pads(const ir::Node& node, const Dims& in, const Dims& kernel);

// Output size of each spatial axis for input sizes `in` (-1 = unknown -> -1 out). When
// `pads_out` is given it receives the effective pads [begin.., end..] (auto_pad resolved);
// those are only meaningful for known input sizes. An input too small for the window is an
// error naming the node and axis.
Result<Dims> window_output(const ir::Node& node, const Window& w, const Dims& in,
                           std::vector<int64_t>* pads_out = nullptr);

}  // namespace streamrt::ops

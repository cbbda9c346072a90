// Pad's host-side parameter logic (mode, pads / paddings / axes resolution with the padded dims,
// the 'value' attribute converted to the data type), shared by the CPU kernel (pad.cc) and the
// CUDA kernel (backends/cuda/kernels/pad.cu).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ops/op.h"

namespace streamrt::ops {

enum class PadMode : int { kConstant = 0, kReflect, kEdge, kWrap };

Result<PadMode> read_pad_mode(const ir::Node& node);

// The attribute that holds the pads before opset 11: 'paddings' (opset 1) or 'pads'.
std::string pads_attr_name(const ir::Node& node);

// Per-dim (begin, end) pads and the padded output dims.
struct PadParams {
  std::vector<std::pair<int64_t, int64_t>> pads;
  Dims out_dims;
};

// Resolves the pads values and optional axes against static `in_dims`; errors name `node`
// (wrong count, pads that overflow or crop a dim below 0).
Result<PadParams> resolve_pad(const ir::Node& node, const Dims& in_dims, const std::vector<int64_t>& pads,
                              const std::optional<std::vector<int64_t>>& axes);

// The 'value' attribute (default 0) as dtype_size(dt) bytes of data type `dt`: floats rounded
// to the type, integers clamped (NaN -> 0), bool = value != 0.
Result<std::vector<unsigned char>> pad_attribute_fill(const ir::Node& node, DataType dt);

}  // namespace streamrt::ops

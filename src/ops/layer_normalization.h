// LayerNormalization's host-side parameter logic, shared by the CPU kernel
// (layer_normalization.cc) and the CUDA kernel (backends/cuda/kernels/layer_norm.cu).
#pragma once

#include <cstdint>
#include <string>

#include "ops/op.h"

namespace streamrt::ops {

// True when `s` broadcasts to `x` without changing it (dynamic dims are given the benefit).
bool layer_norm_broadcasts_to(const Dims& s, const Dims& x);

// Kernel-side check of Scale (required) and B (optional): X's dtype and broadcastable to X.
// A template so that the error comes from the caller's own context type (the CPU and CUDA
// contexts report errors with different status codes).
template <typename Ctx>
Status check_layer_norm_params(const Ctx& ctx) {
  const TensorRef& x = ctx.input(0);
  if (!ctx.has_input(1)) return ctx.error("missing required input 1 (Scale)");
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    if (ctx.input(i).dtype != x.dtype || !layer_norm_broadcasts_to(ctx.input(i).dims, x.dims))
      return ctx.error("input " + std::to_string(i) + " (" + dims_to_string(ctx.input(i).dims) +
                       ") does not match X (" + dims_to_string(x.dims) + ")");
  }
  return ok_status();
}

// X viewed as [rows, cols]: statistics over the axes [axis, rank), each row normalized alone.
struct LayerNormGeometry {
  int64_t axis = 0;  // normalized
  int64_t rows = 1;
  int64_t cols = 1;
  float epsilon = 1e-5f;
};

// Reads axis (default -1) and epsilon (default 1e-5) of `node` for static `x_dims`.
Result<LayerNormGeometry> layer_norm_geometry(const ir::Node& node, const Dims& x_dims);

}  // namespace streamrt::ops

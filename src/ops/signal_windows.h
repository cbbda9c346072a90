// HannWindow / HammingWindow / BlackmanWindow (opset 17): the window formula and length rule,
// shared by the CPU kernel (signal_windows.cc) and the CUDA kernel
// (backends/cuda/kernels/signal_windows.cu) so both produce the same values.
#pragma once

#include <cmath>
#include <cstdint>

#include "ops/op.h"

#if defined(__CUDACC__)
#define SRT_WINDOW_HD __host__ __device__
#else
#define SRT_WINDOW_HD
#endif

namespace streamrt::ops::signal_window {

enum class Kind : int { kHann, kHamming, kBlackman };

// The window kind of a node ("HannWindow", ...); kUnsupported for another op type.
Result<Kind> kind_of(const ir::Node& node);

// Output length from the host copy of the `size` input (a scalar int32 / int64): kInvalidArgument
// naming the node when negative or absurdly large.
Result<int64_t> window_length(const ir::Node& node, DataType t, const void* size);

// The output data type (attribute output_datatype, default float32).
Result<DataType> output_dtype(const ir::Node& node);

// Value n of a window of `size` points; `denom` is size for a periodic window, size - 1 for a
// symmetric one. Computed in double (as the ONNX reference does) and cast by the caller. A
// one-point symmetric window is [1] (its 0/0 phase would be NaN).
SRT_WINDOW_HD inline double value(Kind k, int64_t n, double denom) {
  if (denom == 0) return 1.0;
  constexpr double kPi = 3.14159265358979323846;
  const double phase = 2.0 * kPi * static_cast<double>(n) / denom;
  switch (k) {
    case Kind::kHann: return 0.5 - 0.5 * cos(phase);
    case Kind::kHamming: return 25.0 / 46.0 - (1.0 - 25.0 / 46.0) * cos(phase);
    case Kind::kBlackman: return 0.42 - 0.5 * cos(phase) + 0.08 * cos(2.0 * phase);
  }
  return 0.0;
}

}  // namespace streamrt::ops::signal_window

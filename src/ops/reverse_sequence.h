// ReverseSequence's host-side rules, shared by the CPU kernel (reverse_sequence.cc) and the CUDA
// kernel (backends/cuda/kernels/reverse_sequence.cu).
#pragma once

#include <cstdint>

#include "ops/op.h"

namespace streamrt::ops {

struct SequenceAxes {
  int64_t batch = 1;
  int64_t time = 0;
};
// Attributes batch_axis (default 1) and time_axis (default 0): 0 and 1, one each.
Result<SequenceAxes> sequence_axes(const ir::Node& node);

// Checks the input (rank >= 2) and sequence_lens (1-D, int64, one per batch entry).
Status check_sequence_dims(const ir::Node& node, StatusCode code, const Dims& input, const Dims& lens,
                           SequenceAxes axes);

}  // namespace streamrt::ops

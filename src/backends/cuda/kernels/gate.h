// SwiGLU's gate, y = silu(gate) * up element by element, as FusedElementwise computes its gate
// program (ops/fused_elementwise.h gate_value, in float, rounded once). Also run by MatMulGroup's
// many-row path (kernels/matmul_group.cu) on the two products it gates.
#pragma once

#include <cstdint>

#include "backends/cuda/cuda_kernel.h"

namespace streamrt::cuda {

// Enqueues the gate over n elements of `dtype` (a float type) on `stream`; y may not overlap the
// operands. 16-byte runs where the pointers and n allow, one element a thread otherwise.
Status swiglu_gate(cudaStream_t stream, DataType dtype, void* y, const void* gate, const void* up, int64_t n);

}  // namespace streamrt::cuda

// MatMul with a fused bias: streamrt's own form of Add(MatMul(A, B), bias), written by the
// builder (src/builder/fuse_matmul_bias.cc) so that the bias rides in the GEMM's epilogue.
// The node stays a MatMul with a third input `bias` and the attribute "__bias" = 1 (the "__"
// prefix marks it as streamrt's, never ONNX's):
//   Y = A @ B + bias, with B of rank >= 2, bias of A's float type and of dims [1, ..., 1, N]
//   (rank 1 .. rank of Y), added to every row of Y.
// And with a fused residual, Add(MatMul(A, B), R) with R of Y's dims (a transformer's skip
// connection; builder/fuse_matmul_residual.cc): a fourth input R (the third empty when there is
// no bias) and "__residual" = 1, Y = A @ B (+ bias) + R, which the GEMM adds as its C operand.
// Both are added to the float product before it is narrowed (one rounding in half types).
#pragma once

#include "ir/graph.h"

namespace streamrt::ops {

class KernelContext;

inline constexpr const char* kMatMulBiasAttr = "__bias";
inline constexpr const char* kMatMulResidualAttr = "__residual";
inline constexpr size_t kMatMulResidualInput = 3;

// numpy matmul's shape rule (shared with MatMulInteger / QLinearMatMul): 1-D operands promoted,
// batch dims broadcast. Works on dims that may contain -1; errors name the node.
struct MatMulShape {
  Dims batch_a, batch_b, batch;  // batch dims of A, B and their broadcast
  int64_t m = -1, k = -1, n = -1;
  Dims out;
};
Result<MatMulShape> matmul_shape(const ir::Node& node, const Dims& a, const Dims& b);

// Row-major y[rows x n] = a[rows x k] * b[k x n], a and y in float, b of type T (float, Half,
// BFloat16) read as stored: the CPU MatMul's product (BLAS; half-type B widened in registers for
// a few rows, a panel at a time for more). kUnsupported past BLAS's index range.
template <typename T>
Status matmul_float_rows(int64_t rows, int64_t n, int64_t k, const float* a, const T* b, float* y);

// True when the node is a MatMul carrying "__bias" = 1 / "__residual" = 1.
bool matmul_has_bias_attr(const ir::Node& node);
bool matmul_has_residual_attr(const ir::Node& node);

// Checks the residual's dims against Y's (entries may be -1: unknown); errors name the node.
Status check_matmul_residual(const ir::Node& node, const Dims& residual, const Dims& out);
// A kernel's fused bias and residual (when present): A's float type, their dims against B's and Y's.
Status check_matmul_fused_operands(const KernelContext& ctx, const Dims& out);

// Checks the bias dims against B's dims and Y's rank (entries may be -1: unknown); errors name
// the node.
Status check_matmul_bias(const ir::Node& node, const Dims& bias, const Dims& b, size_t out_rank);

}  // namespace streamrt::ops

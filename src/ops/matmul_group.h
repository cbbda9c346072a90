// MatMulGroup: the MatMuls that read one activation, as one step (streamrt's own op, written by
// builder/fuse_matmul_group.cc). A transformer layer's Q / K / V projections read the same
// normalized hidden state, and so do the MLP's gate and up projections; one step reads that
// input once, and a one-row product (a decode token) runs as a single GEMV launch over every
// weight instead of one launch per weight, a normalization and a gate.
//
// Inputs: 0 A [..., K]; 1 the scale of an RMS normalization of A's rows (optional: [K]);
// 2, 3, 4 the weights W_i [K, N_i] (2 at least: the first `count` of them); 5, 6, 7 their biases
// (optional, each [1, ..., 1, N_i]); 8, 9 and 10, 11: cos and sin tables rotating P_0 and P_1
// (optional, builder/fold_group_rotaries.cc). Attributes: epsilon (the normalization's), gate (0 / 1),
// rotary_dim (D, with the tables).
//   X   = A, or RMSNormalization(A, scale, epsilon) over the last axis (rounded to A's type)
//   P_i = X @ W_i (+ bias_i), each rounded to A's type as a MatMul step would round it
//   with tables for P_i: row r of P_i as N_i / D heads of D, each rotated as Rotary rotates a head
//            (ops/rotary.cc: p * cos + rotate_half(p) * sin in float, rounded once) by row
//            r % T of the tables, whatever their dims ([1, S, 1, D], [B, S, 1, D], ...: T x D
//            elements, T = their elements / D). The builder folds a layer's Q / K rotation this
//            way only where that row is the one Rotary's broadcast read.
//   outputs: P_0 .. P_{count-1}; with gate = 1 (two weights of one N) the one output
//            silu(P_0) * P_1 (SwiGLU, FusedElementwise's gate arithmetic)
// and, when there is a normalization or a gate, a last output `scratch` (1-D, A's type): room for
// the many-row path's intermediates (the normalized rows, then the two products), which the
// memory planner sizes with everything else. Kernels that do not need it leave it unwritten.
#pragma once

#include <array>
#include <span>
#include <vector>

#include "ir/graph.h"

namespace streamrt::ops {

inline constexpr const char* kMatMulGroup = "MatMulGroup";
inline constexpr size_t kMatMulGroupScale = 1;
inline constexpr size_t kMatMulGroupWeight = 2;  // first weight input
inline constexpr size_t kMatMulGroupBias = 5;    // first bias input
inline constexpr size_t kMatMulGroupRotary = 8;  // cos of P_0, sin of P_0, cos of P_1, sin of P_1
inline constexpr int kMatMulGroupMax = 3;        // weights a group takes
inline constexpr int kMatMulGroupRotaryMax = 2;  // products a group may rotate (Q and K)
inline constexpr size_t kMatMulGroupInputs = kMatMulGroupRotary + 2 * kMatMulGroupRotaryMax;

struct MatMulGroupLayout {
  int count = 0;  // weights
  bool norm = false, gate = false;
  std::array<bool, kMatMulGroupMax> bias = {};
  float epsilon = 1e-5f;
  int64_t rows = -1, k = -1;  // A's rows (its leading dims' product) and last dim; -1: unknown
  std::array<int64_t, kMatMulGroupMax> n = {-1, -1, -1};
  Dims lead;  // A's leading dims (outputs are lead + [N_i])
  int64_t rotary_dim = 0;                                   // D where any product is rotated
  std::array<bool, kMatMulGroupRotaryMax> rotary = {};     // P_i rotated
  std::array<int64_t, kMatMulGroupRotaryMax> table_rows = {-1, -1};  // T of P_i's tables; -1: unknown
  size_t products() const { return gate ? 1 : static_cast<size_t>(count); }
  bool rotates() const { return rotary[0] || rotary[1]; }
  bool has_scratch() const { return norm || gate; }
  // Elements of the scratch output: rows x K for the normalized rows, 2 x rows x N for the gated
  // products; -1 when rows is unknown.
  int64_t scratch_elements() const;
};

// The group's layout from its attributes and which inputs are present (`present[i]`) with the
// dims `a` of A, `w[i]` of each weight and `tables[j]` of the rotary tables (inputs 8..11; any may
// be null: unknown, or hold -1); kInvalidModel naming the node when the inputs, attributes or dims
// do not fit the form above.
Result<MatMulGroupLayout> matmul_group_layout(const ir::Node& node, const std::vector<bool>& present, const Dims& a,
                                              std::span<const Dims* const> w, std::span<const Dims* const> tables = {});

struct TensorInfo;
// The same from the inputs' shape-inference records (absent: kUndefined dtype; dims unknown
// without has_shape).
Result<MatMulGroupLayout> matmul_group_layout(const ir::Node& node, std::span<const TensorInfo> in);

class KernelContext;
// The layout of a kernel's step at its (static) dims, with the products' dims checked.
Result<MatMulGroupLayout> matmul_group_kernel_layout(const KernelContext& ctx);

}  // namespace streamrt::ops

// A transformer layer's shared-input projections, written out the unfused way, for the
// MatMulGroup tests (unit: fusion and CPU; gpu: the CUDA kernel against the CPU): X, optionally
// RMS-normalized, read by `members` MatMuls (Q / K / V, or gate / up with SwiGLU's gate after
// them), one output; with `rotary`, P0 and P1 viewed as heads and rotated (a Rotary step each, cos
// and sin [1, S, 1, D] constants) as a layer rotates its Q and K.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "conv_test_util.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"

namespace streamrt::testing {

struct GroupSpec {
  DataType dtype = DataType::kFloat32;
  Dims x = {2, 3, 16};                  // A; its last dim is K
  std::vector<int64_t> n = {16, 8, 8};  // one MatMul a column count
  bool norm = true;                     // X = RMSNormalization(x, scale)
  bool gate = false;                    // y = silu(P0) * P1 (two members of one N)
  bool gate_swapped = false;            // ... written Mul(P1, Mul(Sigmoid(P0), P0))
  bool bias = false;                    // P0 = MatMul + b (fused into the MatMul first)
  bool norm_read_elsewhere = false;     // a Neg also reads X: the norm stays a step of its own
  bool residual_member = false;         // P0 + x (a residual the MatMul takes: no member then)
  bool weights_inputs = false;          // W0 a graph input, not a constant
  int64_t rotary = 0;                   // D: P0 and P1 rotated as heads of D (x 3-D, no gate)
  bool rotary_per_batch = false;        // cos / sin [B, 1, 1, D]: a row per batch, not per position
  bool dynamic_seq = false;             // x [B, -1, K] (a profile build); the head views copy B and S
};

// y = Concat(P_i) along the last axis, or the gate; graph input "x" (and "w0").
inline ir::Graph group_graph(const GroupSpec& s) {
  ir::Graph g;
  const int64_t k = s.x.back();
  Dims xd = s.x;
  if (s.dynamic_seq) xd[1] = -1;
  const ir::ValueId x = g.add_value("x", s.dtype, xd, true);
  g.inputs = {x};
  ir::ValueId h = x;
  if (s.norm) {
    const ir::ValueId scale = add_constant(g, random_tensor(s.dtype, {k}, 21, 1.f));
    h = add_op(g, "RMSNormalization", {x, scale}, {{"epsilon", ir::Attribute::make_float(1e-5f)}});
  }
  std::vector<ir::ValueId> p;
  for (size_t i = 0; i < s.n.size(); ++i) {
    ir::ValueId w = ir::kNoValue;
    if (i == 0 && s.weights_inputs) {
      w = g.add_value("w0", s.dtype, {k, s.n[i]}, true);
      g.inputs.push_back(w);
    } else {
      w = add_constant(g, random_tensor(s.dtype, {k, s.n[i]}, 30 + static_cast<uint32_t>(i),
                                        1.f / std::sqrt(static_cast<float>(k))));
    }
    ir::ValueId y = add_op(g, "MatMul", {h, w});
    if (i == 0 && s.bias) y = add_op(g, "Add", {y, add_constant(g, random_tensor(s.dtype, {s.n[i]}, 40, 0.5f))});
    if (i == 0 && s.residual_member && s.n[0] == k) y = add_op(g, "Add", {y, x});
    p.push_back(y);
  }
  if (s.rotary > 0) {  // views, then both rotations, then back: the two Rotary steps pair up
    const int64_t b = s.dynamic_seq ? 0 : s.x[0], seq = s.dynamic_seq ? 0 : s.x[1], d = s.rotary;  // 0: copied
    const int64_t rows = s.x[1];  // the tables' positions
    ir::ValueId r[2];
    for (size_t i = 0; i < 2; ++i)
      r[i] = add_op(g, "Reshape", {p[i], add_constant(g, Tensor::from_vector<int64_t>(DataType::kInt64, {4},
                                                                                     {b, seq, s.n[i] / d, d}))});
    const Dims table = s.rotary_per_batch ? Dims{s.x[0], 1, 1, d} : Dims{1, rows, 1, d};
    for (size_t i = 0; i < 2; ++i) {
      const uint32_t seed = 50 + 2 * static_cast<uint32_t>(i);
      r[i] = add_op(g, "Rotary", {r[i], add_constant(g, random_tensor(s.dtype, table, seed, 1.f)),
                                  add_constant(g, random_tensor(s.dtype, table, seed + 1, 1.f))});
    }
    for (size_t i = 0; i < 2; ++i)
      p[i] = add_op(g, "Reshape", {r[i], add_constant(g, Tensor::from_vector<int64_t>(DataType::kInt64, {3},
                                                                                     {b, seq, s.n[i]}))});
  }
  ir::ValueId y;
  if (s.gate) {
    const ir::ValueId silu = s.gate_swapped ? add_op(g, "Mul", {add_op(g, "Sigmoid", {p[0]}), p[0]})
                                            : add_op(g, "Mul", {p[0], add_op(g, "Sigmoid", {p[0]})});
    y = s.gate_swapped ? add_op(g, "Mul", {p[1], silu}) : add_op(g, "Mul", {silu, p[1]});
  } else {
    y = p.size() == 1 ? p[0] : add_op(g, "Concat", p, {{"axis", ir::Attribute::make_int(-1)}});
  }
  if (s.norm_read_elsewhere) y = add_op(g, "Concat", {y, add_op(g, "Neg", {h})}, {{"axis", ir::Attribute::make_int(-1)}});
  g.outputs = {y};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

}  // namespace streamrt::testing

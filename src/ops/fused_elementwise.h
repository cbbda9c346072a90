// FusedElementwise: a chain (tree) of float element-wise ops evaluated per output element in
// float registers, so a chain like GELU's Div-Erf-Add-Mul-Mul reads its inputs once and writes
// once. Built by the builder's fusion pass; the program is shared by the CPU and CUDA kernels.
//
// Attributes: `program` = [op, a, b] per instruction; registers 0..num_inputs-1 hold the inputs
// (broadcast to the output), instruction i writes register num_inputs + i; the output is the
// last register. Unary ops ignore b.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#if defined(__CUDACC__)
#define SRT_HOST_DEVICE __host__ __device__
#else
#define SRT_HOST_DEVICE
#endif

namespace streamrt::ir {
struct Node;
}

namespace streamrt::ops::fused {

enum Opcode : int32_t {
  kAdd, kSub, kMul, kDiv, kPow,  // binary
  kNeg, kExp, kLog, kSqrt, kReciprocal, kTanh, kErf, kSigmoid, kRelu, kAbs,  // unary
  kOpcodeCount
};
inline constexpr int kMaxInputs = 6;
inline constexpr int kMaxInstructions = 24;

struct Program {
  int32_t num_inputs = 0;
  int32_t size = 0;
  int32_t op[kMaxInstructions] = {};
  int32_t a[kMaxInstructions] = {};
  int32_t b[kMaxInstructions] = {};
};

// The opcode computing `node`'s op on one element, if the op is fusable: its registration
// names it (OpSchema::fused_opcode). A new fusable op adds its opcode here and its scalar code
// to apply(), which the CPU and CUDA kernels share.
std::optional<Opcode> opcode_of(const ir::Node& node);
inline bool is_binary(int32_t op) { return op <= kPow; }
// Reads and validates the node's program (register indices in range, known opcodes).
bool decode(const ir::Node& node, size_t num_inputs, Program* out, std::string* why);

SRT_HOST_DEVICE inline float apply(int32_t op, float x, float y) {
  switch (op) {
    case kAdd: return x + y;
    case kSub: return x - y;
    case kMul: return x * y;
    case kDiv: return x / y;
    case kPow: return y == 2.f ? x * x : y == 3.f ? x * x * x : powf(x, y);  // GELU's x^3 without powf
    case kNeg: return -x;
    case kExp: return expf(x);
    case kLog: return logf(x);
    case kSqrt: return sqrtf(x);
    case kReciprocal: return 1.f / x;
    case kTanh: return tanhf(x);
    case kErf: return erff(x);
    case kSigmoid:
#if defined(__CUDA_ARCH__)
      // On the GPU ex2.approx and rcp.approx (__expf, __fdividef: a few ulp): expf and an IEEE division
      // took ~30 instructions an element, enough to hold SwiGLU's gate (FusedElementwise, the group
      // GEMM's epilogue) below HBM speed. Every device path of the gate shares this, so they agree bit
      // for bit; the CPU's differs by a few float ulp before rounding.
      return __fdividef(1.f, 1.f + __expf(-x));
#else
      return 1.f / (1.f + expf(-x));
#endif
    case kRelu: return x > 0.f ? x : 0.f;
    case kAbs: return fabsf(x);
    default: return 0.f;
  }
}

// Whether the program is SwiGLU's gate silu(a) * b = Mul(Mul(a, Sigmoid(a)), b) (either operand
// order of each Mul); *gate / *up: the registers of a and b. Its kernels compute it as
// gate_value() does.
inline bool match_gate(const Program& p, int* gate, int* up) {
  if (p.num_inputs != 2 || p.size != 3 || p.op[0] != kSigmoid || p.op[1] != kMul || p.op[2] != kMul) return false;
  const int g = p.a[0], u = 1 - g, s = 2, t = 3;
  if (g > 1) return false;
  auto pair_is = [&](int i, int x, int y) { return (p.a[i] == x && p.b[i] == y) || (p.a[i] == y && p.b[i] == x); };
  if (!pair_is(1, g, s) || !pair_is(2, t, u)) return false;
  *gate = g;
  *up = u;
  return true;
}

// Runs the program on one element's inputs.
SRT_HOST_DEVICE inline float evaluate(const Program& p, const float* inputs) {
  float r[kMaxInputs + kMaxInstructions];
  for (int i = 0; i < p.num_inputs; ++i) r[i] = inputs[i];
  for (int i = 0; i < p.size; ++i) r[p.num_inputs + i] = apply(p.op[i], r[p.a[i]], r[p.b[i]]);
  return r[p.num_inputs + p.size - 1];
}

// The gate's value for one element, as the interpreter evaluates match_gate's program.
SRT_HOST_DEVICE inline float gate_value(float gate, float up) {
  return apply(kMul, apply(kMul, gate, apply(kSigmoid, gate, 0.f)), up);
}

}  // namespace streamrt::ops::fused

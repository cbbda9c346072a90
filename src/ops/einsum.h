// Einsum's equation parser and index plan, shared by the CPU kernel (einsum.cc) and the CUDA
// kernel (backends/cuda/kernels/einsum.cu).
//
// An equation is "term,term,...[->term]" with one term per operand; a term is letters (a-z,
// A-Z) with at most one "..." (ellipsis, the dims not named by letters, right-aligned and
// broadcast across operands). A letter repeated within a term takes that operand's diagonal.
// Without "->" (implicit output) the output is the ellipsis dims, then the letters that occur
// exactly once in the whole equation in ASCII order. Every index not in the output is summed.
// Spaces are ignored. Anything else is rejected with an error naming the equation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/op.h"

namespace streamrt::ops::einsum {

// One term: its letters in order (kEllipsisMark where "..." stands).
inline constexpr char kEllipsisMark = '.';
struct Term {
  std::string labels;
  bool has_ellipsis() const { return labels.find(kEllipsisMark) != std::string::npos; }
  size_t letters() const { return labels.size() - (has_ellipsis() ? 1 : 0); }
};

struct Equation {
  std::string text;  // as written, for error messages
  std::vector<Term> inputs;
  Term output;
  bool explicit_output = false;
};

// Parses `eq` for `num_inputs` operands; kInvalidModel naming the node and the equation.
Result<Equation> parse(const ir::Node& node, const std::string& eq, size_t num_inputs);

// The equation applied to operand dims: every index (ellipsis dims first, then letters) with
// its size, the output's indices in order, and the summed ones. For shape inference dims may
// hold -1; sizes are -1 where no operand fixes them.
struct Plan {
  std::vector<int64_t> sizes;                 // per index
  std::vector<std::vector<int64_t>> strides;  // [operand][index]: element stride, 0 where absent or broadcast
  std::vector<int> out_indices;
  std::vector<int> sum_indices;
  Dims out_dims;
};

// Checks ranks and sizes against the equation (letters of one index must agree; ellipsis dims
// broadcast, numpy style). Errors name the node, the equation and the operand.
Result<Plan> resolve(const ir::Node& node, const Equation& eq, const std::vector<Dims>& dims);

// The equation attribute of `node`, parsed and resolved against `dims`.
Result<Plan> plan_for(const ir::Node& node, const std::vector<Dims>& dims);

}  // namespace streamrt::ops::einsum

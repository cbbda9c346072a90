// Fusion passes (rewrite rules: target ops -> condition -> apply) and the index they share.
#pragma once

#include <functional>

#include <optional>
#include <vector>

#include "ir/graph.h"
#include "streamrt/builder.h"

namespace streamrt::builder {

// Producers and consumers of a graph's values, and node removal with a final compaction.
class GraphIndex {
 public:
  explicit GraphIndex(ir::Graph& g);
  // Index of the node producing v if it is a live `op_type` node, else -1.
  int producer_if(ir::ValueId v, const char* op_type) const;
  // Index of the live node producing v, or -1 (graph input, constant, removed).
  int producer(ir::ValueId v) const {
    return v == ir::kNoValue || producer_[v] < 0 || removed_[producer_[v]] ? -1 : producer_[v];
  }
  // Index of v's only consumer when v has exactly one and is not a graph output, else -1.
  int single_consumer(ir::ValueId v) const;
  // True when every output of `nodes` is read only by `nodes` or `root` and is no graph output.
  bool single_use_chain(const std::vector<int>& nodes, int root) const;
  // The same, but other readers are allowed when they are dead once `nodes` are removed (they
  // only feed `nodes`, `root` or other such readers): the caller must then remove dead code.
  bool only_use_with_dead(const std::vector<int>& nodes, int root) const;
  // The nodes reading v (a node once per input that reads it), removed ones included.
  const std::vector<int>& consumers(ir::ValueId v) const { return consumers_[v]; }
  bool is_output(ir::ValueId v) const { return is_output_[v]; }
  void remove(int node) { removed_[node] = true; }
  bool removed(size_t node) const { return removed_[node]; }
  // Erases removed nodes from the graph.
  void compact();

 private:
  ir::Graph& g_;
  std::vector<int> producer_;
  std::vector<std::vector<int>> consumers_;
  std::vector<bool> is_output_;
  std::vector<bool> removed_;
};

// Offers every live default-domain Add of two inputs and one output, one side at a time, to
// `fuse(add, side)`, which rewrites the graph and returns the node that goes (the Add, or the
// producer the Add took the place of), or -1 to try the other side. Returns how many fused;
// removed nodes are compacted away at the end.
size_t fuse_adds(ir::Graph& g, GraphIndex& idx, const std::function<int(int add, int side)>& fuse);

// Rank of v, 0 while its shape is unknown.
inline size_t rank_of(const ir::Graph& g, ir::ValueId v) {
  const ir::Value& val = g.value(v);
  return val.has_shape ? val.dims.size() : 0;
}

// Slice's starts / ends / axes / steps: the constant int64 list of input `i` (opset >= 10) or the
// attribute `attr` (older opsets); nullopt when absent or not constant.
std::optional<std::vector<int64_t>> const_ints(const ir::Graph& g, const ir::Node& n, size_t i, const char* attr);
// False when optional input `i` is given but not a constant (const_ints would read it as absent).
bool constant_or_absent(const ir::Graph& g, const ir::Node& n, size_t i);
// A new 1-D int64 constant (a Reshape target) named `name`.
ir::ValueId add_int64_constant(ir::Graph& g, const std::string& name, const std::vector<int64_t>& v);
// Squeeze's / Unsqueeze's axes: input 1 from opset 13, the attribute before; empty when absent,
// nullopt when given but not a constant.
std::optional<std::vector<int64_t>> squeeze_axes(const ir::Graph& g, const ir::Node& n);

// X / Sqrt(ReduceMean(X^2) + eps) [* W] -> RMSNormalization. Returns the number fused.
size_t fuse_rms_norm(ir::Graph& g);

// MatMul-(scale)-(mask)-Softmax-MatMul -> Attention (fuse_attention.cc). Returns the number fused.
size_t fuse_attention(ir::Graph& g);

// Attention masks that exporters build from attention_mask (causal, sliding window, padding) ->
// the op's causal / window / key_mask (fold_attention_masks.cc); fuse_attention runs it. Returns
// the number of Attention nodes whose mask input it replaced; the caller removes dead code.
size_t fold_attention_masks(ir::Graph& g);

// X * cos + rotate_half(X) * sin -> Rotary (fuse_rotary.cc). Returns the number fused.
size_t fuse_rotary(ir::Graph& g);
// Rotary(Transpose(x, [0, 2, 1, 3]), cos, sin) that only an Attention reads as Q or K becomes
// Rotary(x, cos', sin') and the Attention reads it laid out [B, S, H, D] (its bshd bit): rotary is
// element-wise over heads and positions, and cos / sin with one row for all heads ([.., 1, S, D])
// are the same bytes as [.., S, 1, D] (a Reshape view). fuse_rotary runs it. Returns the number.
size_t absorb_rotary_transposes(ir::Graph& g);
// Two consecutive Rotary steps (a layer's Q and K) -> one step of two rotations, one launch
// (pair_rotaries.cc). Run last, after every pass that looks for a Rotary. Returns the pairs made.
size_t pair_rotaries(ir::Graph& g);

// Add(MatMul(A, W), b) -> MatMul(A, W, b) with the fused bias (fuse_matmul_bias.cc).
size_t fuse_matmul_bias(ir::Graph& g);
// Add(MatMul(A, W), R) with R of the product's dims -> MatMul(A, W, [bias], R) with the fused
// residual (fuse_matmul_residual.cc). Runs after precision conversion, quantization and weight
// splitting (builder.cc), on the MatMuls they leave: one GEMM by a 2-D constant.
size_t fuse_matmul_residual(ir::Graph& g);

// MatMuls by 2-D constants that read one activation (a layer's Q / K / V, its gate and up
// projections), with the RMSNormalization that alone feeds them and the SwiGLU gate that alone
// reads a pair -> MatMulGroup (fuse_matmul_group.cc). Runs last (builder.cc), on the MatMuls the
// other passes leave, and not in weight-streaming builds (a group's weights would stream as one).
// Returns the number of nodes fused away.
size_t fuse_matmul_groups(ir::Graph& g);
// A Rotary step (single or a pair) rotating views of a MatMulGroup's products -> the group
// rotates them (fold_group_rotaries.cc). Runs after pair_rotaries, on static dims. Returns the
// Rotary steps folded.
size_t fold_group_rotaries(ir::Graph& g);

// Conv followed by Add(., R) and / or Relu -> Conv with that epilogue (fuse_conv.cc).
size_t fuse_conv(ir::Graph& g);

// Trees of float element-wise ops (each inner result read once) -> FusedElementwise.
size_t fuse_elementwise(ir::Graph& g);

// Runs every fusion pass that `passes` leaves on; returns how many nodes were fused away.
size_t run_fusions(ir::Graph& g, const BuilderPasses& passes = {});

}  // namespace streamrt::builder

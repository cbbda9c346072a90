// Graph optimization passes. Each is a local rewrite over an ir::Graph whose nodes are
// topologically ordered and whose shapes have been inferred.
#pragma once

#include "ir/graph.h"

namespace streamrt::builder {

// Evaluates every node whose inputs are all constants (or whose outputs shape inference
// already knows, e.g. Shape of a static tensor) and replaces it by constants.
// Returns the number of nodes folded.
Result<size_t> fold_constants(ir::Graph& g);

// Replaces each If whose cond is a constant by the nodes of the branch it takes (and folds
// what that makes constant, which may settle nested Ifs). Returns the number of Ifs replaced.
// builder/inline_if.cc.
Result<size_t> inline_constant_ifs(ir::Graph& g);

// Rewrites sequences the builder can trace (constant positions, splits of a known count) into
// tensor ops: SequenceAt -> Identity, ConcatFromSequence -> Concat (Unsqueeze + Concat for
// new_axis = 1), SequenceLength -> constant, SplitToSequence -> Split (+ Squeeze). Returns the
// number of readers rewritten; the caller re-infers shapes and removes the dead sequence ops.
// builder/fold_sequences.cc.
Result<size_t> fold_sequences(ir::Graph& g);
// Removes Identity, inference-mode Dropout and one-input Concat nodes by rewiring their consumers.
size_t remove_identities(ir::Graph& g);

// Removes nodes that no graph output depends on, and constants nothing uses.
size_t remove_dead_code(ir::Graph& g);

// Merges nodes that compute the same thing (op, domain, attributes, inputs; small integer
// constants by contents, Shape of tensors of proven equal dims) into the first of them, so that
// what every layer recomputes (masks, rotary tables, shape arithmetic) is computed once. Random
// ops never merge. Returns the number of nodes merged away (dead code removed). builder/cse.cc.
size_t eliminate_common_subexpressions(ir::Graph& g);

// builder/simplify.cc, each returning the number of rewrites (dead code removed):
// Cast(Cast(x: A -> B) -> C) reads x when A -> B is exact (every A value is a B value), and a Cast
// to its input's own type goes away.
size_t fold_casts(ir::Graph& g);
// Transpose(Transpose(x)) becomes one Transpose, and one that keeps every axis in place goes away.
size_t fold_transposes(ir::Graph& g);
// A Reshape whose target is computed from shapes gets a constant target when DimTracer proves each
// element a static size or the input's dim at the same position (0: copied), with at most one
// left to the element count (-1): the shape arithmetic feeding it goes away. A Reshape to the
// input's own dims goes away.
size_t fold_reshape_targets(ir::Graph& g);
// A Transpose that moves only axes of size 1 keeps every element in place: a Reshape (a view).
size_t transposes_to_views(ir::Graph& g);
// Reshape(Reshape(x, a), b) with a constant b reads x (where b copies a dim, x's and the middle
// tensor's are proven equal); the middle one goes when nothing else reads it.
size_t merge_reshapes(ir::Graph& g);
// x * 1, 1 * x and x / 1 of a float x and a one-element constant that does not widen x: x (exact,
// signed zeros and NaN included).
size_t drop_unit_scalings(ir::Graph& g);
// A Slice of static dims that keeps every element (output dims equal the input's, steps of 1): its
// input (a decode step's last-token Slice of a one-token tensor).
size_t drop_whole_slices(ir::Graph& g);
// Slice(RMSNormalization(x)) that selects along axes before the normalized ones (the last token's
// row ahead of an LM head) becomes RMSNormalization(Slice(x)): the same values, fewer rows
// normalized, and the norm then meets the MatMul it feeds (fuse_matmul_groups). The graph is
// sorted again; the caller infers shapes again when it returns more than 0.
Result<size_t> slices_before_norms(ir::Graph& g);

}  // namespace streamrt::builder

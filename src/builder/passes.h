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

}  // namespace streamrt::builder

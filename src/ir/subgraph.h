// Subgraphs: the bodies of If / Loop / Scan, held by GRAPH attributes (ir::Attribute::kGraph).
//
// How a body binds to its node. A body reads values of the enclosing graph by name (ONNX's
// implicit captures); the importer turns each such value into an explicit input of the node, so
// that dead-code removal, topological order, lifetimes and the memory plan of the enclosing graph
// see every value the node reads without looking inside bodies. The same values, in the same
// order, end the body's `inputs` (Graph::num_captures of them). So the node's last num_captures
// inputs bind the body's last num_captures inputs, one to one, and:
//   If:      node inputs [cond, captures...];              branch inputs [captures...]
//            (both branches list the union of what either captures, in one order)
//   Loop:    node inputs [M, cond, v_initial..., captures...]; body inputs [iter, cond, v..., captures...]
//   Scan 9+: node inputs [state..., scan..., captures...];    body inputs [state..., scan_elem..., captures...]
//   Scan 8:  node inputs [sequence_lens, state..., scan..., captures...]; body as Scan 9+
// Constants (initializers) of a body stay in the body; plans store them inline in the metadata
// (they neither stream nor refit).
#pragma once

#include "ir/graph.h"

namespace streamrt::ir {

// Subgraphs nest at most this deep (a body inside a body ... counts each level); deeper ones are
// refused by the importer, the plan reader and the verifier.
inline constexpr int kMaxSubgraphDepth = 16;

// Structural checks of a body from untrusted input (a plan), at nesting level `depth` (1 for a
// body of a top-level node): value ids in range, valid dtypes and dims, every node input defined
// before it is read (inputs, constants, earlier outputs), every value produced once, outputs
// defined, num_captures within the inputs, nested bodies likewise. kInvalidModel naming `where`.
Status check_subgraph(const Graph& g, int depth, const std::string& where);

// A value's sequence / optional type from untrusted input (a plan): a known kind; for tensors no
// element fields; otherwise a defined element type, element dims >= -1 (at most 64, none when
// elem_has_shape is false), and the value itself uint8 of rank 1. kInvalidModel naming `where`.
Status check_seq_type(const SeqType& t, DataType dtype, const Dims& dims, const std::string& where);
inline Status check_seq_type(const Value& v, const std::string& where) {
  return check_seq_type(v.seq, v.dtype, v.dims, where);
}

// True when some node of `g` has a GRAPH attribute.
bool has_subgraphs(const Graph& g);

// Structural equality of two bodies: values (name, dtype, dims), inputs, outputs, captures,
// constants (bytes) and nodes, attributes compared by `same_attr`.
bool same_graph(const Graph& a, const Graph& b, bool (*same_attr)(const Attribute&, const Attribute&));

}  // namespace streamrt::ir

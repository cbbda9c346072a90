// Sequence and optional values (ONNX seq(tensor), optional(tensor), optional(seq(tensor))) inside
// streamrt: each travels between steps as one uint8 tensor of dims [bytes] in the encoding below,
// so the engines, memory plans and host interpreters that move tensors move them unchanged (a
// value of data-dependent size: no arena slot, sized when made). The IR says what such a tensor
// holds (ir::SeqType on Value and TensorInfo). Only host kernels read or make them (on CUDA the
// sequence ops run as host steps, and their results stay on the host).
//
// Encoding (int64 words, host byte order, then bytes):
//   magic, kind, has_value, elem_dtype, count,
//   count x (dtype, rank, dims[rank]),
//   then each tensor's bytes, each starting at a multiple of 8 bytes.
// decode_seq checks every field of untrusted bytes (a bound input, a plan weight) and never
// reads past them.
#pragma once

#include <string>
#include <vector>

#include "ops/op.h"
#include "streamrt/sequence.h"

namespace streamrt::ops {

struct SeqValue {
  ValueKind kind = ValueKind::kSequence;
  bool has_value = true;  // optionals: holds an element; sequences always true
  DataType elem_dtype = DataType::kUndefined;
  std::vector<Tensor> items;  // sequence elements; an optional tensor's one element
};

// Decoded sequences hold at most this many tensors, each of rank at most kMaxSeqRank.
inline constexpr int64_t kMaxSeqItems = int64_t{1} << 24;
inline constexpr int64_t kMaxSeqRank = 64;

Result<Tensor> encode_seq(const SeqValue& v);
// `what` names the value in errors (kInvalidArgument).
Result<SeqValue> decode_seq(const void* data, size_t bytes, const std::string& what);
Result<SeqValue> decode_seq(const Tensor& blob, const std::string& what);
// The public form (streamrt/sequence.h) and back; kInvalidArgument naming `what` when a tensor's
// bytes do not fit its dims, or its type the value's element type.
Result<SeqValue> from_public(const SequenceValue& v, const std::string& what);
SequenceValue to_public(const SeqValue& v);

// The type of a value of kind `kind` whose tensors are `elem` (dtype, dims, has_shape).
ir::SeqType seq_type(ValueKind kind, DataType elem_dtype, const Dims& elem_dims, bool elem_has_shape);
// A TensorInfo of a non-tensor value of type `t` whose contents are not known: kUInt8 [-1].
TensorInfo seq_info(const ir::SeqType& t);
// The element type of `info` as a tensor description (dtype, dims, has_shape), for rules that
// take an element out of a sequence / optional.
TensorInfo elem_info(const TensorInfo& info);
// One element description for two (an If's branches, a sequence's items): dims -1 where they
// differ, unranked when the ranks do.
ir::SeqType merge_seq_types(const ir::SeqType& a, const ir::SeqType& b);

// Input k's description with its sequence type: as inference knows it, or, where only its
// contents are known (a host interpreter or engine hands rules tensors), read from them.
TensorInfo seq_input_info(const InferContext& ctx, size_t k);

// The rule and kernel shared by the sequence ops: `types` are the outputs' types from what is
// known of the inputs; when every present input's contents are known, `run` computes the outputs
// (exact dims and contents, the types' seq kept). The kernel runs `run` (or takes what the rule
// computed for the same inputs) and copies its results into the outputs.
using SeqRunFn = Result<std::vector<Tensor>> (*)(const ir::Node& node, const std::vector<Tensor>& inputs);
Status infer_seq_op(InferContext& ctx, const std::vector<TensorInfo>& types, SeqRunFn run);
Status run_seq_kernel(KernelContext& ctx, SeqRunFn run);

// Input k of a sequence op decoded (kInvalidArgument naming the node when it is not of a kind
// in `kinds`, a bitmask of 1 << ValueKind).
Result<SeqValue> seq_input(const ir::Node& node, const std::vector<Tensor>& inputs, size_t k, unsigned kinds);
inline constexpr unsigned kind_bit(ValueKind k) { return 1u << static_cast<unsigned>(k); }
// A scalar int32 / int64 input read as int64 (positions), or an error naming the node.
Result<int64_t> scalar_index(const ir::Node& node, const Tensor& t, const char* what);

}  // namespace streamrt::ops

#include "ops/sequence_value.h"

#include <cstring>

#include "ops/subgraph_exec.h"

namespace streamrt::ops {
namespace {

constexpr int64_t kMagic = 0x3151455354525253;  // "SRTSEQ1" and a version byte
constexpr size_t kHeaderWords = 5;

size_t pad8(size_t n) { return (n + 7) / 8 * 8; }

// Reads int64 words from untrusted bytes, never past the end.
struct Reader {
  const uint8_t* p;
  size_t size;
  size_t pos = 0;
  bool next(int64_t* out) {
    if (size - pos < 8) return false;
    std::memcpy(out, p + pos, 8);
    pos += 8;
    return true;
  }
};

bool valid_kind(int64_t k) { return k > 0 && k <= static_cast<int64_t>(kLastValueKind); }

}  // namespace

Result<Tensor> encode_seq(const SeqValue& v) {
  std::vector<int64_t> words = {kMagic, static_cast<int64_t>(v.kind), v.has_value ? 1 : 0,
                                static_cast<int64_t>(v.elem_dtype), static_cast<int64_t>(v.items.size())};
  size_t data_bytes = 0;
  for (const Tensor& t : v.items) {
    words.push_back(static_cast<int64_t>(t.dtype()));
    words.push_back(static_cast<int64_t>(t.dims().size()));
    for (int64_t d : t.dims()) words.push_back(d);
    data_bytes += pad8(t.nbytes());
  }
  const size_t total = words.size() * 8 + data_bytes;
  SRT_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(DataType::kUInt8, {static_cast<int64_t>(total)}));
  auto* dst = static_cast<uint8_t*>(out.mutable_data());
  std::memset(dst, 0, total);
  std::memcpy(dst, words.data(), words.size() * 8);
  size_t pos = words.size() * 8;
  for (const Tensor& t : v.items) {
    if (t.nbytes()) std::memcpy(dst + pos, t.data(), t.nbytes());
    pos += pad8(t.nbytes());
  }
  return out;
}

Result<SeqValue> decode_seq(const void* data, size_t bytes, const std::string& what) {
  auto bad = [&](const std::string& why) { return invalid_argument(what + ": not a sequence / optional value (" + why + ")"); };
  if (!data && bytes) return bad("no data");
  Reader r{static_cast<const uint8_t*>(data), bytes};
  int64_t h[kHeaderWords];
  for (int64_t& w : h)
    if (!r.next(&w)) return bad(std::to_string(bytes) + " bytes, too short for its header");
  if (h[0] != kMagic) return bad("bad magic");
  if (!valid_kind(h[1])) return bad("kind " + std::to_string(h[1]));
  if (h[2] != 0 && h[2] != 1) return bad("has_value " + std::to_string(h[2]));
  if (h[3] <= 0 || !is_valid_dtype(static_cast<int>(std::min<int64_t>(h[3], 255)))) return bad("element type " + std::to_string(h[3]));
  if (h[4] < 0 || h[4] > kMaxSeqItems) return bad("count " + std::to_string(h[4]));
  SeqValue v;
  v.kind = static_cast<ValueKind>(h[1]);
  v.has_value = h[2] == 1;
  v.elem_dtype = static_cast<DataType>(h[3]);
  const int64_t count = h[4];
  if (v.kind == ValueKind::kSequence && !v.has_value) return bad("a sequence without value");
  if (v.kind == ValueKind::kOptionalTensor && count != (v.has_value ? 1 : 0)) return bad("an optional tensor of " + std::to_string(count) + " tensors");
  if (v.kind == ValueKind::kOptionalSequence && !v.has_value && count != 0) return bad("an empty optional with tensors");
  std::vector<std::pair<DataType, Dims>> heads;
  heads.reserve(static_cast<size_t>(std::min<int64_t>(count, 4096)));
  uint64_t data_bytes = 0;
  for (int64_t i = 0; i < count; ++i) {
    int64_t dt = 0, rank = 0;
    if (!r.next(&dt) || !r.next(&rank)) return bad("truncated at tensor " + std::to_string(i));
    if (dt != h[3]) return bad("tensor " + std::to_string(i) + " of type " + std::to_string(dt) + " in a sequence of " + dtype_name(v.elem_dtype));
    if (rank < 0 || rank > kMaxSeqRank) return bad("tensor " + std::to_string(i) + " of rank " + std::to_string(rank));
    Dims dims(static_cast<size_t>(rank));
    for (int64_t& d : dims)
      if (!r.next(&d) || d < 0) return bad("tensor " + std::to_string(i) + ": dims truncated or negative");
    auto n = checked_numel(dims, static_cast<int64_t>(bytes));
    if (!n.ok()) return bad("tensor " + std::to_string(i) + " of dims " + dims_to_string(dims) + " exceeds the value");
    data_bytes += pad8(static_cast<size_t>(*n) * dtype_size(v.elem_dtype));
    if (data_bytes > bytes) return bad("tensor data exceed the value");
    heads.emplace_back(v.elem_dtype, std::move(dims));
  }
  if (bytes - r.pos != data_bytes)
    return bad(std::to_string(bytes - r.pos) + " bytes of tensor data where the tensors need " + std::to_string(data_bytes));
  size_t pos = r.pos;
  for (auto& [dt, dims] : heads) {
    SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::from_bytes(dt, dims, r.p + pos, static_cast<size_t>(dims_numel(dims)) * dtype_size(dt)));
    pos += pad8(t.nbytes());
    v.items.push_back(std::move(t));
  }
  return v;
}

Result<SeqValue> decode_seq(const Tensor& blob, const std::string& what) {
  if (blob.dtype() != DataType::kUInt8 || blob.dims().size() != 1)
    return invalid_argument(what + ": a sequence / optional value must be uint8 of rank 1, got " + dtype_name(blob.dtype()) + " " +
                            dims_to_string(blob.dims()));
  return decode_seq(blob.data(), blob.nbytes(), what);
}

Result<SeqValue> from_public(const SequenceValue& v, const std::string& what) {
  if (v.kind == ValueKind::kTensor || static_cast<int>(v.kind) > static_cast<int>(kLastValueKind))
    return invalid_argument(what + ": a sequence value needs a sequence / optional kind");
  if (v.elem_dtype == DataType::kUndefined || !is_valid_dtype(static_cast<int>(v.elem_dtype)))
    return invalid_argument(what + ": element type is not set");
  if (v.kind == ValueKind::kSequence && !v.has_value) return invalid_argument(what + ": a sequence always has a value");
  const size_t want = v.kind == ValueKind::kOptionalTensor ? (v.has_value ? 1 : 0) : v.tensors.size();
  if (v.tensors.size() != want || (!v.has_value && !v.tensors.empty()))
    return invalid_argument(what + ": " + std::to_string(v.tensors.size()) + " tensors for " +
                            (v.has_value ? "an optional tensor" : "an empty optional"));
  if (static_cast<int64_t>(v.tensors.size()) > kMaxSeqItems) return invalid_argument(what + ": too many tensors");
  SeqValue out;
  out.kind = v.kind;
  out.has_value = v.has_value;
  out.elem_dtype = v.elem_dtype;
  for (size_t i = 0; i < v.tensors.size(); ++i) {
    const HostTensor& h = v.tensors[i];
    const std::string at = what + " tensor " + std::to_string(i);
    if (h.dtype != v.elem_dtype)
      return invalid_argument(at + " is " + dtype_name(h.dtype) + " in a sequence of " + dtype_name(v.elem_dtype));
    if (static_cast<int64_t>(h.dims.size()) > kMaxSeqRank) return invalid_argument(at + ": rank too high");
    auto t = Tensor::from_bytes(h.dtype, h.dims, h.data.data(), h.data.size());
    if (!t.ok()) return t.status().with_context(at);
    out.items.push_back(std::move(t).value());
  }
  return out;
}

SequenceValue to_public(const SeqValue& v) {
  SequenceValue out;
  out.kind = v.kind;
  out.has_value = v.has_value;
  out.elem_dtype = v.elem_dtype;
  for (const Tensor& t : v.items) {
    const auto* p = static_cast<const uint8_t*>(t.data());
    out.tensors.push_back({t.dtype(), t.dims(), std::vector<uint8_t>(p, p + t.nbytes())});
  }
  return out;
}

ir::SeqType seq_type(ValueKind kind, DataType elem_dtype, const Dims& elem_dims, bool elem_has_shape) {
  ir::SeqType t;
  t.kind = kind;
  t.elem_dtype = elem_dtype;
  t.elem_has_shape = elem_has_shape;
  if (elem_has_shape) t.elem_dims = elem_dims;
  return t;
}

TensorInfo seq_info(const ir::SeqType& t) {
  TensorInfo info{DataType::kUInt8, {kDynamicDim}, true, nullptr, nullptr, t};
  return info;
}

TensorInfo elem_info(const TensorInfo& info) {
  return TensorInfo{info.seq.elem_dtype, info.seq.elem_has_shape ? info.seq.elem_dims : Dims{}, info.seq.elem_has_shape,
                    nullptr, nullptr, {}};
}

ir::SeqType merge_seq_types(const ir::SeqType& a, const ir::SeqType& b) {
  TensorInfo ea{a.elem_dtype, a.elem_dims, a.elem_has_shape, nullptr, nullptr, {}};
  TensorInfo eb{b.elem_dtype, b.elem_dims, b.elem_has_shape, nullptr, nullptr, {}};
  TensorInfo m = merge_infos(ea, eb);
  return seq_type(a.kind, a.elem_dtype, m.dims, m.has_shape);
}

TensorInfo seq_input_info(const InferContext& ctx, size_t k) {
  TensorInfo in = ctx.input(k);
  if (!in.seq.is_tensor() || !in.value || in.dtype != DataType::kUInt8 || in.dims.size() != 1) return in;
  auto v = decode_seq(*in.value, "");
  if (!v.ok()) return in;
  in.seq = seq_type(v->kind, v->elem_dtype, {}, false);
  for (size_t i = 0; i < v->items.size(); ++i) {
    ir::SeqType one = seq_type(v->kind, v->elem_dtype, v->items[i].dims(), true);
    in.seq = i == 0 ? one : merge_seq_types(in.seq, one);
  }
  return in;
}

Status infer_seq_op(InferContext& ctx, const std::vector<TensorInfo>& types, SeqRunFn run) {
  SRT_ASSIGN_OR_RETURN(bool ran, infer_by_running(ctx, run));
  for (size_t k = 0; k < ctx.num_outputs() && k < types.size(); ++k) {
    if (!ran) {
      ctx.set_output_info(k, types[k]);
      continue;
    }
    TensorInfo info = ctx.outputs()[k];
    info.seq = types[k].seq;
    ctx.set_output_info(k, std::move(info));
  }
  return ok_status();
}

Status run_seq_kernel(KernelContext& ctx, SeqRunFn run) { return run_kernel(ctx, run); }

Result<SeqValue> seq_input(const ir::Node& node, const std::vector<Tensor>& inputs, size_t k, unsigned kinds) {
  if (k >= inputs.size() || inputs[k].empty())
    return node.error(StatusCode::kInvalidArgument, "input " + std::to_string(k) + " is missing");
  auto v = decode_seq(inputs[k], "input " + std::to_string(k));
  if (!v.ok()) return node.error(StatusCode::kInvalidArgument, v.status().message());
  if (!(kinds & kind_bit(v->kind)))
    return node.error(StatusCode::kInvalidArgument,
                      "input " + std::to_string(k) + " is " + value_kind_name(v->kind) + ", which this op does not take");
  return v;
}

Result<int64_t> scalar_index(const ir::Node& node, const Tensor& t, const char* what) {
  if ((t.dtype() != DataType::kInt64 && t.dtype() != DataType::kInt32) || t.numel() != 1)
    return node.error(StatusCode::kInvalidArgument, std::string(what) + " must be one int32 / int64, got " +
                                                        dtype_name(t.dtype()) + " " + dims_to_string(t.dims()));
  SRT_ASSIGN_OR_RETURN(auto v, t.to_int64_vector());
  return v[0];
}

}  // namespace streamrt::ops

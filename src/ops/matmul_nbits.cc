// com.microsoft MatMulNBits (ops/matmul_nbits.h): shape rule, the conversion of its weights into
// WeightOnlyMatMul's format, and a CPU kernel that runs WeightOnlyMatMul's on them.
#include "ops/matmul_nbits.h"

#include <cmath>

#include "ops/common.h"
#include "ops/op.h"

namespace streamrt::ops {

Result<WeightQuantFormat> matmul_nbits_format(const ir::Node& node) {
  SRT_ASSIGN_OR_RETURN(int64_t k, node.attr_int("K"));
  SRT_ASSIGN_OR_RETURN(int64_t n, node.attr_int("N"));
  SRT_ASSIGN_OR_RETURN(int64_t bits, node.attr_int("bits", 4));
  SRT_ASSIGN_OR_RETURN(int64_t block, node.attr_int("block_size"));
  if (bits != 4)
    return node.error(StatusCode::kUnsupported, "bits = " + std::to_string(bits) + ": only 4-bit weights are supported");
  if (!valid_weight_quant_group(block))
    return node.error(StatusCode::kInvalidModel,
                      "block_size must be a power of two >= 16, got " + std::to_string(block));
  for (auto [name, v] : {std::pair<const char*, int64_t>{"K", k}, {"N", n}})
    if (v < 1 || v > kMaxAttrExtent)
      return node.error(StatusCode::kInvalidModel,
                        std::string("attribute '") + name + "' must be in [1, 2^30], got " + std::to_string(v));
  return WeightQuantFormat{4, block, k, n};
}

namespace {

// An input's type and dims (`present` false: omitted).
struct Arg {
  bool present = false;
  DataType dtype = DataType::kUndefined;
  Dims dims;
};

int64_t zero_bytes_per_row(const WeightQuantFormat& f) { return (f.groups() + 1) / 2; }

// dims are [total] or [rows, total / rows].
bool flat_or_rows(const Dims& d, int64_t rows, int64_t total) {
  return (d.size() == 1 && d[0] == total) || (d.size() == 2 && d[0] == rows && d[0] * d[1] == total);
}

// The weight inputs against the format; `t` is A's float type.
Status check_weight_args(const ir::Node& node, const WeightQuantFormat& f, DataType t, const Arg& b, const Arg& s,
                         const Arg& z, const Arg& g_idx) {
  auto bad = [&](const std::string& what, const Arg& a, const std::string& want) {
    return node.error(StatusCode::kInvalidModel, what + " must be " + want + ", got " + dtype_name(a.dtype) + " " +
                                                     dims_to_string(a.dims));
  };
  const int64_t nb = f.groups();
  const Dims b_dims = {f.n, nb, f.group / 2};
  if (!b.present || b.dtype != DataType::kUInt8 || b.dims != b_dims) return bad("B", b, "uint8 " + dims_to_string(b_dims));
  if (!s.present || s.dtype != t || !flat_or_rows(s.dims, f.n, f.n * nb))
    return bad("scales", s, std::string(dtype_name(t)) + " [N * n_blocks] = [" + std::to_string(f.n * nb) + "]");
  if (z.present) {
    const bool packed = z.dtype == DataType::kUInt8 && flat_or_rows(z.dims, f.n, f.n * zero_bytes_per_row(f));
    const bool floats = z.dtype == t && flat_or_rows(z.dims, f.n, f.n * nb);
    if (!packed && !floats)
      return bad("zero_points", z, "uint8 [" + std::to_string(f.n * zero_bytes_per_row(f)) + "] (4-bit pairs) or " +
                                       dtype_name(t) + " [" + std::to_string(f.n * nb) + "]");
  }
  if (g_idx.present && (g_idx.dtype != DataType::kInt32 || g_idx.dims != Dims{f.k}))
    return bad("g_idx", g_idx, "int32 [" + std::to_string(f.k) + "]");
  return ok_status();
}

Result<Tensor> zero_points(const ir::Node& node, const WeightQuantFormat& f, const Tensor* z) {
  const int64_t nb = f.groups();
  SRT_ASSIGN_OR_RETURN(Tensor out, Tensor::allocate(DataType::kUInt8, {f.n, nb}));
  uint8_t* o = out.mutable_data_as<uint8_t>();
  if (!z) {
    std::fill(o, o + f.n * nb, uint8_t{8});  // the middle of 0..15: symmetric codes
    return out;
  }
  if (z->dtype() == DataType::kUInt8) {
    const uint8_t* p = z->data_as<uint8_t>();
    const int64_t row = zero_bytes_per_row(f);
    for (int64_t c = 0; c < f.n; ++c)
      for (int64_t g = 0; g < nb; ++g) o[c * nb + g] = (p[c * row + g / 2] >> (g % 2 ? 4 : 0)) & 15;
    return out;
  }
  SRT_ASSIGN_OR_RETURN(std::vector<double> v, z->to_double_vector());
  for (size_t i = 0; i < v.size(); ++i) {
    if (!(v[i] >= 0 && v[i] <= 15 && v[i] == std::floor(v[i])))
      return node.error(StatusCode::kUnsupported, "zero_points[" + std::to_string(i) + "] = " + std::to_string(v[i]) +
                                                      ": only whole zero points in [0, 15] are supported");
    o[i] = static_cast<uint8_t>(v[i]);
  }
  return out;
}

Status check_g_idx(const ir::Node& node, const WeightQuantFormat& f, const Tensor& g_idx) {
  const int32_t* g = g_idx.data_as<int32_t>();
  for (int64_t k = 0; k < f.k; ++k)
    if (g[k] != k / f.group)
      return node.error(StatusCode::kUnsupported, "g_idx[" + std::to_string(k) + "] = " + std::to_string(g[k]) +
                                                      " reorders K (act-order); only g_idx[k] = k / block_size is "
                                                      "supported");
  return ok_status();
}

Arg arg_of(const TensorInfo* t) { return t ? Arg{true, t->dtype, t->dims} : Arg{}; }
Arg arg_of(const Tensor* t) { return t ? Arg{true, t->dtype(), t->dims()} : Arg{}; }

}  // namespace

Result<QuantizedWeight> matmul_nbits_weights(const ir::Node& node, const WeightQuantFormat& f, DataType float_type,
                                             const Tensor& b, const Tensor& scales, const Tensor* zeros,
                                             const Tensor* g_idx) {
  SRT_RETURN_IF_ERROR(check_weight_args(node, f, float_type, arg_of(&b), arg_of(&scales), arg_of(zeros), arg_of(g_idx)));
  if (g_idx) SRT_RETURN_IF_ERROR(check_g_idx(node, f, *g_idx));
  QuantizedWeight w;
  SRT_ASSIGN_OR_RETURN(w.packed, b.reshaped(f.packed_dims()));
  SRT_ASSIGN_OR_RETURN(w.scales, scales.reshaped(f.scale_dims()));
  SRT_ASSIGN_OR_RETURN(w.zeros, zero_points(node, f, zeros));
  return w;
}

namespace {

Status verify(const InferContext& ctx) { return matmul_nbits_format(ctx.node()).status(); }

Status infer(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(WeightQuantFormat f, matmul_nbits_format(ctx.node()));
  if (!ctx.has_input(kNBitsA) || !ctx.has_input(kNBitsB) || !ctx.has_input(kNBitsScales))
    return ctx.error("needs A, B and scales");
  const TensorInfo& a = ctx.input(kNBitsA);
  if (!is_float(a.dtype))
    return ctx.error(std::string("A must be float32, float16 or bfloat16, got ") + dtype_name(a.dtype));
  auto info = [&](size_t i) -> const TensorInfo* {
    return ctx.has_input(i) && ctx.input(i).has_shape ? &ctx.input(i) : nullptr;
  };
  // Weights of unknown shape (computed ones) are checked when they are bound.
  if (info(kNBitsB) && info(kNBitsScales) && (!ctx.has_input(kNBitsZeros) || info(kNBitsZeros)) &&
      (!ctx.has_input(kNBitsGIdx) || info(kNBitsGIdx)))
    SRT_RETURN_IF_ERROR(check_weight_args(ctx.node(), f, a.dtype, arg_of(info(kNBitsB)), arg_of(info(kNBitsScales)),
                                          arg_of(info(kNBitsZeros)), arg_of(info(kNBitsGIdx))));
  if (const TensorInfo* bias = info(kNBitsBias); bias && (bias->dtype != a.dtype || bias->dims != Dims{f.n}))
    return ctx.error(std::string("bias must be ") + dtype_name(a.dtype) + " [" + std::to_string(f.n) + "], got " +
                     dtype_name(bias->dtype) + " " + dims_to_string(bias->dims));
  if (!a.has_shape) {
    ctx.set_output_unranked(0, a.dtype);
    return ok_status();
  }
  if (a.dims.empty() || (a.dims.back() >= 0 && a.dims.back() != f.k))
    return ctx.error("A " + dims_to_string(a.dims) + " must end in K = " + std::to_string(f.k));
  Dims out(a.dims.begin(), a.dims.end() - 1);
  out.push_back(f.n);
  ctx.set_output(0, a.dtype, std::move(out));
  return ok_status();
}

// The weights converted (views where the layout is the same), then WeightOnlyMatMul's kernel.
Status cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(WeightQuantFormat f, matmul_nbits_format(ctx.node()));
  std::vector<Tensor> in(ctx.num_inputs());
  for (size_t i = 0; i < in.size(); ++i)
    if (ctx.has_input(i)) in[i] = Tensor::view(ctx.input(i).dtype, ctx.input(i).dims, ctx.input(i).data, nullptr);
  auto opt = [&](size_t i) { return i < in.size() && !in[i].empty() ? &in[i] : nullptr; };
  if (!opt(kNBitsA) || !opt(kNBitsB) || !opt(kNBitsScales)) return ctx.error("needs A, B and scales");
  SRT_ASSIGN_OR_RETURN(QuantizedWeight w, matmul_nbits_weights(ctx.node(), f, in[kNBitsA].dtype(), in[kNBitsB],
                                                               in[kNBitsScales], opt(kNBitsZeros), opt(kNBitsGIdx)));
  ir::Node step;
  step.name = ctx.node().name;
  step.op_type = kWeightOnlyMatMul;
  set_weight_quant_attrs(step, f);
  auto ref = [](const Tensor& t) { return TensorRef{t.dtype(), t.dims(), const_cast<void*>(t.data())}; };
  std::vector<TensorRef> refs = {ctx.input(kNBitsA), ref(w.packed), ref(w.scales), ref(w.zeros)};
  if (ctx.has_input(kNBitsBias)) refs.push_back(ctx.input(kNBitsBias));
  const OpSchema* womm = OpRegistry::global().find(kWeightOnlyMatMul);
  if (!womm) return ctx.error("WeightOnlyMatMul is not registered");
  KernelContext k(step, refs, std::span<const TensorRef>(&ctx.output(0), 1));
  return womm->cpu(k);
}

}  // namespace

STREAMRT_REGISTER_OP(MatMulNBits, {.op_type = kMatMulNBits, .domain = kMicrosoftDomain, .infer = infer, .cpu = cpu,
                                   .verify = verify, .cpu_dtypes = dtypes(kFloats), .built_as = kWeightOnlyMatMul});

}  // namespace streamrt::ops

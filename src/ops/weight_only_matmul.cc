// WeightOnlyMatMul (ops/weight_quant.h): Y = A @ dequant(W)^T + bias with W stored int8 / int4 / float8.
// The CPU kernel never widens the whole weight: a few rows of A (decode) take their dot products
// straight from each channel's codes (4-bit rows against A's even / odd elements put apart once per
// run); more rows widen a panel of 64 channels and multiply it with BLAS.

#include <algorithm>
#include <array>
#include <vector>

#include "core/cpu_features.h"
#include "core/parallel.h"
#include "ops/gemm_util.h"
#include "ops/half_gemm.h"
#include "ops/op.h"
#include "ops/weight_quant.h"
#include "ops/weight_split.h"

namespace streamrt::ops {
namespace {

enum Input { kA = 0, kPacked = 1, kScales = 2, kZeros = 3, kBias = 4 };

Status check_weight_input(const InferContext& ctx, size_t i, DataType dtype, const Dims& dims, const char* what) {
  if (!ctx.has_input(i)) return ctx.error(std::string("input ") + std::to_string(i) + " (" + what + ") is missing");
  const TensorInfo& t = ctx.input(i);
  if (t.dtype != dtype || !t.has_shape || t.dims != dims)
    return ctx.error(std::string("input ") + std::to_string(i) + " (" + what + ") must be " + dtype_name(dtype) + " " +
                     dims_to_string(dims) + ", got " + dtype_name(t.dtype) + " " +
                     (t.has_shape ? dims_to_string(t.dims) : std::string("of unknown shape")));
  return ok_status();
}

// The bias: A's type, N elements along the last axis ([N], [1, N], ...).
Status check_bias(const ir::Node& node, DataType t, DataType bt, const Dims& d, int64_t n) {
  bool ok = bt == t && !d.empty() && d.back() == n;
  for (size_t i = 0; ok && i + 1 < d.size(); ++i) ok = d[i] == 1;
  if (!ok)
    return node.error(StatusCode::kInvalidModel, std::string("the bias must be ") + dtype_name(t) + " [..., 1, " +
                                                     std::to_string(n) + "], got " + dtype_name(bt) + " " +
                                                     dims_to_string(d));
  return ok_status();
}

Status check_inputs(const InferContext& ctx, const WeightQuantFormat& f) {
  const DataType t = ctx.input_dtype(kA);
  if (!ctx.has_input(kA) || !is_float(t))
    return ctx.error(std::string("A must be float32, float16 or bfloat16, got ") + dtype_name(t));
  SRT_RETURN_IF_ERROR(check_weight_input(ctx, kPacked, f.packed_dtype(), f.packed_dims(), "packed weight"));
  SRT_RETURN_IF_ERROR(check_weight_input(ctx, kScales, t, f.scale_dims(), "scales"));
  if (f.fp8 && ctx.has_input(kZeros)) return ctx.error("float8 weights take no zero points");
  if (f.bits == 4 || ctx.has_input(kZeros))
    SRT_RETURN_IF_ERROR(check_weight_input(ctx, kZeros, f.zero_dtype(), f.zero_dims(), "zero points"));
  if (ctx.has_input(kBias) && ctx.input(kBias).has_shape)
    SRT_RETURN_IF_ERROR(check_bias(ctx.node(), t, ctx.input_dtype(kBias), ctx.input_dims(kBias), f.n));
  const TensorInfo& a = ctx.input(kA);
  if (a.has_shape && (a.dims.empty() || (a.dims.back() >= 0 && a.dims.back() != f.k)))
    return ctx.error("A " + dims_to_string(a.dims) + " must end in K = " + std::to_string(f.k));
  return ok_status();
}

Status verify(const InferContext& ctx) { return read_weight_quant_format(ctx.node()).status(); }

Status infer(InferContext& ctx) {
  SRT_ASSIGN_OR_RETURN(WeightQuantFormat f, read_weight_quant_format(ctx.node()));
  SRT_RETURN_IF_ERROR(check_inputs(ctx, f));
  const TensorInfo& a = ctx.input(kA);
  if (!a.has_shape) {
    ctx.set_output_unranked(0, a.dtype);
    return ok_status();
  }
  Dims out(a.dims.begin(), a.dims.end() - 1);
  out.push_back(f.n);
  ctx.set_output(0, a.dtype, std::move(out));
  return ok_status();
}

// The weights of one step; `scales` widened to float (N or N * G of them) for the panels only: the
// decode loops widen each channel's own as they go, on the threads that share the channels (at
// int4:32 the widening alone took a fifth of a decode GEMV's time on one thread).
struct Weights {
  WeightQuantFormat f;
  const void* packed = nullptr;
  std::vector<float> scales;
  const void* zeros = nullptr;  // uint8 [N, G] for 4 bits; int8 [N] or none for 8
  const void* raw_scales = nullptr;  // A's float type

  // Channel c's weights for k in [k0, k1) into out[0 .. k1 - k0). For 4 bits, [k0, k1) lies in
  // one group and k0 is even.
  void dequantize(int64_t c, int64_t k0, int64_t k1, float* out) const {
    if (f.fp8) {
      const uint8_t* q = static_cast<const uint8_t*>(packed) + c * f.k;
      const std::array<float, 256>& v = e4m3_values();
      for (int64_t k = k0; k < k1; ++k) out[k - k0] = v[q[k]] * scales[c];
      return;
    }
    if (f.bits == 8) {
      const int8_t* q = static_cast<const int8_t*>(packed) + c * f.k;
      const float s = scales[c];
      if (!zeros) {
        for (int64_t k = k0; k < k1; ++k) out[k - k0] = static_cast<float>(q[k]) * s;
        return;
      }
      const float z = static_cast<float>(static_cast<const int8_t*>(zeros)[c]);
      for (int64_t k = k0; k < k1; ++k) out[k - k0] = (static_cast<float>(q[k]) - z) * s;
      return;
    }
    const uint8_t* row = static_cast<const uint8_t*>(packed) + c * f.row_bytes();
    const int64_t g = c * f.groups() + k0 / f.group;
    const float s = scales[g], z = static_cast<float>(static_cast<const uint8_t*>(zeros)[g]);
    for (int64_t k = k0; k < k1; ++k) {
      const uint8_t b = row[k / 2];
      out[k - k0] = (static_cast<float>(k % 2 ? b >> 4 : b & 15) - z) * s;
    }
  }
  // The K run the panels dequantize at once: inside one group for 4 bits (groups are powers of
  // two, so a run of up to kTileK divides them or is one).
  int64_t tile() const { return f.bits == 4 ? std::min(f.group, kTileK) : kTileK; }
  static constexpr int64_t kTileK = 128;
};

constexpr int64_t kDirectMaxRows = 16;

// Rows of A laid out for the 4-bit codes: a packed byte holds elements 2i (low nibble) and 2i + 1
// (high), so each row's even and odd elements are put apart, zero past K up to the packed row's
// length (padding codes then add nothing), and the loops read everything in order (vectorized;
// picking even / odd elements inside them is not).
struct SplitRows {
  int64_t half = 0;  // bytes of a packed row
  std::vector<float> even, odd;  // [rows][half]
};

SplitRows split_rows(const WeightQuantFormat& f, const float* a, int64_t m) {
  SplitRows p;
  p.half = f.row_bytes();
  p.even.assign(static_cast<size_t>(m * p.half), 0.f);
  p.odd.assign(static_cast<size_t>(m * p.half), 0.f);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t k = 0; k < f.k; ++k) (k % 2 ? p.odd : p.even)[static_cast<size_t>(r * p.half + k / 2)] = a[r * f.k + k];
  return p;
}

// The decode loops below are inlined into two copies of direct_columns: the portable one and one
// compiled for AVX2 + FMA (32-byte vectors), picked at run time by cpuid and set_cpu_simd.
#if defined(__GNUC__)
#define SRT_LOOP __attribute__((always_inline)) inline
#else
#define SRT_LOOP inline
#endif
#if defined(__x86_64__)
#define SRT_WOM_AVX2 1
#else
#define SRT_WOM_AVX2 0
#endif

SRT_LOOP float dot(const float* a, const float* b, int64_t n) {
  float s[8] = {};  // eight chains: the compiler keeps them in vector registers
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  float r = 0;
  for (; i < n; ++i) r += a[i] * b[i];
  for (float v : s) r += v;
  return r;
}

// Codes as floats (minus the zero point; 4 bits: times the group's scale), a run that stays in L1,
// so one dot product covers a run of several groups. Separate from the dot products:
// in one loop with them the compiler does not vectorize the byte loads; apart, both loops are.
constexpr int64_t kRun = 256;
SRT_LOOP void nibbles(const uint8_t* __restrict q, int64_t n, float z, float s, float* __restrict lo, float* __restrict hi) {
  for (int64_t i = 0; i < n; ++i) {
    lo[i] = (static_cast<float>(q[i] & 15) - z) * s;
    hi[i] = (static_cast<float>(q[i] >> 4) - z) * s;
  }
}
SRT_LOOP void int8_codes(const int8_t* __restrict q, int64_t n, float z, float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(q[i]) - z;
}
SRT_LOOP void fp8_codes(const uint8_t* __restrict q, int64_t n, const float* __restrict values, float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = values[q[i]];
}

// Y[:, j0:j1) for m <= kDirectMaxRows rows of A: each channel's codes are widened a run of kRun at a
// time (in L1, never the whole weight) and dotted with every row; the zero point is subtracted from
// each code (not z * sum(a) after the sum: no cancellation between two large sums).
template <typename T>
SRT_LOOP void direct_columns_body(const Weights& w, const float* a, const SplitRows& split, int64_t m, float* y,
                                  int64_t j0, int64_t j1) {
  const WeightQuantFormat& f = w.f;
  const T* raw = static_cast<const T*>(w.raw_scales);
  float lo[kRun], hi[kRun];
  std::vector<float> scales(static_cast<size_t>(f.groups()));
  for (int64_t c = j0; c < j1; ++c) {
    if (f.bits == 8) {
      const float z = w.zeros ? static_cast<float>(static_cast<const int8_t*>(w.zeros)[c]) : 0.f;
      float acc[kDirectMaxRows] = {};
      for (int64_t k0 = 0; k0 < f.k; k0 += kRun) {
        const int64_t n = std::min(kRun, f.k - k0);
        if (f.fp8) fp8_codes(static_cast<const uint8_t*>(w.packed) + c * f.k + k0, n, e4m3_values().data(), lo);
        else int8_codes(static_cast<const int8_t*>(w.packed) + c * f.k + k0, n, z, lo);
        for (int64_t r = 0; r < m; ++r) acc[r] += dot(a + r * f.k + k0, lo, n);
      }
      const float s = static_cast<float>(load(raw[c]));
      for (int64_t r = 0; r < m; ++r) y[r * f.n + c] = s * acc[r];
      continue;
    }
    const uint8_t* row = static_cast<const uint8_t*>(w.packed) + c * f.row_bytes();
    const uint8_t* zeros = static_cast<const uint8_t*>(w.zeros) + c * f.groups();
    for (int64_t g = 0; g < f.groups(); ++g) scales[static_cast<size_t>(g)] = static_cast<float>(load(raw[c * f.groups() + g]));
    const int64_t bytes = f.group / 2;  // a group's bytes (>= 8)
    float acc[kDirectMaxRows] = {};
    // kRun and a group's bytes are powers of two: a run holds whole groups or lies inside one.
    for (int64_t b0 = 0; b0 < f.row_bytes(); b0 += kRun) {
      const int64_t n = std::min(kRun, f.row_bytes() - b0);
      for (int64_t i = 0; i < n; i += bytes) {  // each group's codes scaled: one dot product over the run
        const int64_t g = (b0 + i) / bytes;
        nibbles(row + b0 + i, std::min(bytes, n - i), zeros[g], scales[g], lo + i, hi + i);
      }
      for (int64_t r = 0; r < m; ++r) {
        const size_t at = static_cast<size_t>(r * split.half + b0);
        acc[r] += dot(split.even.data() + at, lo, n) + dot(split.odd.data() + at, hi, n);
      }
    }
    for (int64_t r = 0; r < m; ++r) y[r * f.n + c] = acc[r];
  }
}

#if SRT_WOM_AVX2
template <typename T>
__attribute__((target("avx2,fma"))) void direct_columns_avx2(const Weights& w, const float* a, const SplitRows& split,
                                                             int64_t m, float* y, int64_t j0, int64_t j1) {
  direct_columns_body<T>(w, a, split, m, y, j0, j1);
}
#endif
template <typename T>
void direct_columns(const Weights& w, const float* a, const SplitRows& split, int64_t m, float* y, int64_t j0,
                    int64_t j1) {
#if SRT_WOM_AVX2
  static const bool avx2 = cpu_features().avx2 && cpu_features().fma;
  if (avx2 && cpu_simd_allowed()) return direct_columns_avx2<T>(w, a, split, m, y, j0, j1);
#endif
  direct_columns_body<T>(w, a, split, m, y, j0, j1);  // the portable copy
}

// Shares the columns among threads when the weight is large (a thread costs ~40 us to start;
// reading 1 MB of weight about as long), as half_b_gemm_rows does.
template <typename T>
void direct(const Weights& w, const float* a, int64_t m, float* y) {
  const int64_t n = w.f.n;
  const SplitRows split = w.f.bits == 4 ? split_rows(w.f, a, m) : SplitRows{};
  const int64_t threads = n * w.f.k >= (int64_t{1} << 20) ? std::min<int64_t>({hardware_threads(), n / 64, 8}) : 1;
  if (threads <= 1) return direct_columns<T>(w, a, split, m, y, 0, n);
  constexpr int64_t kShareChannels = 4;  // shares are multiples of this many channels
  run_in_shares(n, threads, kShareChannels, [&](int64_t c0, int64_t c1) { direct_columns<T>(w, a, split, m, y, c0, c1); });
}

// More rows: a panel of channels widened (64 x K floats, never the whole weight), then BLAS.
Status panels(const Weights& w, const float* a, int64_t m, float* y) {
  constexpr int64_t kPanel = 64;
  const int64_t k = w.f.k, n = w.f.n, tile = w.tile();
  std::vector<float> panel(static_cast<size_t>(std::min(kPanel, n) * k));
  for (int64_t c0 = 0; c0 < n; c0 += kPanel) {
    const int64_t nc = std::min(kPanel, n - c0);
    for (int64_t c = 0; c < nc; ++c)
      for (int64_t k0 = 0; k0 < k; k0 += tile) w.dequantize(c0 + c, k0, std::min(k, k0 + tile), &panel[c * k + k0]);
    SRT_RETURN_IF_ERROR(sgemm(false, true, m, nc, k, 1.f, a, k, panel.data(), k, 0.f, y + c0, n));
  }
  return ok_status();
}

template <typename T>
Status run_typed(KernelContext& ctx, Weights& w) {
  const TensorRef& a = ctx.input(kA);
  const TensorRef& y = ctx.output(0);
  const int64_t m = a.numel() / w.f.k;
  const T* s = ctx.input(kScales).as<T>();
  w.raw_scales = s;
  FloatView<T> fa(a.as<T>(), a.numel());
  FloatOut<T> fy(y.as<T>(), y.numel());
  if (m <= kDirectMaxRows) {
    direct<T>(w, fa.get(), m, fy.get());
  } else {
    w.scales.resize(static_cast<size_t>(ctx.input(kScales).numel()));
    for (size_t i = 0; i < w.scales.size(); ++i) w.scales[i] = static_cast<float>(load(s[i]));
    SRT_RETURN_IF_ERROR(panels(w, fa.get(), m, fy.get()).with_context(ctx.node().describe()));
  }
  if (ctx.has_input(kBias)) {
    const T* b = ctx.input(kBias).as<T>();
    float* py = fy.get();
    for (int64_t r = 0; r < m; ++r)
      for (int64_t j = 0; j < w.f.n; ++j) py[r * w.f.n + j] += static_cast<float>(load(b[j]));
  }
  fy.flush();
  return ok_status();
}

Status cpu(KernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(WeightQuantFormat f, read_weight_quant_format(ctx.node()));
  const TensorRef& a = ctx.input(kA);
  // The run-time tensors against the format: the kernel indexes by it.
  auto is = [&](size_t i, DataType t, const Dims& d) { return ctx.has_input(i) && ctx.input(i).dtype == t && ctx.input(i).dims == d; };
  if (!is(kPacked, f.packed_dtype(), f.packed_dims()) || !is(kScales, a.dtype, f.scale_dims()) ||
      ((f.bits == 4 || ctx.has_input(kZeros)) && (f.fp8 || !is(kZeros, f.zero_dtype(), f.zero_dims()))) ||
      (ctx.has_input(kBias) && (ctx.input(kBias).dtype != a.dtype || ctx.input(kBias).numel() != f.n)))
    return ctx.error("the weights do not have the dims and types that bits / group / K / N give");
  if (a.dims.empty() || a.dims.back() != f.k) return ctx.error("A " + dims_to_string(a.dims) + " must end in K");
  Dims out(a.dims.begin(), a.dims.end() - 1);
  out.push_back(f.n);
  if (ctx.output(0).dims != out) return ctx.error("output has shape " + dims_to_string(ctx.output(0).dims));
  Weights w{f, ctx.input(kPacked).data, {}, ctx.has_input(kZeros) ? ctx.input(kZeros).data : nullptr};
  return dispatch<kFloats>(a.dtype, ctx.node().describe(), [&]<typename T>() { return run_typed<T>(ctx, w); });
}

double flops(const ir::Node& node, std::span<const Dims* const>, const Dims& out) {
  auto k = node.attr_int("K", 1);
  return 2.0 * estimate_numel(out) * static_cast<double>(k.ok() ? std::max<int64_t>(*k, 1) : 1);
}

// Weight streaming's chunks (ops/weight_split.h): blocks of output channels, every weight input
// sliced along axis 0 (the bias along its last), each part recording its first column.
Result<std::vector<ir::Node>> split(ir::Graph& g, const ir::Node& node, uint64_t chunk_bytes) {
  constexpr int64_t kColumnAlign = 64;
  auto f = read_weight_quant_format(node);
  if (!f.ok() || node.outputs.empty() || node.inputs.size() <= kScales) return std::vector<ir::Node>{};
  const ir::Value y = g.value(node.outputs[0]);  // a copy: adding chunk values reallocates g.values
  const Tensor* packed = g.constant(node.inputs[kPacked]);
  if (!packed || !y.has_shape || y.dims.empty()) return std::vector<ir::Node>{};
  std::vector<const Tensor*> sliced(node.inputs.size(), nullptr);
  for (size_t i = kPacked; i < node.inputs.size(); ++i) {
    if (node.inputs[i] == ir::kNoValue) continue;
    sliced[i] = g.constant(node.inputs[i]);
    if (!sliced[i] || sliced[i]->dims().empty()) return std::vector<ir::Node>{};  // a computed bias: whole
  }
  auto ranges = chunk_ranges(f->n, packed->nbytes(), chunk_bytes, kColumnAlign);
  if (ranges.size() < 2) return std::vector<ir::Node>{};
  SRT_ASSIGN_OR_RETURN(int64_t offset, node.attr_int("__n_offset", 0));
  SplitWriter w(g, node);
  for (size_t i = 0; i < ranges.size(); ++i) {
    auto [lo, hi] = ranges[i];
    std::vector<ir::ValueId> inputs = node.inputs;
    for (size_t j = kPacked; j < inputs.size(); ++j)
      if (sliced[j]) {
        const size_t axis = j == kBias ? sliced[j]->dims().size() - 1 : 0;
        SRT_ASSIGN_OR_RETURN(inputs[j], w.slice_constant(j, i, *sliced[j], axis, lo, hi));
      }
    Dims out = y.dims;
    out.back() = hi - lo;
    w.add_part(i, std::move(inputs), std::move(out));
  }
  std::vector<ir::Node> nodes = w.finish(static_cast<int64_t>(y.dims.size()) - 1);
  for (size_t i = 0; i < ranges.size(); ++i) {
    nodes[i].attrs["N"] = ir::Attribute::make_int(ranges[i].second - ranges[i].first);
    nodes[i].attrs["__n_offset"] = ir::Attribute::make_int(offset + ranges[i].first);
  }
  return nodes;
}

}  // namespace

STREAMRT_REGISTER_OP(WeightOnlyMatMul, {.op_type = kWeightOnlyMatMul, .infer = infer, .cpu = cpu, .verify = verify,
                                        .cpu_dtypes = dtypes(kFloats), .streamable_inputs = {1, 2, 3, 4},
                                        .flops = flops});
STREAMRT_REGISTER_WEIGHT_SPLIT(WeightOnlyMatMul, kWeightOnlyMatMul, split);

}  // namespace streamrt::ops

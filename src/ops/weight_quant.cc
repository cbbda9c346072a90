// Weight quantization for WeightOnlyMatMul (ops/weight_quant.h): the builder's pass and refit
// both quantize through quantize_weight(), so a refitted weight is what a rebuild would store.
#include "ops/weight_quant.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "core/parallel.h"
#include "ops/common.h"
#include "ops/op.h"

namespace streamrt::ops {

bool valid_weight_quant_group(int64_t group) {
  return group >= 16 && group <= kMaxAttrExtent && (group & (group - 1)) == 0;
}

Result<WeightQuantFormat> read_weight_quant_format(const ir::Node& node) {
  WeightQuantFormat f;
  SRT_ASSIGN_OR_RETURN(int64_t bits, node.attr_int("bits"));
  SRT_ASSIGN_OR_RETURN(f.group, node.attr_int("group", 0));
  SRT_ASSIGN_OR_RETURN(f.k, node.attr_int("K"));
  SRT_ASSIGN_OR_RETURN(f.n, node.attr_int("N"));
  auto bad = [&](const std::string& what) { return node.error(StatusCode::kInvalidModel, what); };
  if (bits != 4 && bits != 8) return bad("attribute 'bits' must be 4 or 8, got " + std::to_string(bits));
  f.bits = static_cast<int>(bits);
  if (f.bits == 4 && !valid_weight_quant_group(f.group))
    return bad("attribute 'group' must be a power of two >= 16 for 4 bits, got " + std::to_string(f.group));
  if (f.bits == 8) f.group = 0;
  SRT_ASSIGN_OR_RETURN(int64_t float8, node.attr_int("float8", 0));
  if (float8 != 0 && float8 != 1) return bad("attribute 'float8' must be 0 or 1, got " + std::to_string(float8));
  if (float8 && f.bits != 8) return bad("attribute 'float8' needs 8 bits, got " + std::to_string(f.bits));
  f.fp8 = float8 == 1;
  for (auto [name, v] : {std::pair<const char*, int64_t>{"K", f.k}, {"N", f.n}})
    if (v < 1 || v > kMaxAttrExtent)
      return bad(std::string("attribute '") + name + "' must be in [1, 2^30], got " + std::to_string(v));
  return f;
}

void set_weight_quant_attrs(ir::Node& node, const WeightQuantFormat& f) {
  node.attrs["bits"] = ir::Attribute::make_int(f.bits);
  node.attrs["group"] = ir::Attribute::make_int(f.group);
  node.attrs["K"] = ir::Attribute::make_int(f.k);
  node.attrs["N"] = ir::Attribute::make_int(f.n);
  if (f.fp8) node.attrs["float8"] = ir::Attribute::make_int(1);
  else node.attrs.erase("float8");
}

namespace {

// A block's columns are widened to floats, each column contiguous, before they are quantized:
// a quantizer reads a column several times, and a [K, N] weight's column is strided (32 float16
// columns of a row are one cache line).
constexpr int64_t kBlockCols = 32;

// Columns [c0, c0 + nc) of a [K, N_total] (trans: [N_total, K]) weight as floats: out[c * k + kk].
template <typename T>
void gather_columns(const T* p, int64_t k, int64_t n_total, bool trans, int64_t c0, int64_t nc, float* out) {
  if (trans) {
    for (int64_t c = 0; c < nc; ++c)
      for (int64_t kk = 0; kk < k; ++kk) out[c * k + kk] = static_cast<float>(load(p[(c0 + c) * k + kk]));
    return;
  }
  for (int64_t kk = 0; kk < k; ++kk)
    for (int64_t c = 0; c < nc; ++c) out[c * k + kk] = static_cast<float>(load(p[kk * n_total + c0 + c]));
}

template <typename T>
void quantize_int8(const float* w, int64_t k, T* scale, int8_t* codes) {
  float amax = 0;
  for (int64_t kk = 0; kk < k; ++kk) amax = std::max(amax, std::fabs(w[kk]));
  const QuantStep st = int8_step<T>(amax);
  *scale = store<T>(st.scale);
  for (int64_t kk = 0; kk < k; ++kk) codes[kk] = static_cast<int8_t>(int8_code(w[kk], st));
}

template <typename T>
void quantize_fp8(const float* w, int64_t k, T* scale, uint8_t* codes) {
  float amax = 0;
  for (int64_t kk = 0; kk < k; ++kk) amax = std::max(amax, std::fabs(w[kk]));
  const QuantStep st = fp8_step<T>(amax);
  *scale = store<T>(st.scale);
  for (int64_t kk = 0; kk < k; ++kk) codes[kk] = fp8_code(w[kk], st);
}

// Per group: its [min, max] widened to hold 0.
template <typename T>
void quantize_int4(const float* w, const WeightQuantFormat& f, T* scales, uint8_t* zeros, uint8_t* packed) {
  std::fill(packed, packed + f.row_bytes(), uint8_t{0});
  for (int64_t g = 0; g < f.groups(); ++g) {
    const int64_t k0 = g * f.group, k1 = std::min(f.k, k0 + f.group);
    float lo = 0, hi = 0;
    for (int64_t kk = k0; kk < k1; ++kk) {
      lo = std::min(lo, w[kk]);
      hi = std::max(hi, w[kk]);
    }
    const QuantStep st = int4_step<T>(lo, hi);
    scales[g] = store<T>(st.scale);
    zeros[g] = static_cast<uint8_t>(st.zero);
    for (int64_t kk = k0; kk < k1; ++kk) {
      const auto code = static_cast<uint8_t>(int4_code(w[kk], st));
      packed[kk / 2] |= static_cast<uint8_t>(kk % 2 ? code << 4 : code);
    }
  }
}

struct NonFinite {
  int64_t c = -1, kk = -1;  // c < 0: none
};

// Quantizes the fmt columns [c_begin, c_end) (of the weight's n0 + c); stops at the first
// non-finite element in column-major order and returns it.
template <typename T>
NonFinite quantize_columns(const T* p, int64_t n_total, bool trans, int64_t n0, const WeightQuantFormat& f,
                           QuantizedWeight& q, int64_t c_begin, int64_t c_end) {
  const int64_t k = f.k, groups = f.groups();
  std::vector<float> cols(static_cast<size_t>(kBlockCols * k));
  for (int64_t c0 = c_begin; c0 < c_end; c0 += kBlockCols) {
    const int64_t nc = std::min(kBlockCols, c_end - c0);
    gather_columns(p, k, n_total, trans, n0 + c0, nc, cols.data());
    for (int64_t i = 0; i < nc; ++i) {
      const float* w = cols.data() + i * k;
      const int64_t c = c0 + i;
      for (int64_t kk = 0; kk < k; ++kk)
        if (!std::isfinite(w[kk])) return {n0 + c, kk};
      T* scales = q.scales.mutable_data_as<T>();
      if (f.fp8) {
        quantize_fp8<T>(w, k, scales + c, q.packed.mutable_data_as<uint8_t>() + c * k);
      } else if (f.bits == 8) {
        quantize_int8<T>(w, k, scales + c, q.packed.mutable_data_as<int8_t>() + c * k);
      } else {
        quantize_int4<T>(w, f, scales + c * groups, q.zeros.mutable_data_as<uint8_t>() + c * groups,
                         q.packed.mutable_data_as<uint8_t>() + c * f.row_bytes());
      }
    }
  }
  return {};
}

// Large weights (a million elements or more) are quantized by several threads, each a share of
// the columns; the result does not depend on the split.
template <typename T>
NonFinite quantize_all(const T* p, int64_t n_total, bool trans, int64_t n0, const WeightQuantFormat& f,
                       QuantizedWeight& q) {
  const int64_t blocks = (f.n + kBlockCols - 1) / kBlockCols;
  const int64_t threads = f.n * f.k >= (int64_t{1} << 20) ? std::min<int64_t>({hardware_threads(), blocks, 16}) : 1;
  std::mutex mu;
  NonFinite first;
  run_in_shares(f.n, threads, kBlockCols, [&](int64_t c0, int64_t c1) {
    const NonFinite bad = quantize_columns<T>(p, n_total, trans, n0, f, q, c0, c1);
    std::lock_guard<std::mutex> lock(mu);
    if (bad.c >= 0 && (first.c < 0 || bad.c < first.c)) first = bad;
  });
  return first;
}

}  // namespace

Result<QuantizedWeight> quantize_weight(const Tensor& w, bool trans, int64_t n0, const WeightQuantFormat& f,
                                        const std::string& name) {
  const Dims& d = w.dims();
  const std::string where = "quantizing weight '" + name + "' " + dims_to_string(d);
  if (d.size() != 2) return invalid_argument(where + ": expected a 2-D weight");
  const int64_t k = trans ? d[1] : d[0], n_total = trans ? d[0] : d[1];
  if (k != f.k || n0 < 0 || f.n < 1 || n0 + f.n > n_total)
    return invalid_argument(where + ": K " + std::to_string(f.k) + " and columns [" + std::to_string(n0) + ", " +
                            std::to_string(n0 + f.n) + ") do not fit it");
  QuantizedWeight q;
  SRT_ASSIGN_OR_RETURN(q.packed, Tensor::allocate(f.packed_dtype(), f.packed_dims()));
  SRT_ASSIGN_OR_RETURN(q.scales, Tensor::allocate(w.dtype(), f.scale_dims()));
  if (f.bits == 4) {
    SRT_ASSIGN_OR_RETURN(q.zeros, Tensor::allocate(DataType::kUInt8, f.zero_dims()));
  }
  Status st = dispatch<kFloats>(w.dtype(), where, [&]<typename T>() -> Status {
    const NonFinite bad = quantize_all<T>(w.data_as<T>(), n_total, trans, n0, f, q);
    if (bad.c >= 0)
      return invalid_argument(where + ": element (" + std::to_string(bad.kk) + ", " + std::to_string(bad.c) +
                              ") is not finite; such a weight cannot be quantized");
    return ok_status();
  });
  if (!st.ok()) return st;
  return q;
}

}  // namespace streamrt::ops

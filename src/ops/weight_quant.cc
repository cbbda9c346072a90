// Weight quantization for WeightOnlyMatMul (ops/weight_quant.h): the builder's pass and refit
// both quantize through quantize_weight(), so a refitted weight is what a rebuild would store.
#include "ops/weight_quant.h"

#include <algorithm>
#include <cmath>
#include <vector>

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
}

namespace {

// The float value of weight element (k, column c) of a [K, N] or (trans) [N, K] tensor.
template <typename T>
struct WeightReader {
  const T* p;
  int64_t k, n_total;
  bool trans;
  float at(int64_t kk, int64_t c) const {
    return static_cast<float>(load(p[trans ? c * k + kk : kk * n_total + c]));
  }
};

// Rounds `s` to T, as the plan stores it; the codes are chosen against the stored scale.
template <typename T>
float stored(float s) {
  return static_cast<float>(load(store<T>(s)));
}

template <typename T>
void quantize_int8(const WeightReader<T>& w, int64_t n0, const WeightQuantFormat& f, QuantizedWeight& q) {
  auto* codes = q.packed.mutable_data_as<int8_t>();
  auto* scales = q.scales.mutable_data_as<T>();
  for (int64_t c = 0; c < f.n; ++c) {
    float amax = 0;
    for (int64_t kk = 0; kk < f.k; ++kk) amax = std::max(amax, std::fabs(w.at(kk, n0 + c)));
    const float s = stored<T>(amax / 127.f);
    scales[c] = store<T>(s);
    for (int64_t kk = 0; kk < f.k; ++kk) {
      const float v = s > 0 ? std::nearbyint(w.at(kk, n0 + c) / s) : 0.f;
      codes[c * f.k + kk] = static_cast<int8_t>(std::clamp(v, -127.f, 127.f));
    }
  }
}

// Asymmetric: the group's [min, max] (widened to hold 0, so zero stays exact) over 15 steps.
template <typename T>
void quantize_int4(const WeightReader<T>& w, int64_t n0, const WeightQuantFormat& f, QuantizedWeight& q) {
  auto* packed = q.packed.mutable_data_as<uint8_t>();
  auto* scales = q.scales.mutable_data_as<T>();
  auto* zeros = q.zeros.mutable_data_as<uint8_t>();
  const int64_t groups = f.groups(), row = f.row_bytes();
  std::fill(packed, packed + f.n * row, uint8_t{0});
  for (int64_t c = 0; c < f.n; ++c)
    for (int64_t g = 0; g < groups; ++g) {
      const int64_t k0 = g * f.group, k1 = std::min(f.k, k0 + f.group);
      float lo = 0, hi = 0;
      for (int64_t kk = k0; kk < k1; ++kk) {
        lo = std::min(lo, w.at(kk, n0 + c));
        hi = std::max(hi, w.at(kk, n0 + c));
      }
      float s = stored<T>((hi - lo) / 15.f);
      if (!(s > 0)) s = 0;
      const float z = s > 0 ? std::clamp(std::nearbyint(-lo / s), 0.f, 15.f) : 0.f;
      scales[c * groups + g] = store<T>(s);
      zeros[c * groups + g] = static_cast<uint8_t>(z);
      for (int64_t kk = k0; kk < k1; ++kk) {
        const float v = s > 0 ? std::clamp(std::nearbyint(w.at(kk, n0 + c) / s) + z, 0.f, 15.f) : z;
        const auto code = static_cast<uint8_t>(v);
        packed[c * row + kk / 2] |= static_cast<uint8_t>(kk % 2 ? code << 4 : code);
      }
    }
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
    const WeightReader<T> r{w.data_as<T>(), k, n_total, trans};
    for (int64_t c = n0; c < n0 + f.n; ++c)
      for (int64_t kk = 0; kk < k; ++kk)
        if (!std::isfinite(r.at(kk, c)))
          return invalid_argument(where + ": element (" + std::to_string(kk) + ", " + std::to_string(c) +
                                  ") is not finite; such a weight cannot be quantized");
    if (f.bits == 8) quantize_int8<T>(r, n0, f, q);
    else quantize_int4<T>(r, n0, f, q);
    return ok_status();
  });
  if (!st.ok()) return st;
  return q;
}

}  // namespace streamrt::ops

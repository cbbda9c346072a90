// Hand-written ONNX models whose MatMul / Gemm weight the model stores quantized (DequantizeLinear
// of int8 / uint8 / INT4 / UINT4 codes, or com.microsoft MatMulNBits), with the weight they stand
// for dequantized here in double from the codes, independently of streamrt's re-packing: for the
// import tests (tests/unit/quant_import_test.cc) and the CUDA-against-CPU tests (tests/gpu).
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "onnx_model_util.h"
#include "tactics_test_util.h"

namespace streamrt::testing {

inline constexpr int kOnnxUInt4 = 21, kOnnxInt4 = 22;

struct QuantWeightSpec {
  enum class Form { kDequantize, kMatMulNBits };
  enum class Layout { kTensor, kChannel, kBlocked };
  Form form = Form::kDequantize;
  // DequantizeLinear: the codes' ONNX type (INT8, UINT8, kOnnxInt4, kOnnxUInt4), their layout,
  // the reader (MatMul with B [K, N], or Gemm transB with B [N, K]) and a Transpose between.
  // MatMulNBits: always uint4 codes in blocks.
  int codes = onnx::TensorProto_DataType_INT8;
  Layout layout = Layout::kChannel;
  int64_t block = 0;
  bool zero_points = true;
  std::string op = "MatMul";
  bool transpose = false;
  bool bias = false;  // MatMul: an Add after it; Gemm: C; MatMulNBits: its bias input
  int64_t m = 1, k = 64, n = 48;
  std::string name() const {
    std::string s = form == Form::kMatMulNBits ? "MatMulNBits" : op + " DequantizeLinear codes " + std::to_string(codes);
    s += layout == Layout::kTensor ? " per tensor" : layout == Layout::kChannel ? " per channel" : " block " + std::to_string(block);
    return s + (zero_points ? " zp" : "") + (transpose ? " transposed" : "") + (bias ? " bias" : "") + " m " +
           std::to_string(m) + " k " + std::to_string(k) + " n " + std::to_string(n);
  }
};

struct QuantWeightModel {
  onnx::ModelProto model;
  std::vector<double> w;     // [K][N]: the weight the model computes with
  std::vector<double> bias;  // [N] or empty
  std::string codes_name;    // the codes' initializer
};

namespace quant_detail {

inline bool is4(int t) { return t == kOnnxInt4 || t == kOnnxUInt4; }
inline int64_t lo_of(int t) {
  return t == onnx::TensorProto_DataType_INT8 ? -128 : t == kOnnxInt4 ? -8 : 0;
}
inline int64_t hi_of(int t) {
  return t == onnx::TensorProto_DataType_INT8 ? 127 : t == kOnnxInt4 ? 7 : t == kOnnxUInt4 ? 15 : 255;
}

// `v` as a tensor of ONNX type t (4-bit types packed two a byte, low nibble first).
inline onnx::TensorProto int_tensor(const std::string& name, int t, const std::vector<int64_t>& dims,
                                    const std::vector<int64_t>& v) {
  std::vector<uint8_t> bytes;
  if (is4(t)) {
    bytes.assign((v.size() + 1) / 2, 0);
    for (size_t i = 0; i < v.size(); ++i) bytes[i / 2] |= static_cast<uint8_t>((v[i] & 15) << (i % 2 ? 4 : 0));
  } else {
    for (int64_t x : v) bytes.push_back(static_cast<uint8_t>(x));
  }
  return raw_tensor<uint8_t>(name, t, dims, bytes);
}

}  // namespace quant_detail

// y = x @ W (+ bias), x f32 [m, k], W per `s`, from random codes, scales and zero points (seed).
inline QuantWeightModel make_quant_weight_model(const QuantWeightSpec& s, uint32_t seed) {
  using namespace quant_detail;
  using Layout = QuantWeightSpec::Layout;
  std::mt19937 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  auto real = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
  const bool nbits = s.form == QuantWeightSpec::Form::kMatMulNBits;
  const int codes = nbits ? kOnnxUInt4 : s.codes;
  const Layout layout = nbits ? Layout::kBlocked : s.layout;
  const int64_t lo = lo_of(codes), hi = hi_of(codes), k = s.k, n = s.n;
  const int64_t block = layout == Layout::kBlocked ? s.block : k;
  const int64_t blocks = (k + block - 1) / block;
  // Parameters per (channel, block): one, per channel, or per block; scales keep outputs near 1.
  const int64_t params = layout == Layout::kTensor ? 1 : layout == Layout::kChannel ? n : n * blocks;
  const double step = 1.0 / ((hi - lo) / 3.5 * std::sqrt(static_cast<double>(k)));
  std::vector<float> scale(params);
  std::vector<int64_t> zp(params, nbits ? 8 : 0);
  for (int64_t i = 0; i < params; ++i) {
    scale[i] = static_cast<float>(step * real(0.5, 1.5));
    if (s.zero_points) zp[i] = uniform((lo + hi) / 2 - 3, (lo + hi) / 2 + 3);
  }
  auto param = [&](int64_t c, int64_t kk) {  // c: output channel
    return layout == Layout::kTensor ? 0 : layout == Layout::kChannel ? c : c * blocks + kk / block;
  };
  QuantWeightModel out;
  out.w.resize(static_cast<size_t>(k * n));
  std::vector<int64_t> q(static_cast<size_t>(k * n));  // [N][K]
  for (int64_t c = 0; c < n; ++c)
    for (int64_t kk = 0; kk < k; ++kk) {
      q[c * k + kk] = uniform(lo, hi);
      const int64_t p = param(c, kk);
      out.w[kk * n + c] = static_cast<double>(q[c * k + kk] - zp[p]) * scale[p];
    }
  if (s.bias) {
    for (int64_t c = 0; c < n; ++c) out.bias.push_back(static_cast<float>(real(-0.5, 0.5)));
  }
  out.model = make_model(nbits || is4(codes) || layout == Layout::kBlocked ? 21 : 13);
  auto* g = out.model.mutable_graph();
  const int f = onnx::TensorProto_DataType_FLOAT;
  add_input(g, "x", f, {s.m, k});
  add_output(g, "y", f, {s.m, n});
  std::vector<float> bias_f(out.bias.begin(), out.bias.end());
  if (s.bias) *g->add_initializer() = f32_raw("bias", {n}, bias_f);
  if (nbits) {
    auto* o = out.model.add_opset_import();
    o->set_domain("com.microsoft");
    o->set_version(1);
    std::vector<uint8_t> b(static_cast<size_t>(n * blocks * block / 2), 0);
    for (int64_t c = 0; c < n; ++c)
      for (int64_t kk = 0; kk < k; ++kk)
        b[c * blocks * block / 2 + kk / 2] |= static_cast<uint8_t>(q[c * k + kk] << (kk % 2 ? 4 : 0));
    out.codes_name = "B";
    *g->add_initializer() = raw_tensor<uint8_t>("B", onnx::TensorProto_DataType_UINT8, {n, blocks, block / 2}, b);
    *g->add_initializer() = f32_raw("scales", {n * blocks}, scale);
    std::vector<std::string> ins = {"x", "B", "scales"};
    if (s.zero_points) {
      const int64_t row = (blocks + 1) / 2;
      std::vector<uint8_t> z(static_cast<size_t>(n * row), 0);
      for (int64_t c = 0; c < n; ++c)
        for (int64_t bl = 0; bl < blocks; ++bl)
          z[c * row + bl / 2] |= static_cast<uint8_t>(zp[c * blocks + bl] << (bl % 2 ? 4 : 0));
      *g->add_initializer() = raw_tensor<uint8_t>("zp", onnx::TensorProto_DataType_UINT8, {n * row}, z);
      ins.push_back("zp");
    }
    if (s.bias) {
      while (ins.size() < 5) ins.push_back("");
      ins.push_back("bias");
    }
    auto* node = add_node(g, "MatMulNBits", "mmnb", ins, {"y"});
    node->set_domain("com.microsoft");
    for (auto [name, v] : {std::pair<const char*, int64_t>{"K", k}, {"N", n}, {"bits", 4}, {"block_size", block}}) {
      auto* a = node->add_attribute();
      a->set_name(name);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(v);
    }
    return out;
  }
  // DequantizeLinear: codes [N, K] when the reader takes [N, K] (Gemm transB) unless transposed.
  const bool nk = (s.op == "Gemm") != s.transpose;
  std::vector<int64_t> stored(q.size());
  for (int64_t c = 0; c < n; ++c)
    for (int64_t kk = 0; kk < k; ++kk) stored[nk ? c * k + kk : kk * n + c] = q[c * k + kk];
  out.codes_name = "w_q";
  *g->add_initializer() = int_tensor("w_q", codes, nk ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, stored);
  std::vector<int64_t> pdims;
  std::vector<float> sv(scale.size());
  std::vector<int64_t> zv(zp.size());
  for (int64_t c = 0; c < n && layout != Layout::kTensor; ++c)
    for (int64_t bl = 0; bl < (layout == Layout::kBlocked ? blocks : 1); ++bl) {
      const int64_t from = layout == Layout::kChannel ? c : c * blocks + bl;
      const int64_t to = layout == Layout::kChannel ? c : nk ? c * blocks + bl : bl * n + c;
      sv[to] = scale[from];
      zv[to] = zp[from];
    }
  if (layout == Layout::kTensor) {
    sv = scale;
    zv = zp;
  } else if (layout == Layout::kChannel) {
    pdims = {n};
  } else {
    pdims = nk ? std::vector<int64_t>{n, blocks} : std::vector<int64_t>{blocks, n};
  }
  *g->add_initializer() = f32_raw("w_scale", pdims, sv);
  std::vector<std::string> ins = {"w_q", "w_scale"};
  if (s.zero_points) {
    *g->add_initializer() = int_tensor("w_zp", codes, pdims, zv);
    ins.push_back("w_zp");
  }
  auto* dq = add_node(g, "DequantizeLinear", "dq", ins, {"w"});
  auto int_attr = [](onnx::NodeProto* node, const char* name, int64_t v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  };
  if (layout == Layout::kChannel) int_attr(dq, "axis", nk ? 0 : 1);
  if (layout == Layout::kBlocked) {
    int_attr(dq, "axis", nk ? 1 : 0);
    int_attr(dq, "block_size", block);
  }
  std::string w = "w";
  if (s.transpose) {
    auto* t = add_node(g, "Transpose", "t", {"w"}, {"wt"});
    auto* a = t->add_attribute();
    a->set_name("perm");
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(1);
    a->add_ints(0);
    w = "wt";
  }
  if (s.op == "Gemm") {
    std::vector<std::string> gin = {"x", w};
    if (s.bias) gin.push_back("bias");
    int_attr(add_node(g, "Gemm", "gemm", gin, {"y"}), "transB", 1);
  } else if (s.bias) {
    add_node(g, "MatMul", "mm", {"x", w}, {"h"});
    add_node(g, "Add", "add", {"h", "bias"}, {"y"});
  } else {
    add_node(g, "MatMul", "mm", {"x", w}, {"y"});
  }
  return out;
}

// x @ W + bias in double.
inline std::vector<double> quant_reference(const QuantWeightModel& q, const std::vector<float>& x, int64_t m,
                                           int64_t k, int64_t n) {
  std::vector<double> y(static_cast<size_t>(m * n));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double sum = q.bias.empty() ? 0 : q.bias[c];
      for (int64_t kk = 0; kk < k; ++kk) sum += static_cast<double>(x[r * k + kk]) * q.w[kk * n + c];
      y[r * n + c] = sum;
    }
  return y;
}

}  // namespace streamrt::testing

// Attention (see attention.h): shape rule, shared geometry and the CPU reference kernel.
#include "ops/attention.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/parallel.h"
#include "ops/common.h"

namespace streamrt::ops {
namespace {

// Equal, or one of them unknown.
bool same_dim(int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; }

Dims leading(const Dims& d) { return d.size() > 2 ? Dims(d.begin(), d.end() - 2) : Dims{}; }

// K's or V's leading dims as the query heads see them: kv_group heads per stored head.
Dims grouped_lead(const Dims& d, int64_t kv_group) {
  Dims l = leading(d);
  if (kv_group > 1 && !l.empty() && l.back() >= 0) l.back() *= kv_group;
  return l;
}

// A [B, S, H, D] tensor as the [B, H, S, D] the kernels compute on.
Dims logical(const Dims& d, bool bshd) { return bshd && d.size() == 4 ? Dims{d[0], d[2], d[1], d[3]} : d; }

Status check_bshd(const ir::Node& node, const Dims& q, const Dims& k, const Dims& v, bool k_transposed, int bshd) {
  const std::pair<int, const Dims*> ins[] = {{kBshdQ, &q}, {kBshdK, &k}, {kBshdV, &v}};
  for (auto [bit, d] : ins)
    if ((bshd & bit) && d->size() != 4)
      return node.error(StatusCode::kInvalidModel, "an input laid out [B, S, H, D] (bshd) must have rank 4, got " +
                                                       dims_to_string(*d));
  if ((bshd & kBshdK) && k_transposed)
    return node.error(StatusCode::kInvalidModel, "K cannot be both transposed and laid out [B, S, H, D]");
  return ok_status();
}

// Strides of an input's leading dims `in` (natural strides `natural`, one per dim) seen from
// the output's leading dims `out`, right-aligned: 0 where the input broadcasts.
void lead_strides(const Dims& in, const std::vector<int64_t>& natural, const Dims& out, int64_t* dst) {
  const size_t off = out.size() - in.size();
  for (size_t i = 0; i < out.size(); ++i)
    dst[i] = i < off || in[i - off] == 1 ? 0 : natural[i - off];
}

// Natural strides of the leading dims of a logical [.., S, D'] tensor: contiguous, or for a
// [B, S, H, D'] one seen as [B, H, S, D'], those of B and H.
std::vector<int64_t> natural_lead(const Dims& logical_dims, bool bshd) {
  const size_t r = logical_dims.size();
  const int64_t rows = logical_dims[r - 2], cols = logical_dims[r - 1];
  if (bshd) return {rows * logical_dims[1] * cols, cols};
  std::vector<int64_t> s(r - 2);
  int64_t acc = rows * cols;
  for (size_t i = r - 2; i-- > 0;) s[i] = acc, acc *= logical_dims[i];
  return s;
}
// key_mask [Bk, Sk] against the output's batch (its outermost leading dim) and Skv, as far as known.
Status check_key_mask(const ir::Node& node, const Dims& km, int64_t batch, int64_t skv) {
  if (km.size() != 2)
    return node.error(StatusCode::kInvalidModel, "key_mask must have rank 2 [batch, keys], got " + dims_to_string(km));
  if (km[0] >= 0 && batch >= 0 && km[0] != 1 && km[0] < batch)
    return node.error(StatusCode::kInvalidModel, "key_mask " + dims_to_string(km) + " has fewer rows than the " +
                                                     std::to_string(batch) + " batches (and not 1)");
  if (km[1] >= 0 && skv >= 0 && km[1] < skv)
    return node.error(StatusCode::kInvalidModel, "key_mask " + dims_to_string(km) + " has fewer columns than the " +
                                                     std::to_string(skv) + " keys");
  return ok_status();
}

struct MatrixDims {
  int64_t sq, d, skv, dk, skv_v, dv;
};

Result<MatrixDims> matrix_dims(const ir::Node& node, const Dims& q, const Dims& k, const Dims& v, bool k_transposed) {
  if (q.size() < 2 || k.size() < 2 || v.size() < 2)
    return node.error(StatusCode::kInvalidModel, "Q, K and V need rank >= 2, got " + dims_to_string(q) + ", " +
                                                     dims_to_string(k) + ", " + dims_to_string(v));
  const size_t rk = k.size();
  MatrixDims m{q[q.size() - 2], q.back(), k_transposed ? k[rk - 1] : k[rk - 2], k_transposed ? k[rk - 2] : k[rk - 1],
               v[v.size() - 2], v.back()};
  if (!same_dim(m.d, m.dk) || !same_dim(m.skv, m.skv_v))
    return node.error(StatusCode::kInvalidModel, std::string("Q ") + dims_to_string(q) + ", K " +
                                                     (k_transposed ? "(transposed) " : "") + dims_to_string(k) +
                                                     " and V " + dims_to_string(v) + " do not fit together");
  if (m.skv < 0) m.skv = m.skv_v;
  return m;
}

}  // namespace

Result<AttentionAttrs> attention_attrs(const ir::Node& node, int64_t d) {
  // ONNX Attention features outside this op: refuse them instead of computing something else.
  for (const char* key : {"q_num_heads", "kv_num_heads", "softmax_precision"})
    if (node.has_attr(key)) return node.error(StatusCode::kUnsupported, std::string("attribute '") + key + "' is not supported");
  for (const char* key : {"is_causal", "qk_matmul_output_mode"}) {
    SRT_ASSIGN_OR_RETURN(int64_t v, node.attr_int(key, 0));
    if (v != 0) return node.error(StatusCode::kUnsupported, std::string("attribute '") + key + "' != 0 is not supported");
  }
  SRT_ASSIGN_OR_RETURN(float softcap, node.attr_float("softcap", 0.f));
  if (softcap != 0.f) return node.error(StatusCode::kUnsupported, "softcap is not supported");
  AttentionAttrs a;
  SRT_ASSIGN_OR_RETURN(int64_t causal, node.attr_int("causal", 0));
  SRT_ASSIGN_OR_RETURN(int64_t kt, node.attr_int("k_transposed", 0));
  if ((causal != 0 && causal != 1) || (kt != 0 && kt != 1))
    return node.error(StatusCode::kInvalidModel, "causal and k_transposed must be 0 or 1");
  SRT_ASSIGN_OR_RETURN(int64_t bshd, node.attr_int("bshd", 0));
  if (bshd < 0 || bshd > 15) return node.error(StatusCode::kInvalidModel, "bshd must be a mask of the bits 1, 2, 4, 8");
  a.bshd = static_cast<int>(bshd);
  a.causal = causal == 1;
  a.k_transposed = kt == 1;
  const float def = d > 0 ? static_cast<float>(1.0 / std::sqrt(static_cast<double>(d))) : 1.f;
  SRT_ASSIGN_OR_RETURN(a.scale, node.attr_float("scale", def));
  SRT_ASSIGN_OR_RETURN(a.mask_fill, node.attr_float("mask_fill", a.mask_fill));
  SRT_ASSIGN_OR_RETURN(a.kv_group, node.attr_int("kv_group", 1));
  if (a.kv_group < 1 || a.kv_group > (int64_t{1} << 20))
    return node.error(StatusCode::kInvalidModel, "kv_group must be in [1, 2^20], got " + std::to_string(a.kv_group));
  SRT_ASSIGN_OR_RETURN(int64_t nan_to_zero, node.attr_int("nan_to_zero", 0));
  if (nan_to_zero != 0 && nan_to_zero != 1) return node.error(StatusCode::kInvalidModel, "nan_to_zero must be 0 or 1");
  a.nan_to_zero = nan_to_zero == 1;
  SRT_ASSIGN_OR_RETURN(a.window, node.attr_int("window", 0));
  if (a.window < 0 || a.window > kMaxAttrExtent)
    return node.error(StatusCode::kInvalidModel, "window must be in [0, 2^30] (0 = none), got " + std::to_string(a.window));
  SRT_ASSIGN_OR_RETURN(a.kv_capacity, node.attr_int("kv_capacity", 0));
  if (a.kv_capacity < 0 || a.kv_capacity > kMaxAttrExtent)
    return node.error(StatusCode::kInvalidModel, "kv_capacity must be in [0, 2^30], got " + std::to_string(a.kv_capacity));
  if (a.kv_capacity > 0 && (a.k_transposed || (a.bshd & (kBshdK | kBshdV))))
    return node.error(StatusCode::kInvalidModel, "kv_capacity needs K and V laid out [..., S, D] (not transposed, not bshd)");
  return a;
}

Result<Dims> attention_output_dims(const ir::Node& node, const Dims& q_in, const Dims& k_in, const Dims& v_in,
                                   const Dims* mask, const Dims* key_mask, bool k_transposed, int bshd,
                                   int64_t kv_group) {
  SRT_RETURN_IF_ERROR(check_bshd(node, q_in, k_in, v_in, k_transposed, bshd));
  const Dims q = logical(q_in, bshd & kBshdQ), k = logical(k_in, bshd & kBshdK), v = logical(v_in, bshd & kBshdV);
  SRT_ASSIGN_OR_RETURN(MatrixDims m, matrix_dims(node, q, k, v, k_transposed));
  std::vector<Dims> leads = {leading(q), grouped_lead(k, kv_group), grouped_lead(v, kv_group)};
  if (kv_group > 1 && (q.size() < 3 || k.size() != q.size() || v.size() != q.size()))
    return node.error(StatusCode::kInvalidModel, "kv_group needs Q, K and V of one rank >= 3 (a heads axis)");
  if (mask) {
    const size_t r = mask->size();
    const int64_t rows = r >= 2 ? (*mask)[r - 2] : 1, cols = r >= 1 ? (*mask)[r - 1] : 1;
    if ((rows != 1 && !same_dim(rows, m.sq)) || (cols != 1 && !same_dim(cols, m.skv)))
      return node.error(StatusCode::kInvalidModel, "mask " + dims_to_string(*mask) + " does not broadcast to [" +
                                                       std::to_string(m.sq) + ", " + std::to_string(m.skv) + "]");
    leads.push_back(leading(*mask));
  }
  auto lead = broadcast_all(leads);
  if (!lead.ok()) return node.error(StatusCode::kInvalidModel, "leading dims: " + lead.status().message());
  Dims out = *lead;
  if (key_mask) SRT_RETURN_IF_ERROR(check_key_mask(node, *key_mask, out.empty() ? 1 : out[0], m.skv));
  out.push_back(m.sq);
  out.push_back(m.dv);
  if (bshd & kBshdY) {
    if (out.size() != 4)
      return node.error(StatusCode::kInvalidModel, "an output laid out [B, S, H, D] (bshd) must have rank 4, got " +
                                                       dims_to_string(out));
    return logical(out, true);
  }
  return out;
}

Result<AttentionGeometry> attention_geometry(const KernelContext& ctx, const AttentionAttrs& attrs) {
  const TensorRef &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  const bool has_mask = ctx.has_input(3), has_key_mask = ctx.has_input(4);
  if (!is_float(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
    return ctx.error("Q, K and V must share one float type");
  if (ctx.num_inputs() > 5) return ctx.unsupported("more than 5 inputs");
  AttentionGeometry g;
  if (has_key_mask) {
    const DataType kt = ctx.input(4).dtype;
    if (kt != DataType::kBool && !is_integer(kt)) return ctx.error("key_mask must be bool or an integer type");
    g.key_mask_bytes = static_cast<int>(dtype_size(kt));
  }
  if (has_mask) {
    const DataType mt = ctx.input(3).dtype;
    if (mt != q.dtype && mt != DataType::kBool) return ctx.error("mask must be bool or Q's type");
    g.mask = mt == DataType::kBool ? AttentionMask::kBool : AttentionMask::kAdditive;
  }
  SRT_ASSIGN_OR_RETURN(Dims out_dims, attention_output_dims(ctx.node(), q.dims, k.dims, v.dims,
                                                            has_mask ? &ctx.input(3).dims : nullptr,
                                                            has_key_mask ? &ctx.input(4).dims : nullptr,
                                                            attrs.k_transposed, attrs.bshd, attrs.kv_group));
  const int bits = attrs.bshd;
  const Dims ql = logical(q.dims, bits & kBshdQ), kl = logical(k.dims, bits & kBshdK), vl = logical(v.dims, bits & kBshdV);
  const Dims out = logical(out_dims, bits & kBshdY);
  SRT_ASSIGN_OR_RETURN(MatrixDims m, matrix_dims(ctx.node(), ql, kl, vl, attrs.k_transposed));
  g.sq = m.sq, g.skv = m.skv, g.d = m.d, g.dv = m.dv;
  const Dims lead(out.begin(), out.end() - 2);
  if (lead.size() > static_cast<size_t>(kAttentionMaxLead))
    return ctx.unsupported("more than " + std::to_string(kAttentionMaxLead) + " leading dims");
  g.batch = dims_numel(lead);
  g.map.rank = static_cast<int>(lead.size());
  g.map.kv_group = attrs.kv_group;
  std::copy(lead.begin(), lead.end(), g.map.dims);
  lead_strides(leading(ql), natural_lead(ql, bits & kBshdQ), lead, g.map.q);
  // A KV cache stored with capacity: its (batch, head) blocks are kv_capacity rows apart.
  if (attrs.kv_capacity > 0 && g.skv > attrs.kv_capacity)
    return ctx.error("K and V hold " + std::to_string(g.skv) + " positions, beyond kv_capacity " +
                     std::to_string(attrs.kv_capacity));
  auto stored = [&](Dims d) {
    if (attrs.kv_capacity > 0) d[d.size() - 2] = attrs.kv_capacity;
    return d;
  };
  lead_strides(grouped_lead(kl, attrs.kv_group), natural_lead(stored(kl), bits & kBshdK), lead, g.map.k);
  lead_strides(grouped_lead(vl, attrs.kv_group), natural_lead(stored(vl), bits & kBshdV), lead, g.map.v);
  lead_strides(lead, natural_lead(out, bits & kBshdY), lead, g.map.y);
  // Rows: a [B, S, H, D] tensor's rows are H * D apart.
  g.q_row = bits & kBshdQ ? ql[1] * g.d : g.d;
  g.v_row = bits & kBshdV ? vl[1] * g.dv : g.dv;
  g.y_row = bits & kBshdY ? out[1] * g.dv : g.dv;
  g.k_key = bits & kBshdK ? kl[1] * g.d : attrs.k_transposed ? 1 : g.d;
  g.k_dim = attrs.k_transposed ? g.skv : 1;
  if (has_mask) {
    Dims full = lead;
    full.push_back(g.sq);
    full.push_back(g.skv);
    std::vector<int64_t> s = broadcast_strides(ctx.input(3).dims, full);
    std::copy(s.begin(), s.end() - 2, g.map.mask);
    g.mask_row = s[s.size() - 2];
    g.mask_col = s.back();
  }
  // key_mask row b for the outermost leading index b (one row for all when it has one).
  if (has_key_mask && !lead.empty() && ctx.input(4).dims[0] != 1) g.map.key_mask[0] = ctx.input(4).dims[1];
  return g;
}

namespace {

Status infer(InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) SRT_RETURN_IF_ERROR(require_input(ctx, i, kFloats));
  const DataType t = ctx.input_dtype(0);
  if (ctx.input_dtype(1) != t || ctx.input_dtype(2) != t) return ctx.error("Q, K and V must share one float type");
  // ONNX Attention's inputs 4 and 5 are past key / value: a float input 4 is one of those.
  const bool has_key_mask = ctx.has_input(4);
  if (ctx.num_inputs() > 5 || ctx.num_outputs() > 1 || (has_key_mask && is_floating_point(ctx.input_dtype(4))))
    return ctx.unsupported("past key/value inputs and extra outputs are not supported");
  const bool has_mask = ctx.has_input(3);
  if (has_mask && ctx.input_dtype(3) != t && ctx.input_dtype(3) != DataType::kBool)
    return ctx.error(std::string("mask must be bool or ") + dtype_name(t) + ", got " + dtype_name(ctx.input_dtype(3)));
  if (has_key_mask && ctx.input_dtype(4) != DataType::kBool && !is_integer(ctx.input_dtype(4)))
    return ctx.error(std::string("key_mask must be bool or an integer type, got ") + dtype_name(ctx.input_dtype(4)));
  const bool ranked = ctx.input(0).has_shape && ctx.input(1).has_shape && ctx.input(2).has_shape &&
                      (!has_mask || ctx.input(3).has_shape) && (!has_key_mask || ctx.input(4).has_shape);
  const int64_t d = ctx.input(0).has_shape && !ctx.input_dims(0).empty() ? ctx.input_dims(0).back() : -1;
  SRT_ASSIGN_OR_RETURN(AttentionAttrs a, attention_attrs(ctx.node(), d));
  if (!ranked) {
    ctx.set_output_unranked(0, t);
    return ok_status();
  }
  SRT_ASSIGN_OR_RETURN(Dims out, attention_output_dims(ctx.node(), ctx.input_dims(0), ctx.input_dims(1),
                                                       ctx.input_dims(2), has_mask ? &ctx.input_dims(3) : nullptr,
                                                       has_key_mask ? &ctx.input_dims(4) : nullptr, a.k_transposed,
                                                       a.bshd, a.kv_group));
  ctx.set_output(0, t, std::move(out));
  return ok_status();
}

// Whether key j of key_mask row `row` (element size `bytes`) is nonzero: integer types of one size
// are nonzero alike whatever their sign, so the bytes decide.
bool key_on(const uint8_t* key_mask, int bytes, int64_t row, int64_t j) {
  const uint8_t* e = key_mask + (row + j) * bytes;
  for (int b = 0; b < bytes; ++b)
    if (e[b]) return true;
  return false;
}

// Query rows whose scores one GEMM computes at a time: at most this many scores in scratch.
constexpr int64_t kScoreBlock = int64_t{1} << 20;

// Slices [b0, b1) of the (batch, head) slices, one at a time: K and V converted to float once, the
// scores of a block of query rows by one GEMM, then per row their max, exp and the weighted sum
// of V rows, all in float.
template <typename T>
void attend(const KernelContext& ctx, const AttentionGeometry& g, const AttentionAttrs& a, int64_t b0, int64_t b1) {
  const T* q = ctx.input(0).as<const T>();
  const T* k = ctx.input(1).as<const T>();
  const T* v = ctx.input(2).as<const T>();
  const T* mask_add = g.mask == AttentionMask::kAdditive ? ctx.input(3).as<const T>() : nullptr;
  const uint8_t* mask_bool = g.mask == AttentionMask::kBool ? ctx.input(3).as<const uint8_t>() : nullptr;
  const uint8_t* key_mask = g.key_mask_bytes ? ctx.input(4).as<const uint8_t>() : nullptr;
  T* y = ctx.output(0).as<T>();
  const int64_t sq = g.sq, skv = g.skv, d = g.d, dv = g.dv;
  const int64_t rows = std::clamp<int64_t>(kScoreBlock / std::max<int64_t>(skv, 1), 1, std::max<int64_t>(sq, 1));
  std::vector<float> kf(static_cast<size_t>(skv * d)), vf(static_cast<size_t>(skv * dv));
  std::vector<float> qf(static_cast<size_t>(rows * d)), scores(static_cast<size_t>(rows * skv));
  std::vector<float> s(static_cast<size_t>(skv)), acc(static_cast<size_t>(dv)), mean_v(static_cast<size_t>(dv));
  std::vector<uint8_t> on(static_cast<size_t>(skv), 1);
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const bool fill_finite = std::isfinite(a.mask_fill);
  for (int64_t b = b0; b < b1; ++b) {
    const AttentionBatchMap::Offsets o = g.map.offsets(b);
    for (int64_t j = 0; j < skv; ++j) {
      for (int64_t c = 0; c < d; ++c) kf[j * d + c] = load(k[o.k + j * g.k_key + c * g.k_dim]);
      for (int64_t c = 0; c < dv; ++c) vf[j * dv + c] = load(v[o.v + j * g.v_row + c]);
      if (key_mask) on[j] = key_on(key_mask, g.key_mask_bytes, o.key_mask, j);
    }
    if (fill_finite) {  // what a row without keys gets (see attention.h)
      std::fill(mean_v.begin(), mean_v.end(), 0.f);
      for (int64_t j = 0; j < skv; ++j)
        for (int64_t c = 0; c < dv; ++c) mean_v[c] += vf[j * dv + c];
      for (float& m : mean_v) m /= static_cast<float>(skv);
    }
    for (int64_t i = 0; i < sq; ++i) {
      if (i % rows == 0) {  // the next block's scores: Q K^T by BLAS
        const int64_t n = std::min(rows, sq - i);
        for (int64_t r = 0; r < n; ++r)
          for (int64_t c = 0; c < d; ++c) qf[r * d + c] = load(q[o.q + (i + r) * g.q_row + c]);
        if (d > 0)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n), static_cast<int>(skv),
                      static_cast<int>(d), 1.f, qf.data(), static_cast<int>(d), kf.data(), static_cast<int>(d), 0.f,
                      scores.data(), static_cast<int>(skv));
        else
          std::fill(scores.begin(), scores.end(), 0.f);
      }
      const float* row_scores = scores.data() + (i % rows) * skv;
      // Keys outside the causal limit and the window are masked: leave them out entirely.
      const KeyBounds kb = key_bounds(i, g.causal_offset(), skv, a.causal, a.window);
      float mx = kNegInf;
      for (int64_t j = kb.lo; j < kb.hi; ++j) {
        float sc = kNegInf;
        if (on[j]) {
          sc = row_scores[j] * a.scale;
          const int64_t mo = o.mask + i * g.mask_row + j * g.mask_col;
          if (mask_add) {
            const float m = static_cast<float>(load(mask_add[mo]));
            sc = m <= kMaskSwampsScore ? m : sc + m;
          }
          if (mask_bool && !mask_bool[mo]) sc = a.mask_fill;
        }
        s[j] = sc;
        mx = std::max(mx, sc);
      }
      T* yr = y + o.y + i * g.y_row;
      if (mx == kNegInf) {  // no key with a finite score
        const float nan = std::numeric_limits<float>::quiet_NaN();
        for (int64_t c = 0; c < dv; ++c) yr[c] = store<T>(fill_finite ? mean_v[c] : a.nan_to_zero ? 0.f : nan);
        continue;
      }
      float sum = 0.f;
      std::fill(acc.begin(), acc.end(), 0.f);
      for (int64_t j = kb.lo; j < kb.hi; ++j) {
        const float p = std::exp(s[j] - mx);  // NaN for a NaN score, as Softmax gives
        sum += p;
        for (int64_t c = 0; c < dv; ++c) acc[c] += p * vf[j * dv + c];
      }
      const bool zero = a.nan_to_zero && !(sum > 0.f);  // the row's softmax is NaN
      for (int64_t c = 0; c < dv; ++c) yr[c] = store<T>(zero ? 0.f : acc[c] / sum);
    }
  }
}

Status cpu(KernelContext& ctx) {
  const int64_t d = ctx.input(0).dims.empty() ? 0 : ctx.input(0).dims.back();
  SRT_ASSIGN_OR_RETURN(AttentionAttrs a, attention_attrs(ctx.node(), d));
  SRT_ASSIGN_OR_RETURN(AttentionGeometry g, attention_geometry(ctx, a));
  if (g.skv == 0) {  // no keys: the unfused P (empty) x V is all zeros
    if (ctx.output(0).nbytes()) std::memset(ctx.output(0).data, 0, ctx.output(0).nbytes());
    return ok_status();
  }
  // Slices on every core when there is enough work (a BERT layer's 12 heads x 50 sentences: ~40 ms a core).
  const int64_t work = g.batch * std::max<int64_t>(g.sq, 1) * g.skv * (g.d + g.dv);
  return dispatch<kFloats>(ctx.input(0).dtype, ctx.node().describe(), [&]<typename T>() {
    run_in_shares(g.batch, threads_for(work, int64_t{1} << 21), 1,
                  [&](int64_t b0, int64_t b1) { attend<T>(ctx, g, a, b0, b1); });
    return ok_status();
  });
}

// For the residency planner. Q K^T and P V: 4 Sq Skv D per (batch, head), half of it under a
// causal mask. The softmax between them keeps the tensor cores at about half their GEMM rate.
double flops(const ir::Node& node, std::span<const Dims* const> in, const Dims& out) {
  const Dims* kd = cost_input(in, 1);
  if (!kd || kd->size() < 2) return 0;
  const Dims& k = *kd;
  auto attr = [&](const char* key) {  // malformed attributes fail at load; 0 is fine for an estimate
    auto a = node.attr_int(key, 0);
    return a.ok() ? *a : 0;
  };
  const int64_t skv = (attr("bshd") & 2) && k.size() == 4 ? k[1] : attr("k_transposed") == 1 ? k.back() : k[k.size() - 2];
  const bool causal = attr("causal") == 1;
  const int64_t window = attr("window");
  const int64_t keys = window > 0 && window < skv ? window : std::max<int64_t>(skv, 1);
  return 2.0 * 4.0 * estimate_numel(out) * static_cast<double>(keys) * (causal && keys == skv ? 0.5 : 1.0);
}

// Plan load: the attributes the kernels index with (window, kv_group, bshd, causal, kv_capacity)
// within their ranges, also where the inputs' ranks are unknown and the shape rule stops early.
Status verify(const InferContext& ctx) { return attention_attrs(ctx.node(), -1).status(); }

// K and V of a KV cache stored with capacity (kv_capacity), along their sequence axis.
std::vector<CapacityLayout> capacity_layouts(const ir::Node& node) {
  auto c = node.attr_int("kv_capacity", 0);
  if (!c.ok() || *c <= 0) return {};
  return {{false, 1, -2, *c}, {false, 2, -2, *c}};
}

}  // namespace

STREAMRT_REGISTER_OP(Attention, {.op_type = "Attention", .infer = infer, .cpu = cpu, .verify = verify,
                                 .cpu_dtypes = dtypes(kFloats), .capacity_layouts = capacity_layouts, .flops = flops});

}  // namespace streamrt::ops

// Attention: fused scaled-dot-product attention, Y = softmax(scale * Q K^T + mask) V, built by the
// builder's fuse_attention pass from MatMul-(Mul/Div)-(Add/Where)-Softmax-MatMul chains. The CPU
// kernel (attention.cc) and the CUDA kernel (backends/cuda/kernels/attention.cu) share the
// attribute and shape logic below.
//
// Inputs:  Q [..., Sq, D]; K [..., Skv, D] (or K^T [..., D, Skv] with k_transposed = 1);
//          V [..., Skv, Dv]; optional mask broadcastable to [..., Sq, Skv]: Q's float type (added to
//          the scaled scores) or bool (true = the key takes part; false = the score becomes
//          mask_fill, as Where(mask, scores, fill) would make it).
//          Leading dims of all inputs broadcast (numpy) to the output's leading dims.
//          Optional key_mask (input 4; the mask may be absent while it is given) [Bk, Sk], bool or any
//          integer type: key j takes part for every query of batch b only where key_mask[b, j] is
//          nonzero (padding, left or right). b is the index of the output's outermost leading dim;
//          Bk is 1 (one row for every batch) or at least that dim's size (rows past it are not read),
//          and Sk >= Skv (columns past Skv are not read): exporters gather attention_mask[b, j] for
//          the keys the scores have, which is exactly this.
// Attributes: scale (float, default 1/sqrt(D)); causal (int): key j is masked for query i when
//          j > i + (Skv - Sq), the bottom-right alignment that lets Sq < Skv decode against a
//          cache; window (int, default 0 = none): key j is also masked when i + (Skv - Sq) - j >=
//          window (a sliding window of `window` keys ending at the query's own position, as
//          transformers' sliding_window keeps kv_idx > q_idx - sliding_window); k_transposed (int);
//          mask_fill (float, default -inf): exporters' fills are -inf, -1e4 or the type's lowest; a
//          finite one makes a fully masked row average V as the unfused Where-Softmax does.
//          kv_group (int, default 1): query heads per key/value head (grouped- and multi-query
//          attention): K and V hold H / kv_group heads in the last of their leading dims, and query
//          head h reads key/value head h / kv_group, so exporters' repeat_kv copies fold away.
//          nan_to_zero (int): a query whose softmax is NaN (every key masked by -inf, or a NaN
//          score) gets 0 instead of NaN: exporters' Where(IsNaN(softmax), 0, softmax) folded in.
//          kv_capacity (int, default 0): K and V are KV-cache tensors stored with room for
//          kv_capacity positions (ops/op.h CapacityLayout, builder/kv_cache.cc): each (batch, head)
//          block of keys / values is kv_capacity rows apart, of which the first Skv are read.
//          K must be [..., Skv, D] (neither transposed nor bshd) and V [..., Skv, Dv].
// Layout:  attribute bshd (int, bits): an input or the output with its bit set is laid out
//          [B, S, H, D] (sequence before heads, as projections produce it) instead of [B, H, S, D]:
//          1 = Q, 2 = K, 4 = V, 8 = Y. Such tensors have rank 4; K with its bit is never transposed.
//          The builder sets the bits where it absorbs the exporters' Transpose [0, 2, 1, 3] nodes.
// Output:  Y [..., Sq, Dv] in Q's type. Scores, softmax (max-subtracted) and sums are float32. Keys
//          masked by causal, window or key_mask are left out of the softmax. A query left with no key
//          of finite score gets NaN, as Softmax over a row of -inf does (0 with nan_to_zero); with a
//          finite mask_fill it gets the mean of V over all Skv keys instead: there every key of the
//          unfused graph's row scores the same fill, and its softmax is uniform. Skv = 0 gives 0.
//
// Like the other fused ops (RMSNormalization, FusedElementwise) it is registered in the default
// domain, where the CUDA engine looks its kernels up. That domain's opset 23 also has an Attention:
// this op is the part of it without head-count attributes, past key/value inputs, extra outputs,
// softcap or is_causal (upper-left aligned); a node using those is refused as unsupported rather
// than misread.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "ops/op.h"

namespace streamrt::ops {

enum class AttentionMask : uint8_t { kNone, kAdditive, kBool };

inline constexpr int kBshdQ = 1, kBshdK = 2, kBshdV = 4, kBshdY = 8;

// An additive mask entry at or below float16's lowest value replaces the score instead of being
// added to it. Exporters fill masks with float32's lowest value, and score + lowest is lowest in
// float32 (a fully masked row is uniform); in --fp16 builds that fill saturates to -65504, where
// float16 arithmetic also swamps the score but the kernels' float32 sums would not.
inline constexpr float kMaskSwampsScore = -65504.f;

struct AttentionAttrs {
  float scale = 1.f;
  int bshd = 0;  // kBshd* bits
  bool causal = false;
  bool k_transposed = false;
  float mask_fill = -std::numeric_limits<float>::infinity();  // score of a false bool-mask entry
  int64_t kv_group = 1;
  bool nan_to_zero = false;
  int64_t window = 0;  // 0 = no sliding window
  int64_t kv_capacity = 0;  // 0: K and V dense
};

// Reads the attributes for head dim `d` (scale defaults to 1/sqrt(d)); rejects ONNX Attention
// features this op does not implement.
Result<AttentionAttrs> attention_attrs(const ir::Node& node, int64_t d);

// The output dims for input dims that may hold -1 (mask and key_mask may be null); errors name the node.
Result<Dims> attention_output_dims(const ir::Node& node, const Dims& q, const Dims& k, const Dims& v,
                                   const Dims* mask, const Dims* key_mask, bool k_transposed, int bshd = 0,
                                   int64_t kv_group = 1);

#if defined(__CUDACC__)
#define SRT_ATTENTION_HD __host__ __device__
#else
#define SRT_ATTENTION_HD
#endif

inline constexpr int kAttentionMaxLead = 8;  // leading (batch, head, ...) dims of the output

// Where batch index b (row-major over the output's leading dims) starts in each input: sum over the
// leading dims of idx_i(b) * stride (0 on broadcast dims). Plain data, passed by value to CUDA.
struct AttentionBatchMap {
  struct Offsets {
    int64_t q, k, v, mask, y, key_mask;
  };
  int rank = 0;
  int64_t kv_group = 1;  // K / V offsets use head index / kv_group on the last leading dim
  int64_t dims[kAttentionMaxLead] = {};
  int64_t q[kAttentionMaxLead] = {}, k[kAttentionMaxLead] = {}, v[kAttentionMaxLead] = {},
          mask[kAttentionMaxLead] = {}, y[kAttentionMaxLead] = {}, key_mask[kAttentionMaxLead] = {};

  // Index: the type of the index arithmetic. The Hopper kernel's producer thread passes uint32_t
  // (its batch indices stay below 2^31): a 64-bit division is a long call that needs more
  // registers than that thread keeps.
  template <typename Index = int64_t>
  SRT_ATTENTION_HD Offsets offsets(Index b) const {
    Offsets o{0, 0, 0, 0, 0, 0};
    for (int i = rank - 1; i >= 0; --i) {
      const Index d = static_cast<Index>(dims[i]);
      const int64_t idx = static_cast<int64_t>(b % d);
      b /= d;
      o.q += idx * q[i];
      const int64_t kv_idx =
          i == rank - 1 ? static_cast<int64_t>(static_cast<Index>(idx) / static_cast<Index>(kv_group)) : idx;
      o.k += kv_idx * k[i];
      o.v += kv_idx * v[i];
      o.mask += idx * mask[i];
      o.y += idx * y[i];
      o.key_mask += idx * key_mask[i];
    }
    return o;
  }
};

// Static geometry for the kernels.
struct AttentionGeometry {
  int64_t sq = 0, skv = 0, d = 0, dv = 0;
  int64_t batch = 1;                    // product of the output's leading dims
  AttentionBatchMap map;
  int64_t k_key = 0, k_dim = 0;        // K element (key j, dim c) at j * k_key + c * k_dim
  int64_t q_row = 0, v_row = 0, y_row = 0;  // elements between consecutive rows of Q, V and Y
  int64_t mask_row = 0, mask_col = 0;  // mask strides along Sq and Skv (0 = broadcast)
  AttentionMask mask = AttentionMask::kNone;
  int key_mask_bytes = 0;  // element size of key_mask (1, 2, 4 or 8; any nonzero bytes = nonzero), 0 = none
  int64_t causal_offset() const { return skv - sq; }
};

// The keys [lo, hi) that query i may see under causal and window (key_mask aside), for offset
// Skv - Sq; empty (lo >= hi) when it sees none.
struct KeyBounds {
  int64_t lo, hi;
};
SRT_ATTENTION_HD inline KeyBounds key_bounds(int64_t i, int64_t offset, int64_t skv, bool causal, int64_t window) {
  int64_t hi = causal ? i + offset + 1 : skv;
  hi = hi < 0 ? 0 : (hi > skv ? skv : hi);
  int64_t lo = window > 0 ? i + offset - window + 1 : 0;
  lo = lo < 0 ? 0 : lo;
  return {lo, hi};
}

// Geometry of a kernel call (static dims); checks dtypes as the shape rule does. More than
// kAttentionMaxLead leading dims is kUnsupported.
Result<AttentionGeometry> attention_geometry(const KernelContext& ctx, const AttentionAttrs& attrs);

}  // namespace streamrt::ops

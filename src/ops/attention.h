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
// Attributes: scale (float, default 1/sqrt(D)); causal (int): key j is masked for query i when
//          j > i + (Skv - Sq), the bottom-right alignment that lets Sq < Skv decode against a
//          cache; k_transposed (int); mask_fill (float, default -inf): exporters' fills are -inf,
//          -1e4 or the type's lowest; a finite one makes a fully masked row average V as the
//          unfused Where-Softmax does.
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
// Output:  Y [..., Sq, Dv] in Q's type. Scores, softmax (max-subtracted) and sums are float32. A
//          query with no unmasked key gets NaN, as Softmax over a row of -inf does; Skv = 0 gives 0.
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
  int64_t kv_capacity = 0;  // 0: K and V dense
};

// Reads the attributes for head dim `d` (scale defaults to 1/sqrt(d)); rejects ONNX Attention
// features this op does not implement.
Result<AttentionAttrs> attention_attrs(const ir::Node& node, int64_t d);

// The output dims for input dims that may hold -1 (mask may be null); errors name the node.
Result<Dims> attention_output_dims(const ir::Node& node, const Dims& q, const Dims& k, const Dims& v,
                                   const Dims* mask, bool k_transposed, int bshd = 0, int64_t kv_group = 1);

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
    int64_t q, k, v, mask, y;
  };
  int rank = 0;
  int64_t kv_group = 1;  // K / V offsets use head index / kv_group on the last leading dim
  int64_t dims[kAttentionMaxLead] = {};
  int64_t q[kAttentionMaxLead] = {}, k[kAttentionMaxLead] = {}, v[kAttentionMaxLead] = {},
          mask[kAttentionMaxLead] = {}, y[kAttentionMaxLead] = {};

  SRT_ATTENTION_HD Offsets offsets(int64_t b) const {
    Offsets o{0, 0, 0, 0, 0};
    for (int i = rank - 1; i >= 0; --i) {
      const int64_t idx = b % dims[i];
      b /= dims[i];
      o.q += idx * q[i];
      const int64_t kv_idx = i == rank - 1 ? idx / kv_group : idx;
      o.k += kv_idx * k[i];
      o.v += kv_idx * v[i];
      o.mask += idx * mask[i];
      o.y += idx * y[i];
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
  int64_t causal_offset() const { return skv - sq; }
};

// Geometry of a kernel call (static dims); checks dtypes as the shape rule does. More than
// kAttentionMaxLead leading dims is kUnsupported.
Result<AttentionGeometry> attention_geometry(const KernelContext& ctx, const AttentionAttrs& attrs);

}  // namespace streamrt::ops

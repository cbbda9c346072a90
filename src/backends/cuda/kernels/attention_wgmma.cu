// The Hopper Attention kernel (sm_90a, float16 / bfloat16, D == Dv in {64, 128, 256}): the
// flash-attention loop of attention_tc.cu with warpgroup MMAs (wgmma) and TMA copies, for prefill.
//  - A block is a producer warpgroup and two or three consumer warpgroups. The producer gives up
//    its registers (setmaxnreg) and one of its threads copies the block's Q rows and its K and V
//    tiles with TMA into Q buffers and a ring of slots, each with a "full" mbarrier (the copy
//    engine's bytes landed) and an "empty" one (every consumer is done with it).
//  - Head sizes 64 and 128 run persistent blocks (Cfg::kPersistent): one an SM, each taking query
//    tiles in turn, longest first, in rounds of alternating direction (Schedule). Two Q buffers let
//    the next tile's rows land while this one's run, and the ring runs on across tiles, so the
//    producer fetches the next tile's keys while the consumers store this one's rows: 2-13 % faster
//    than a block a tile (head size 128 even with a ring of 2 slots instead of 3; 2026-11-29,
//    docs/benchmarks.md). Head size 256 has no room for a second Q buffer.
//  - The consumers (240 registers a thread with two, 160 with three) take 64 query rows each:
//    S = Q K^T as m64nKk16 MMAs with Q and K read from shared memory (K-major descriptors),
//    O += P V as m64nDk16 MMAs with P from registers (the S accumulator layout is the A fragment
//    layout, as with mma.sync) and V read N-major. One warpgroup instruction does what 8-16
//    mma.sync calls and their ldmatrix loads did.
//  - The consumers take turns on the tensor cores through a ring of named barriers, one's softmax
//    running while the others' MMAs do; and a consumer's own softmax of S_t runs while its
//    P_{t-1} V_{t-1} does (two commit groups a step). Head size 64 takes a third consumer on long
//    rows: its exponentials take as long as its MMAs.
//  - Q and K / V tiles sit in shared memory in 128-byte-swizzled rows (the layout TMA's 128-byte
//    swizzle writes and the MMA descriptors name): a tile is D / 64 column blocks of [rows][64
//    elements], 16-byte chunk c of row r at chunk c ^ (r % 8). Keys past Skv arrive as zeros (the
//    TMA map's bounds).
//  - Masks, key_mask flags, causal and window limits, the online softmax (exp2 of raw scores) and
//    the output rows are attention_tile.cuh's, shared with attention_tc.cu.
// Taken where Q, K and V are 16-byte rows that a TMA map can address per batch index (bshd and
// bhsd layouts, each map under 2^31 elements) and there are enough query rows (prefill;
// launch_warpgroup says how many); decode, other layouts and other GPUs keep attention_tc.cu.
// RuntimeOptions::attention_kernel = kMma turns it off for A/B runs, kWgmma takes it below its
// length rules too. Compiled for sm_90a
// alone (CMakeLists.txt). Keep every wgmma out of conditionals: ptxas serializes an MMA under a
// branch it cannot prove warp-uniform and says so only at -Xptxas -v ("C7520 ... serialized"),
// and likewise where other instructions define an MMA's input registers inside its pipeline stage
// (C7513: zeroing P on a branch of its own did that, 30 % slower); ctest cuda_wgmma_not_serialized
// checks both.
#include <algorithm>
#include <optional>

#include "backends/cuda/kernels/attention_kv_slabs.h"
#include "backends/cuda/kernels/attention_tile.cuh"
#include "backends/cuda/kernels/mma_util.cuh"
#include "backends/cuda/kernels/tma_pipeline.cuh"
#include "backends/cuda/kernels/wgmma.cuh"
#include "backends/cuda/kernels/wgmma_layout.h"
#include "backends/cuda/tma/tma_map.h"

namespace streamrt::cuda::attention {
namespace {

using wgmma::descriptor;
using wgmma::swizzled;

// A producer and kConsumers consumer warpgroups of 64 query rows each, kBc-key tiles, a ring of
// kStages slots (slot u holds K_u and V_{u-1}: what step T_u reads). Registers: the producer keeps
// 24 a thread, the consumers share the rest of the block's pool (two: 240, three: 160).
// kPersistent: one block an SM taking query tiles in turn (Schedule), with two Q buffers so the
// next tile's rows land while this one's run, and a tile of zeros for each tile's first P V (the
// ring's V slots then hold other tiles' values); else a block a query tile.
template <int kD_, int kBc_, int kStages_, int kConsumers_ = 2, bool kPersistent_ = false>
struct Cfg {
  static constexpr int kD = kD_;
  static constexpr int kConsumers = kConsumers_;
  static constexpr bool kPersistent = kPersistent_;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kBr = 64 * kConsumers;
  static constexpr int kBc = kBc_;
  static constexpr int kStages = kStages_;
  static constexpr int kFlagWords = kBc / 32;
  static constexpr int kQBuffers = kPersistent ? 2 : 1;
  static constexpr uint32_t kQBytes = kBr * kD * 2;
  static constexpr uint32_t kTileBytes = kBc * kD * 2;
  // Q buffers, the K ring, the V ring, then (persistent) the zero V tile; each 1 KiB-aligned.
  static constexpr uint32_t kRingBytes = kQBuffers * kQBytes + (2 * kStages + (kPersistent ? 1 : 0)) * kTileBytes;
  // A slot's key_mask flags: kFlagWords words and their AND.
  static constexpr uint32_t kFlagSlotBytes = 32;
  static_assert(4 * (kFlagWords + 1) <= kFlagSlotBytes);
  static constexpr int kBarriers = 2 * kStages + 2 * kQBuffers;  // full / empty a slot and a Q buffer
  // 1 KiB of slack for the 1 KiB alignment of the tiles, then the mbarriers, then the flags.
  static constexpr size_t kBytes = kRingBytes + 1024 + 8 * kBarriers + kFlagSlotBytes * kStages;
  // setmaxnreg moves registers within what the block was launched with: kThreads times the count
  // ptxas gives each thread under __launch_bounds__(kThreads, 1) (65536 / kThreads, a multiple of
  // 8: 168 for 384 threads, so 64512, not 64 Ki). Asking for more than that pool makes the
  // consumers' setmaxnreg.inc wait forever (a producer of 32 registers beside two consumers of 240
  // hung the kernel).
  static constexpr int kPool = kThreads * (65536 / kThreads / 8 * 8);
  // Three consumers: the producer's second warp reads the key_mask flags (produce_flags), which
  // needs 32 registers; with two, the consumers read them (KeyFlags::read) and keep 240 registers
  // (the flag warp measured 2-3 % slower at head size 128, 6-8 % faster at head size 64 with three
  // consumers: 2026-11-29, docs/benchmarks.md).
  static constexpr bool kFlagWarp = kConsumers == 3;
  static constexpr int kProducerRegs = kFlagWarp ? 32 : 24;
  static constexpr int kShare = (kPool - 128 * kProducerRegs) / (128 * kConsumers) / 8 * 8;
  static constexpr int kConsumerRegs = kShare > 240 ? 240 : kShare;
  static_assert(128 * kProducerRegs + 128 * kConsumers * kConsumerRegs <= kPool);
};

// Where the block's shared memory lies (Cfg's order): one base register, every region a constant
// offset from it (registers are short in the producer's warps and at three consumers).
template <class C>
struct Smem {
  uint32_t base;
  __device__ explicit Smem(const uint8_t* raw) : base((smem_addr(raw) + 1023u) & ~1023u) {}
  __device__ uint32_t q() const { return base; }
  __device__ uint32_t k_ring() const { return base + C::kQBuffers * C::kQBytes; }
  __device__ uint32_t v_ring() const { return k_ring() + C::kStages * C::kTileBytes; }
  // The V tile each item's first step reads: persistent blocks have their own, else slot 0's
  // (which the producer never fills for step 0) is zeroed.
  static constexpr uint32_t kZeroFromV = C::kPersistent ? C::kStages * C::kTileBytes : 0;
  __device__ uint32_t v_zero() const { return v_ring() + kZeroFromV; }
  __device__ uint32_t full() const { return base + C::kRingBytes; }
  __device__ uint32_t empty() const { return full() + 8 * C::kStages; }
  __device__ uint32_t q_full() const { return empty() + 8 * C::kStages; }
  __device__ uint32_t q_empty() const { return q_full() + 8 * C::kQBuffers; }
  __device__ uint32_t flags() const { return q_empty() + 8 * C::kQBuffers; }
};

// The blocks' work: `items` query tiles, q_tiles for each of `packed` batch indices, the longest
// rows first (item w: tile q_tiles - 1 - w / packed of batch index w % packed). Block b of G takes
// items b, 2G - 1 - b, 2G + b, ... (the rounds alternate direction): with items longest first each
// block's total stays within about one round's spread of the others'. G == items is a block an item.
// 32-bit index arithmetic (the launcher keeps items below 2^31): the producer's thread has 24-32
// registers, and a 64-bit division needs more.
struct Schedule {
  uint32_t items, packed, q_tiles;
  __device__ uint32_t item(uint32_t round) const {
    const uint32_t g = gridDim.x, b = blockIdx.x;
    return round * g + (round % 2 == 0 ? b : g - 1 - b);
  }
};

// One query tile: its first row (with group 1 its first query), where its batch index starts, the
// key tiles its rows reach.
struct Item {
  int q0, tile_begin, n;
  Offsets okv;
};
// One past the last key tile that rows up to last_i reach (their causal limit, Skv). bounds() in 32
// bits: launch_warpgroup keeps Sq and Skv below 2^30.
template <class C>
__device__ __forceinline__ int key_tile_end(const Params& p, int last_i) {
  const int skv = static_cast<int>(p.skv);
  const int hi = p.causal ? max(0, min(skv, last_i + static_cast<int>(p.causal_offset) + 1)) : skv;
  return (hi + C::kBc - 1) / C::kBc;
}

template <class C>
__device__ __forceinline__ Item item_at(const Params& p, const Schedule& sched, uint32_t w) {
  Item it;
  it.q0 = static_cast<int>(sched.q_tiles - 1 - w / sched.packed) * C::kBr;
  it.okv = p.map.offsets<uint32_t>(w % sched.packed);  // group 1: a batch index a packed batch
  const int last_i = (it.q0 + C::kBr < p.rows ? it.q0 + C::kBr : p.rows) - 1;
  const int window = static_cast<int>(p.window < p.skv ? p.window : p.skv);  // clamped to Skv
  const int lo = window > 0 ? max(0, it.q0 + static_cast<int>(p.causal_offset) - window + 1) : 0;
  const int tile_end = key_tile_end<C>(p, last_i);
  it.tile_begin = lo / C::kBc;
  it.n = tile_end > it.tile_begin ? tile_end - it.tile_begin : 0;
  return it;
}

// f(round, item index, item) for each of the block's items in turn (round r: the r-th item of the block).
template <class C, class F>
__device__ __forceinline__ void for_each_item(const Params& p, const Schedule& sched, F&& f) {
  for (uint32_t r = 0;; ++r) {
    const uint32_t w = sched.item(r);
    if (w >= sched.items) return;
    f(r, w, item_at<C>(p, sched, w));
  }
}

// A thread's two rows and their softmax state: running max (log2 units of the scaled score) and sums.
struct RowState {
  int r0, r1;
  TileRows rows;
  float m0, m1, l0, l1;
};

// S (this warpgroup's 64 rows x 128 keys) = Q K^T: issued, not waited for. `qd` / `kd` are the
// descriptors of the warpgroup's Q rows and of the K tile; a k-step moves their start address
// (the low field, in 16-byte units) 32 bytes inside a 128-byte row, or a column block on.
template <typename T, class C>
__device__ __forceinline__ void issue_scores(float (&s)[C::kBc / 8][4], uint64_t qd, uint64_t kd) {
  float(&sf)[C::kBc / 2] = reinterpret_cast<float(&)[C::kBc / 2]>(s);
#pragma unroll
  for (int kk = 0; kk < C::kD / 16; ++kk) {
    const uint32_t col = (kk % 4) * 32;
    const uint64_t a = qd + (((kk / 4) * C::kBr * 128 + col) >> 4);
    const uint64_t b = kd + (((kk / 4) * C::kBc * 128 + col) >> 4);
    if (kk == 0)
      wgmma::ss_first<T, C::kBc>(sf, a, b);
    else
      wgmma::ss<T, C::kBc>(sf, a, b, 1);
  }
}
// O += P V for one V tile (`vd` its descriptor, N-major: the next 64 columns one column block on, the
// leading offset; the next 8 keys 1 KiB on): issued, not waited for. Head size 256 takes two MMAs
// of 128 columns a k-step, two column blocks apart.
template <typename T, class C>
__device__ __forceinline__ void issue_pv(float (&o)[C::kD / 8][4], const uint32_t (&pa)[C::kBc / 16][4], uint64_t vd) {
  constexpr int kN = C::kD > 128 ? 128 : C::kD;
#pragma unroll
  for (int h = 0; h < C::kD / kN; ++h) {
    float(&of)[kN / 2] = *reinterpret_cast<float(*)[kN / 2]>(&o[h * kN / 8][0]);
#pragma unroll
    for (int kc = 0; kc < C::kBc / 16; ++kc)
      wgmma::rs<T, kN>(of, pa[kc], vd + ((h * (kN / 64) * C::kBc * 128 + kc * 16 * 128) >> 4), 1);
  }
}

// The key_mask flags of a tile of keys: bit k % 32 of word k / 32 for key k0 + k (all on without a
// key_mask), and their AND. With the flag warp (Cfg::kFlagWarp and a key_mask) the producer's second
// warp has read them into the slot's flag words (produce_flags) and `load` takes them from shared
// memory; else `read` loads them between the tile's MMA issue and the wait for its scores, where
// their latency costs 6-13 % of the kernel (docs/benchmarks.md, eleventh session).
template <class C>
struct KeyFlags {
  uint32_t on[C::kFlagWords];
  uint32_t all_on;
  __device__ __forceinline__ void all() {
    all_on = ~0u;
#pragma unroll
    for (int w = 0; w < C::kFlagWords; ++w) on[w] = ~0u;
  }
  __device__ __forceinline__ void read(const Params& p, int64_t row, int k0) {
    all();
    if (p.key_mask) {
      key_flags<C::kFlagWords>(p, row, k0, on);
#pragma unroll
      for (int w = 0; w < C::kFlagWords; ++w) all_on &= on[w];
    }
  }
  __device__ __forceinline__ void load(uint32_t at) {
#pragma unroll
    for (int w = 0; w < C::kFlagWords; ++w)
      asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(on[w]) : "r"(at + 4 * w) : "memory");
    asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(all_on) : "r"(at + 4 * C::kFlagWords) : "memory");
  }
};

// O rescaled and P rounded to T as the A fragments of the next P V (keys 16kc.. are S blocks 2kc and
// 2kc + 1).
template <typename T, class C>
__device__ __forceinline__ void next_pv_operand(const float (&s)[C::kBc / 8][4], float alpha0, float alpha1,
                                                float (&o)[C::kD / 8][4], uint32_t (&pa)[C::kBc / 16][4]) {
  rescale_rows(o, alpha0, alpha1);
#pragma unroll
  for (int nb = 0; nb < C::kBc / 8; ++nb) {
    pa[nb / 2][(nb % 2) * 2] = pack_pair<T>(s[nb][0], s[nb][1]);
    pa[nb / 2][(nb % 2) * 2 + 1] = pack_pair<T>(s[nb][2], s[nb][3]);
  }
}

// What a consumer's step does once its MMAs are issued: the online softmax of S_t (keys k0..;
// masked when kMask) while this warpgroup's own P_{t-1} V_{t-1} still runs (S_t is the first commit
// group), then, that MMA done, the slot handed back (`release`), O rescaled and the next P. The
// caller picks kMask per tile so each instantiation is one straight path: with masked and plain
// tiles merging before the softmax, ptxas copied all of S into other registers every step (64 moves
// a thread, ncu).
template <typename T, class C, bool kMasked, bool kMask, class Release>
__device__ __forceinline__ void finish_step(const Params& p, const KeyFlags<C>& f, RowState& st,
                                            float (&s)[C::kBc / 8][4], float (&o)[C::kD / 8][4],
                                            uint32_t (&pa)[C::kBc / 16][4], int k0, Release release) {
  float alpha0, alpha1;
  wgmma::wait<1>();
  wgmma::fence_regs(reinterpret_cast<float(&)[C::kBc / 2]>(s));
  if constexpr (kMask) mask_tile<T, kMasked>(p, st.rows, f.on, k0, s);
  softmax_scores(s, st.m0, st.m1, st.l0, st.l1, p.scale * kLog2e, alpha0, alpha1);
  wgmma::wait<0>();
  wgmma::fence_regs(reinterpret_cast<float(&)[C::kD / 2]>(o));
  wgmma::fence_operand(reinterpret_cast<uint32_t(&)[C::kBc / 4]>(pa));
  release();
  next_pv_operand<T, C>(s, alpha0, alpha1, o, pa);
}

// The producer's copying thread, for each of the block's items: once the Q buffer's readers of the
// item before last are done, the item's Q rows into it (rows past Sq read as zeros); then for step
// u, once the slot's readers of the round before are done, K_u and V_{u-1} into the next ring slot
// (keys past Skv read as zeros; K_n is past the last tile and only keeps the consumers' MMAs
// unconditional). The ring's slot and phase run on across items.
template <class C>
__device__ __forceinline__ void produce(const CUtensorMap* q_map, const CUtensorMap* k_map, const CUtensorMap* v_map,
                                        const Params& p, const Schedule& sched, const Smem<C>& sm) {
  int slot = 0;
  uint32_t phase = 0;
  for_each_item<C>(p, sched, [&](uint32_t r, uint32_t, const Item& it) {
    const int qb = static_cast<int>(r % C::kQBuffers);
    const uint32_t q_bar = sm.q_full() + 8 * qb;
    tma::mbar_wait(sm.q_empty() + 8 * qb, ((r / C::kQBuffers) & 1) ^ 1u);
    tma::mbar_arrive_expect_tx(q_bar, C::kQBytes);
    const KvStart qs = kv_start<uint32_t>(it.okv.q, p.q_row, p.sq), ks = kv_start<uint32_t>(it.okv.k, p.k_key, p.skv),
                  vs = kv_start<uint32_t>(it.okv.v, p.v_row, p.skv);
#pragma unroll
    for (int cb = 0; cb < C::kD / 64; ++cb)  // tile_map kept columns and slabs within int
      tma::load_3d(sm.q() + qb * C::kQBytes + cb * C::kBr * 128, q_map, static_cast<int>(qs.col) + cb * 64, it.q0,
                   static_cast<int>(qs.slab), q_bar);
    const int key0 = it.tile_begin * C::kBc;
    for (int u = 0; u <= it.n; ++u) {
      tma::mbar_wait(sm.empty() + 8 * slot, phase ^ 1u);
      const uint32_t bar = sm.full() + 8 * slot;
      tma::mbar_arrive_expect_tx(bar, u >= 1 ? 2 * C::kTileBytes : C::kTileBytes);
#pragma unroll
      for (int cb = 0; cb < C::kD / 64; ++cb) {
        const uint32_t at = slot * C::kTileBytes + cb * C::kBc * 128;
        const int kc = static_cast<int>(ks.col) + cb * 64, vc = static_cast<int>(vs.col) + cb * 64;
        tma::load_3d(sm.k_ring() + at, k_map, kc, key0 + u * C::kBc, static_cast<int>(ks.slab), bar);
        if (u >= 1) tma::load_3d(sm.v_ring() + at, v_map, vc, key0 + (u - 1) * C::kBc, static_cast<int>(vs.slab), bar);
      }
      if (++slot == C::kStages) slot = 0, phase ^= 1u;
    }
  });
}

// The producer's second warp: for each item and step u, once the slot is empty, the key_mask flags
// of tile u into its flag words (key_flags: the tile's loads issued together, then one ballot a
// word), then this warp's arrival on the slot's full barrier (the copies' thread gives the other).
// It runs stages ahead of the flags' readers. Only with a key_mask.
template <class C>
__device__ __forceinline__ void produce_flags(const Params& p, const Schedule& sched, const Smem<C>& sm) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  int slot = 0;
  uint32_t phase = 0;
  for_each_item<C>(p, sched, [&](uint32_t, uint32_t, const Item& it) {
#pragma unroll 1
    for (int u = 0; u <= it.n; ++u) {
      tma::mbar_wait(sm.empty() + 8 * slot, phase ^ 1u);
      const uint32_t at = sm.flags() + C::kFlagSlotBytes * slot;
      uint32_t on[C::kFlagWords];
      key_flags<C::kFlagWords>(p, it.okv.key_mask, (it.tile_begin + u) * C::kBc, on);
      if (lane == 0) {
        uint32_t all_on = ~0u;
#pragma unroll
        for (int w2 = 0; w2 < C::kFlagWords; ++w2) {
          all_on &= on[w2];
          asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(at + 4 * w2), "r"(on[w2]) : "memory");
        }
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(at + 4 * C::kFlagWords), "r"(all_on) : "memory");
        tma::mbar_arrive(sm.full() + 8 * slot);
      }
      if (++slot == C::kStages) slot = 0, phase ^= 1u;
    }
  });
}

// A consumer warpgroup (cw: query rows q0 + 64 cw .. of each item) over the block's items.
template <typename T, class C, bool kMasked>
__device__ __forceinline__ void consume(const Params& p, const Schedule& sched, const Smem<C>& sm, int cw) {
  constexpr int kBc = C::kBc;
  const int warp = (threadIdx.x % 128) / 32, lane = threadIdx.x % 32;
  const bool flag_warp = C::kFlagWarp && p.key_mask != nullptr;
  const uint64_t kd0 = descriptor(sm.k_ring(), 16, 1024);
  const uint64_t vd0 = descriptor(sm.v_ring(), C::kBc * 128, 1024);
  float o[C::kD / 8][4];
  float s[kBc / 8][4];
  uint32_t pa[kBc / 16][4];
  // Turns, a ring: consumer c waits on named barrier 2 + c, then, its MMAs issued, lets consumer
  // c + 1 go. Consumer 0 goes first (the last consumer's arrival below) and takes the last
  // consumer's final arrival after the loop, so every barrier ends balanced.
  if (cw == C::kConsumers - 1) tma::named_arrive(2, 256);
  int slot = 0;
  uint32_t phase = 0;
  for_each_item<C>(p, sched, [&](uint32_t r, uint32_t w, const Item& it) {
    const int qb = static_cast<int>(r % C::kQBuffers);
    const int wrow = it.q0 + cw * 64;
    const bool active = wrow < p.rows;
    // This warpgroup's first and last query: tiles wholly inside their causal / window limits are
    // plain (the block's other rows may still need the mask there).
    const int c_first = wrow, c_last = (wrow + 63 < p.rows ? wrow + 63 : p.rows - 1);
    // The steps this warpgroup computes: T_0 .. T_nc, nc the key tiles its own rows reach; the item's
    // later steps only pass the turn and the slot on. Where an item spans more rows than a key tile
    // (head size 64's 192 rows of 128-key tiles, head size 256's 128 of 64) a causal item's first
    // rows reach fewer tiles than its last: ~1.5 of a 192-row item's 3 n MMA steps go. With kBr ==
    // kBc every warpgroup ends in the item's last tile.
    int nc = active ? it.n : -1;  // none without rows
    if constexpr (C::kBr > C::kBc)
      if (active) nc = min(it.n, max(0, key_tile_end<C>(p, c_last) - it.tile_begin));
    RowState st;
    st.r0 = wrow + warp * 16 + lane / 4;
    st.r1 = st.r0 + 8;
    st.rows = {st.r0, st.r1, st.r0 < p.rows, st.r1 < p.rows, 0, 0};
    if constexpr (kMasked) {
      if (st.rows.v0) st.rows.mask0 = packed_row(p, it.okv, st.r0).mask;
      if (st.rows.v1) st.rows.mask1 = packed_row(p, it.okv, st.r1).mask;
    }
    st.m0 = st.m1 = -INFINITY;
    st.l0 = st.l1 = 0.f;
#pragma unroll
    for (int nb = 0; nb < C::kD / 8; ++nb) o[nb][0] = o[nb][1] = o[nb][2] = o[nb][3] = 0.f;
#pragma unroll
    for (int kc = 0; kc < kBc / 16; ++kc) pa[kc][0] = pa[kc][1] = pa[kc][2] = pa[kc][3] = 0u;
    const uint64_t qd = descriptor(sm.q() + qb * C::kQBytes + cw * 64 * 128, 16, 1024);
    tma::mbar_wait(sm.q_full() + 8 * qb, static_cast<uint32_t>((r / C::kQBuffers) & 1));
    int t = 0;
    for (; t <= nc; ++t) {
      tma::mbar_wait(sm.full() + 8 * slot, phase);
      tma::named_sync(2 + cw, 256);
      // T_t: S_t = Q K_t^T and O += P_{t-1} V_{t-1}, issued together at every step: an MMA under a
      // branch ptxas cannot prove uniform gets serialized (its C7520). So T_nc also computes a score
      // tile nobody reads and T_0 adds P V with P = 0 from the zero tile.
      const uint64_t vd = vd0 + (((t == 0 ? Smem<C>::kZeroFromV : slot * C::kTileBytes)) >> 4);
      wgmma::fence();
      issue_scores<T, C>(s, qd, kd0 + ((slot * C::kTileBytes) >> 4));
      wgmma::commit();
      issue_pv<T, C>(o, pa, vd);
      wgmma::commit();
      tma::named_arrive(2 + (cw + 1) % C::kConsumers, 256);
      KeyFlags<C> flags;
      const int k0 = (it.tile_begin + t) * kBc;
      if constexpr (!C::kFlagWarp)
        flags.read(p, it.okv.key_mask, k0);
      else if (flag_warp)
        flags.load(sm.flags() + C::kFlagSlotBytes * slot);
      else
        flags.all();  // no key_mask (read()'s global loads would spill at 160 registers)
      const uint32_t done_slot = sm.empty() + 8 * slot;
      const auto release = [&] {
        __syncwarp();
        if (lane == 0) tma::mbar_arrive(done_slot);
      };
      // Tiles past this warpgroup's causal limit take the masked path (P = 0): zeroing P on a path
      // of its own made ptxas serialize every MMA of the kernel (C7513, 30 % slower).
      if (t == nc) {  // no X_t: the MMAs' wait, the slot handed back
        wgmma::wait<0>();
        wgmma::fence_regs(reinterpret_cast<float(&)[kBc / 2]>(s));
        wgmma::fence_regs(reinterpret_cast<float(&)[C::kD / 2]>(o));
        release();
      } else if (plain_tile<kMasked, kBc>(p, k0, flags.all_on, c_first, c_last)) {
        finish_step<T, C, kMasked, false>(p, flags, st, s, o, pa, k0, release);
      } else {
        finish_step<T, C, kMasked, true>(p, flags, st, s, o, pa, k0, release);
      }
      if (++slot == C::kStages) slot = 0, phase ^= 1u;
    }
    for (; t <= it.n; ++t) {  // past this warpgroup's reach: the turn passed on, the slot handed back once filled
      tma::mbar_wait(sm.full() + 8 * slot, phase);  // an earlier arrival would count towards the slot's last use
      tma::named_sync(2 + cw, 256);
      tma::named_arrive(2 + (cw + 1) % C::kConsumers, 256);
      __syncwarp();
      if (lane == 0) tma::mbar_arrive(sm.empty() + 8 * slot);
      if (++slot == C::kStages) slot = 0, phase ^= 1u;
    }
    // Every MMA of the item has finished reading Q (T_nc's wait): the buffer back to the producer.
    __syncwarp();
    if (lane == 0) tma::mbar_arrive(sm.q_empty() + 8 * qb);
    if (active) {
#pragma unroll
      for (int off = 1; off <= 2; off <<= 1) {
        st.l0 += __shfl_xor_sync(0xffffffffu, st.l0, off);
        st.l1 += __shfl_xor_sync(0xffffffffu, st.l1, off);
      }
      // The offsets again rather than kept through the loop: registers are short at three consumers.
      const Offsets okv = p.map.offsets<uint32_t>(w % sched.packed);
      store_rows<T, C::kD>(p, okv, st.r0, st.r1, st.rows.v0, st.rows.v1, o, st.l0, st.l1, lane % 4);
    }
  });
  if (cw == 0) tma::named_sync(2, 256);
}

template <typename T, class C, bool kMasked>
__global__ void __launch_bounds__(C::kThreads, 1)
    attention_wgmma(const __grid_constant__ CUtensorMap q_map, const __grid_constant__ CUtensorMap k_map,
                    const __grid_constant__ CUtensorMap v_map, const Params p, const Schedule sched) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ uint8_t smem_raw[];
  const Smem<C> sm(smem_raw);
  // Warp-uniform to ptxas (a shuffle result), so the MMAs below sit under no divergent branch.
  const int wg = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 128), 0);
  const bool flag_warp = C::kFlagWarp && p.key_mask != nullptr;
  if (threadIdx.x == 0) {
    for (int i = 0; i < C::kStages; ++i) {
      tma::mbar_init(sm.full() + 8 * i, flag_warp ? 2 : 1);  // the copies' thread (and the flags' warp)
      tma::mbar_init(sm.empty() + 8 * i, 4 * C::kConsumers);  // a lane of each consumer warp
    }
    for (int i = 0; i < C::kQBuffers; ++i) {
      tma::mbar_init(sm.q_full() + 8 * i, 1);
      tma::mbar_init(sm.q_empty() + 8 * i, 4 * C::kConsumers);
    }
    tma::mbar_init_fence();
  }
  // The zero V tile, what each item's T_0 reads (P = 0 there): zeros, so no stale NaN reaches O.
  for (uint32_t at = threadIdx.x * 16u; at < C::kTileBytes; at += C::kThreads * 16u)
    asm volatile("st.shared.v4.b32 [%0], {%1, %1, %1, %1};\n" ::"r"(sm.v_zero() + at), "r"(0));
  wgmma::fence_proxy_shared();
  __syncthreads();

  if (wg == 0) {
    tma::regs_decrease<C::kProducerRegs>();
    // Warp-uniform branches (a shuffle result), so ptxas allocates each role's registers apart.
    const int warp = __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x / 32), 0);
    if (warp == 0) {
      if (threadIdx.x == 0) produce<C>(&q_map, &k_map, &v_map, p, sched, sm);
    } else if (warp == 1 && flag_warp) {
      produce_flags<C>(p, sched, sm);
    }
    return;
  }
  tma::regs_increase<C::kConsumerRegs>();
  consume<T, C, kMasked>(p, sched, sm, wg - 1);
#else
  __trap();
#endif
}

bool aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// The TMA map of Q, K or V (attention_kv_slabs.h) in boxes of `box_rows` rows, or none where the
// layout does not fit it.
Result<std::optional<CUtensorMap>> tile_map(const void* base, int64_t row, Operand which, int box_rows,
                                            const Params& p) {
  const int64_t len = which == Operand::kQuery ? p.sq : p.skv;
  const int64_t slabs = kv_slabs(p.map, p.batch, row, len, p.d, which);
  // The kernel finds a batch index's slab with 32-bit division (Schedule).
  if (slabs == 0 || slabs * row * len > INT32_MAX) return std::optional<CUtensorMap>();
  tma::TiledMap16 m;
  m.base = base;
  m.rank = 3;
  m.dims[0] = static_cast<uint64_t>(row), m.dims[1] = static_cast<uint64_t>(len);
  m.dims[2] = static_cast<uint64_t>(slabs);
  m.strides[1] = static_cast<uint64_t>(row), m.strides[2] = static_cast<uint64_t>(row * len);
  m.box[0] = 64, m.box[1] = static_cast<uint32_t>(box_rows), m.box[2] = 1;
  Result<CUtensorMap> map = tma::encode_swizzled_128(m);
  if (!map.ok() && map.status().code() == StatusCode::kUnsupported) return std::optional<CUtensorMap>();
  SRT_RETURN_IF_ERROR(map.status());
  return std::optional<CUtensorMap>(*map);
}

struct Maps {
  CUtensorMap q, k, v;
};

template <typename T, class C, bool kMasked>
Status launch(CudaKernelContext& ctx, const Maps& maps, const Params& p, const Schedule& sched, int64_t blocks) {
  SRT_RETURN_IF_ERROR((allow_dynamic_smem<attention_wgmma<T, C, kMasked>>(static_cast<int>(C::kBytes))));
  attention_wgmma<T, C, kMasked>
      <<<static_cast<unsigned>(blocks), C::kThreads, C::kBytes, ctx.stream()>>>(maps.q, maps.k, maps.v, p, sched);
  SRT_CUDA_LAUNCH("attention_wgmma");
  return ok_status();
}

template <typename T, class C>
Result<bool> launch_config(CudaKernelContext& ctx, Params p) {
  SRT_ASSIGN_OR_RETURN(const SmemLimits limits, smem_limits());
  if (C::kBytes > static_cast<size_t>(limits.block_optin)) return false;
  // Q, K and V as 16-byte rows for every batch index (the layout real exports give).
  bool rows = p.k_dim == 1 && p.k_key % 8 == 0 && aligned16(p.k) && p.v_row % 8 == 0 && aligned16(p.v) &&
              p.q_row % 8 == 0 && aligned16(p.q);
  for (int i = 0; i < p.map.rank; ++i) rows = rows && p.map.k[i] % 8 == 0 && p.map.v[i] % 8 == 0 && p.map.q[i] % 8 == 0;
  if (!rows) return false;
  if (p.sq > INT32_MAX / 2) return false;
  p.group = 1;  // one query head a block row: no packing (that is decode's), no key splits
  p.rows = static_cast<int>(p.sq);
  const int64_t q_tiles = (p.rows + C::kBr - 1) / C::kBr;
  const int64_t items = p.batch * q_tiles;
  if (items > INT32_MAX || items == 0) return false;
  SRT_ASSIGN_OR_RETURN(const std::optional<CUtensorMap> q_map, tile_map(p.q, p.q_row, Operand::kQuery, C::kBr, p));
  SRT_ASSIGN_OR_RETURN(const std::optional<CUtensorMap> k_map, tile_map(p.k, p.k_key, Operand::kKey, C::kBc, p));
  SRT_ASSIGN_OR_RETURN(const std::optional<CUtensorMap> v_map, tile_map(p.v, p.v_row, Operand::kValue, C::kBc, p));
  if (!q_map || !k_map || !v_map) return false;
  const Maps maps{*q_map, *k_map, *v_map};
  const Schedule sched{static_cast<uint32_t>(items), static_cast<uint32_t>(p.batch), static_cast<uint32_t>(q_tiles)};
  const int64_t sms = ctx.resources().sm_count;
  const int64_t blocks = C::kPersistent && sms > 0 ? std::min(items, sms) : items;
  if (p.mask_kind == kNoMask) {
    SRT_RETURN_IF_ERROR((launch<T, C, false>(ctx, maps, p, sched, blocks)));
  } else if constexpr (C::kConsumers == 2) {  // three consumers' 160 registers spill the mask reads
    SRT_RETURN_IF_ERROR((launch<T, C, true>(ctx, maps, p, sched, blocks)));
  } else {
    return false;
  }
  return true;
}

}  // namespace

template <typename T>
Result<bool> launch_warpgroup(CudaKernelContext& ctx, Params p, bool any_length) {
#if STREAMRT_ATTENTION_WGMMA
  // Head sizes 128 and 256 from 64 query rows, 64 from 2048: at 512 rows attention_tc.cu was as
  // fast (batch 1) or faster (batch 8: its three 4-warp blocks an SM), from 2048 this one is
  // (2026-11-29, docs/benchmarks.md). Prefill only (decode packs a few rows; attention_tc.cu
  // splits its keys).
  if ((p.d != 64 && p.d != 128 && p.d != 256) || p.dv != p.d || p.sq < 64 || !(p.scale > 0.f) ||
      p.skv > INT32_MAX / 2)
    return false;
  if (p.d == 64 && p.sq < 2048 && !any_length) return false;
  if (reinterpret_cast<uintptr_t>(p.y) % 4 != 0 || p.y_row % 2 != 0) return false;
  for (int i = 0; i < p.map.rank; ++i)
    if (p.map.y[i] % 2 != 0) return false;
  const CudaResources& res = ctx.resources();
  if (res.cc_major != 9 || res.cc_minor != 0) return false;  // sm_90a code runs there only
  // 128-key tiles (64 at head size 256) and as many ring slots as shared memory holds (227 KiB)
  // beside the persistent blocks' second Q buffer and zero tile. Head size 64 with three consumers
  // takes 5 slots (full 8192: 2 % faster than 4, causal the same; 2026-11-29, docs/benchmarks.md).
  if (p.d == 64) {
    // Three consumers (192-row blocks) where a row sees 4096 keys or more on average: 4-15 % faster
    // there, 3-20 % slower at 2048 (2026-11-29, docs/benchmarks.md). The softmax's exponentials take
    // as long as the MMAs at head size 64, so a third warpgroup keeps the tensor cores fed.
    int64_t reach = p.causal ? p.skv / 2 : p.skv;
    if (p.window > 0 && p.window < reach) reach = p.window;
    if (reach >= 4096 && p.mask_kind == kNoMask) return launch_config<T, Cfg<64, 128, 5, 3, true>>(ctx, p);
    return launch_config<T, Cfg<64, 128, 4, 2, true>>(ctx, p);
  }
  if (p.d == 128) return launch_config<T, Cfg<128, 128, 2, 2, true>>(ctx, p);
  return launch_config<T, Cfg<256, 64, 2>>(ctx, p);
#else
  (void)any_length;
  return false;
#endif
}

template Result<bool> launch_warpgroup<__half>(CudaKernelContext&, Params, bool);
template Result<bool> launch_warpgroup<__nv_bfloat16>(CudaKernelContext&, Params, bool);

}  // namespace streamrt::cuda::attention

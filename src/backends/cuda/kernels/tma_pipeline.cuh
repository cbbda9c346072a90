// Device side of a TMA pipeline on sm_90a (attention_wgmma.cu, group_gemm.cu): mbarriers whose
// phases say a shared-memory slot is full (the copy engine's bytes landed) or empty (its readers are done),
// tensor copies that complete on such a barrier, named barriers for two warpgroups' turns, and
// warpgroup register reallocation. Compiled for sm_90a only (__CUDA_ARCH_FEAT_SM90_ALL); the
// bodies are empty elsewhere, where the kernels that call them trap first.
#pragma once

#include <cstdint>

namespace streamrt::cuda::tma {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define STREAMRT_TMA_ASM 1
#endif

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t arrivals) {
#ifdef STREAMRT_TMA_ASM
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
#endif
}
// After the initializing thread's inits, before the block barrier that publishes them.
__device__ __forceinline__ void mbar_init_fence() {
#ifdef STREAMRT_TMA_ASM
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// One arrival that also announces `bytes` the copies of this phase will deliver.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#ifdef STREAMRT_TMA_ASM
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
#ifdef STREAMRT_TMA_ASM
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
// Waits until the phase of parity `parity` has completed (a fresh barrier counts its phase "1" as
// completed, so a producer's first wait for an empty slot passes). The suspend-time hint lets the
// hardware park the warp until the phase completes: without it try_wait returns after a short
// system-defined time and the loop spins, and the producer's spinning took ~8 % of the issue slots
// of the scheduler it shares with two consumer warps (ncu, head size 64).
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#ifdef STREAMRT_TMA_ASM
  constexpr uint32_t kSuspendNs = 10000000;
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2, %3;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity), "n"(kSuspendNs)
        : "memory");
  } while (!done);
#endif
}

// A 3-D box of `map` at coordinates (c0, c1, c2), innermost first, into shared memory at `dst`
// (1 KiB-aligned for the 128-byte swizzle); its bytes count towards `bar`'s transaction.
__device__ __forceinline__ void load_3d(uint32_t dst, const void* map, int c0, int c1, int c2, uint32_t bar) {
#ifdef STREAMRT_TMA_ASM
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
      "[%5];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
      : "memory");
#endif
}

// A 2-D box of `map` at coordinates (c0, c1), innermost first: as load_3d.
__device__ __forceinline__ void load_2d(uint32_t dst, const void* map, int c0, int c1, uint32_t bar) {
#ifdef STREAMRT_TMA_ASM
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
      "[%4];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(c1), "r"(bar)
      : "memory");
#endif
}

// Named barrier `id` for `threads` threads: sync waits (and counts itself), arrive only counts.
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The calling warpgroup's register budget a thread: every thread of the warpgroup calls it.
template <int kRegs>
__device__ __forceinline__ void regs_increase() {
#ifdef STREAMRT_TMA_ASM
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}
template <int kRegs>
__device__ __forceinline__ void regs_decrease() {
#ifdef STREAMRT_TMA_ASM
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}

}  // namespace streamrt::cuda::tma

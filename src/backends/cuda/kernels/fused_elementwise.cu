// FusedElementwise on CUDA: the program (ops/fused_elementwise.h) evaluated for every output
// element, each input read once.
//  - Same-shape inputs (or scalars), aligned, a multiple of 8 elements (a gate's silu(a) * b, GELU):
//    a thread takes 8 elements and runs each instruction on all 8 at once, so decoding an
//    instruction costs an eighth of an element. The register file lives in shared memory (a
//    program indexes it at run time; in local memory it spilled past L1 and a 512 x 8192 gate ran
//    at 7 % of the DRAM bandwidth, instruction-bound), compacted on the host to the values alive
//    at once (three slots for the gate).
//    A gate (silu(a) * b, SwiGLU's: 15 % of a Llama prefill's GPU time) has a kernel of its own on
//    that path, the program's arithmetic written out: the same float operations in the same order,
//    two 16-byte loads of each input in flight a thread.
//  - Otherwise one element a thread through the broadcast indexer.
#include <mutex>

#include "backends/cuda/kernels/elementwise.cuh"
#include "backends/cuda/kernels/gate.h"
#include "ops/fused_elementwise.h"

namespace streamrt::cuda {
namespace {

using ops::fused::kMaxInputs;
using ops::fused::Program;

template <typename T>
struct Inputs {
  const T* ptr[kMaxInputs];
};

template <typename T, typename Idx>
__global__ void fused_kernel(T* y, Idx n, BroadcastIndexer<kMaxInputs> ix, Inputs<T> in, Program p) {
  float vals[kMaxInputs];
  for (Idx i = blockIdx.x * Idx(blockDim.x) + threadIdx.x; i < n; i += Idx(gridDim.x) * blockDim.x) {
    Idx off[kMaxInputs];
    ix.offsets(i, off);
#pragma unroll
    for (int k = 0; k < kMaxInputs; ++k)
      if (k < p.num_inputs) vals[k] = static_cast<float>(to_acc(in.ptr[k][off[k]]));
    y[i] = from_acc<T>(ops::fused::evaluate(p, vals));
  }
}

// Every input has the output's element count or is a scalar: no broadcast index arithmetic.
template <typename T, typename Idx>
__global__ void fused_flat_kernel(T* y, Idx n, Inputs<T> in, uint32_t scalar_mask, Program p) {
  float vals[kMaxInputs];
  for (Idx i = blockIdx.x * Idx(blockDim.x) + threadIdx.x; i < n; i += Idx(gridDim.x) * blockDim.x) {
#pragma unroll
    for (int k = 0; k < kMaxInputs; ++k)
      if (k < p.num_inputs) vals[k] = static_cast<float>(to_acc(in.ptr[k][(scalar_mask >> k) & 1u ? 0 : i]));
    y[i] = from_acc<T>(ops::fused::evaluate(p, vals));
  }
}

// The program over slots: the registers alive at the same time share none, the rest are reused.
struct SlotProgram {
  int32_t num_inputs = 0, size = 0, slots = 0, out = 0;
  int8_t input[kMaxInputs] = {};
  int8_t op[ops::fused::kMaxInstructions] = {}, a[ops::fused::kMaxInstructions] = {},
         b[ops::fused::kMaxInstructions] = {}, dst[ops::fused::kMaxInstructions] = {};
};

SlotProgram allocate_slots(const Program& p) {
  constexpr int kRegs = kMaxInputs + ops::fused::kMaxInstructions;
  const int regs = p.num_inputs + p.size;
  int last_use[kRegs];
  for (int r = 0; r < regs; ++r) last_use[r] = -1;
  for (int i = 0; i < p.size; ++i) {
    last_use[p.a[i]] = i;
    if (ops::fused::is_binary(p.op[i])) last_use[p.b[i]] = i;
  }
  last_use[regs - 1] = p.size;  // the output outlives the program
  SlotProgram sp;
  sp.num_inputs = p.num_inputs;
  sp.size = p.size;
  int slot_of[kRegs];
  bool busy[kRegs] = {};
  auto take = [&]() {
    int s = 0;
    while (busy[s]) ++s;
    busy[s] = true;
    sp.slots = s + 1 > sp.slots ? s + 1 : sp.slots;
    return s;
  };
  for (int r = 0; r < p.num_inputs; ++r) sp.input[r] = static_cast<int8_t>(slot_of[r] = take());
  for (int i = 0; i < p.size; ++i) {
    sp.op[i] = static_cast<int8_t>(p.op[i]);
    sp.a[i] = static_cast<int8_t>(slot_of[p.a[i]]);
    sp.b[i] = static_cast<int8_t>(ops::fused::is_binary(p.op[i]) ? slot_of[p.b[i]] : slot_of[p.a[i]]);
    // Operands are read before the result is written, so a slot freed here can take it.
    if (last_use[p.a[i]] == i) busy[slot_of[p.a[i]]] = false;
    if (ops::fused::is_binary(p.op[i]) && last_use[p.b[i]] == i) busy[slot_of[p.b[i]]] = false;
    const int r = p.num_inputs + i;
    sp.dst[i] = static_cast<int8_t>(slot_of[r] = take());
    if (last_use[r] < 0) busy[slot_of[r]] = false;  // never read (dead code the fusion kept)
  }
  sp.out = slot_of[regs - 1];
  return sp;
}

constexpr int kSlotThreads = 128;
constexpr int kLanes = 8;  // elements a thread

// Slot s of this thread: two float4 at [s][half][thread], so a warp's accesses are consecutive.
__device__ __forceinline__ void slot_read(const float4* regs, int s, float (&v)[kLanes]) {
  const float4 lo = regs[(2 * s) * kSlotThreads + threadIdx.x], hi = regs[(2 * s + 1) * kSlotThreads + threadIdx.x];
  v[0] = lo.x, v[1] = lo.y, v[2] = lo.z, v[3] = lo.w, v[4] = hi.x, v[5] = hi.y, v[6] = hi.z, v[7] = hi.w;
}
__device__ __forceinline__ void slot_write(float4* regs, int s, const float (&v)[kLanes]) {
  regs[(2 * s) * kSlotThreads + threadIdx.x] = make_float4(v[0], v[1], v[2], v[3]);
  regs[(2 * s + 1) * kSlotThreads + threadIdx.x] = make_float4(v[4], v[5], v[6], v[7]);
}

// One instruction on eight lanes: the opcode decoded once.
__device__ __forceinline__ void apply8(int32_t op, const float (&a)[kLanes], const float (&b)[kLanes],
                                       float (&o)[kLanes]) {
  using namespace ops::fused;
  switch (op) {
#define SRT_FUSED_LANES(OP) \
  case OP:                  \
    _Pragma("unroll") for (int e = 0; e < kLanes; ++e) o[e] = apply(OP, a[e], b[e]); \
    break;
    SRT_FUSED_LANES(kAdd) SRT_FUSED_LANES(kSub) SRT_FUSED_LANES(kMul) SRT_FUSED_LANES(kDiv) SRT_FUSED_LANES(kPow)
    SRT_FUSED_LANES(kNeg) SRT_FUSED_LANES(kExp) SRT_FUSED_LANES(kLog) SRT_FUSED_LANES(kSqrt)
    SRT_FUSED_LANES(kReciprocal) SRT_FUSED_LANES(kTanh) SRT_FUSED_LANES(kErf) SRT_FUSED_LANES(kSigmoid)
    SRT_FUSED_LANES(kRelu) SRT_FUSED_LANES(kAbs)
#undef SRT_FUSED_LANES
    default:
#pragma unroll
      for (int e = 0; e < kLanes; ++e) o[e] = 0.f;
  }
}

template <typename T>
__global__ void __launch_bounds__(kSlotThreads) fused_slots_kernel(T* y, int64_t nvec, Inputs<T> in,
                                                                   uint32_t scalar_mask, SlotProgram sp) {
  extern __shared__ float4 regs[];
  for (int64_t v = blockIdx.x * int64_t(kSlotThreads) + threadIdx.x; v < nvec; v += int64_t(gridDim.x) * kSlotThreads) {
    for (int k = 0; k < sp.num_inputs; ++k) {
      float x[kLanes];
      if ((scalar_mask >> k) & 1u) {
        const float s = static_cast<float>(to_acc(in.ptr[k][0]));
#pragma unroll
        for (int e = 0; e < kLanes; ++e) x[e] = s;
      } else {
        load8(in.ptr[k] + v * kLanes, x);
      }
      slot_write(regs, sp.input[k], x);
    }
    for (int i = 0; i < sp.size; ++i) {
      float a[kLanes], b[kLanes], o[kLanes];
      slot_read(regs, sp.a[i], a);
      slot_read(regs, sp.b[i], b);
      apply8(sp.op[i], a, b, o);
      slot_write(regs, sp.dst[i], o);
    }
    float out[kLanes];
    slot_read(regs, sp.out, out);
    store8(y + v * kLanes, out);
  }
}

// Eight outputs of the gate from eight of a and b: apply()'s operations, in the interpreter's order.
__device__ __forceinline__ void gate8(const float (&a)[kLanes], const float (&b)[kLanes], float (&y)[kLanes]) {
  using namespace ops::fused;
#pragma unroll
  for (int e = 0; e < kLanes; ++e) y[e] = gate_value(a[e], b[e]);
}

// One element a thread, for a gate whose operands gate_kernel cannot read 16 bytes at a time.
template <typename T>
__global__ void gate_scalar_kernel(T* y, const T* a, const T* b, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_acc<T>(ops::fused::gate_value(to_acc(a[i]), to_acc(b[i])));
}

// Two runs of eight elements a thread, every load issued before the arithmetic. A block takes 512
// runs, a thread runs t and t + 256 of them, so each load instruction of a warp reads 512 bytes
// end to end (runs 2t and 2t + 1 left every instruction's 16-byte pieces 16 bytes apart).
template <typename T>
__global__ void __launch_bounds__(256) gate_kernel(T* __restrict__ y, const T* __restrict__ a,
                                                   const T* __restrict__ b, int64_t nvec) {
  for (int64_t base = blockIdx.x * int64_t(512); base < nvec; base += int64_t(gridDim.x) * 512) {
    const int64_t v = base + threadIdx.x, w = v + 256;
    if (v >= nvec) break;
    const bool second = w < nvec;
    float a0[kLanes], b0[kLanes], a1[kLanes] = {}, b1[kLanes] = {}, o[kLanes];
    load8(a + v * kLanes, a0);
    load8(b + v * kLanes, b0);
    if (second) {
      load8(a + w * kLanes, a1);
      load8(b + w * kLanes, b1);
    }
    gate8(a0, b0, o);
    store8(y + v * kLanes, o);
    if (second) {
      gate8(a1, b1, o);
      store8(y + w * kLanes, o);
    }
  }
}

// y = silu(a) * b over n elements: gate_kernel where all three are 16-byte aligned and n a multiple
// of 8, gate_scalar_kernel otherwise.
template <typename T>
Status launch_gate(cudaStream_t stream, T* y, const T* a, const T* b, int64_t n) {
  if (n % kLanes == 0 && aligned16(y) && aligned16(a) && aligned16(b)) {
    const int64_t nvec = n / kLanes;
    gate_kernel<T><<<grid_for((nvec + 1) / 2, 256), 256, 0, stream>>>(y, a, b, nvec);
    SRT_CUDA_LAUNCH("gate_kernel");
    return ok_status();
  }
  gate_scalar_kernel<T><<<grid_for(n), 256, 0, stream>>>(y, a, b, n);
  SRT_CUDA_LAUNCH("gate_scalar_kernel");
  return ok_status();
}

constexpr size_t slot_bytes(int slots) { return size_t(slots) * 2 * kSlotThreads * sizeof(float4); }

template <typename T>
Status launch_slots(CudaKernelContext& ctx, T* y, int64_t n, const Inputs<T>& in, uint32_t scalar_mask,
                    const Program& p) {
  const int64_t nvec = n / kLanes;
  int gate = 0, up = 0;
  if (scalar_mask == 0 && ops::fused::match_gate(p, &gate, &up)) return launch_gate<T>(ctx.stream(), y, in.ptr[gate], in.ptr[up], n);
  static std::once_flag once;  // the most slots a program can need: more than the default 48 KB
  static cudaError_t attr = cudaSuccess;
  std::call_once(once, [] {
    attr = cudaFuncSetAttribute(fused_slots_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(slot_bytes(kMaxInputs + ops::fused::kMaxInstructions)));
  });
  SRT_CUDA(attr);
  const SlotProgram sp = allocate_slots(p);
  fused_slots_kernel<T><<<grid_for(nvec, kSlotThreads), kSlotThreads, slot_bytes(sp.slots), ctx.stream()>>>(
      y, nvec, in, scalar_mask, sp);
  SRT_CUDA_LAUNCH("fused_slots_kernel");
  return ok_status();
}

Status fused_cuda(CudaKernelContext& ctx) {
  Program p;
  std::string why;
  if (!ops::fused::decode(ctx.node(), ctx.num_inputs(), &p, &why)) return ctx.error(why);
  const ops::TensorRef& y = ctx.output(0);
  const int64_t n = y.numel();
  if (n == 0) return ok_status();
  static const Dims kScalar;
  std::array<const Dims*, kMaxInputs> shapes;
  for (int k = 0; k < kMaxInputs; ++k) shapes[k] = k < p.num_inputs ? &ctx.input(k).dims : &kScalar;
  BroadcastIndexer<kMaxInputs> ix;
  SRT_RETURN_IF_ERROR(make_indexer<kMaxInputs>(ctx, y.dims, shapes, &ix));
  uint32_t scalar_mask = 0;
  bool flat = true;
  for (int k = 0; k < p.num_inputs; ++k) {
    const int64_t m = ctx.input(k).numel();
    if (m == 1) scalar_mask |= 1u << k;
    else flat = flat && m == n;
  }
  return cuda_dispatch<ops::kFloats>(y.dtype, ctx.node().describe(), [&]<typename T>() {
    Inputs<T> in{};
    bool aligned = aligned16(y.data);
    for (int k = 0; k < p.num_inputs; ++k) {
      in.ptr[k] = ctx.input(k).as<const T>();
      aligned = aligned && ((scalar_mask >> k) & 1u || aligned16(in.ptr[k]));
    }
    if (flat && aligned && n % kLanes == 0 && p.size > 0) return launch_slots<T>(ctx, y.as<T>(), n, in, scalar_mask, p);
    if (flat && n < (int64_t{1} << 31)) {
      fused_flat_kernel<T, int32_t><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<T>(), static_cast<int32_t>(n), in,
                                                                            scalar_mask, p);
      SRT_CUDA_LAUNCH("fused_flat_kernel");
      return ok_status();
    }
    if (n < (int64_t{1} << 31))
      fused_kernel<T, int32_t><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<T>(), static_cast<int32_t>(n), ix, in, p);
    else
      fused_kernel<T, int64_t><<<grid_for(n), 256, 0, ctx.stream()>>>(y.as<T>(), n, ix, in, p);
    SRT_CUDA_LAUNCH("fused_kernel");
    return ok_status();
  });
}

}  // namespace

Status swiglu_gate(cudaStream_t stream, DataType dtype, void* y, const void* gate, const void* up, int64_t n) {
  if (n == 0) return ok_status();
  return cuda_dispatch<ops::kFloats>(dtype, "swiglu_gate", [&]<typename T>() {
    return launch_gate<T>(stream, static_cast<T*>(y), static_cast<const T*>(gate), static_cast<const T*>(up), n);
  });
}

STREAMRT_REGISTER_CUDA_KERNEL(FusedElementwise, "FusedElementwise", fused_cuda, cuda_dtypes(ops::kFloats));

}  // namespace streamrt::cuda

// Build-time tactic timing for Conv on CUDA (builder/tactics.h). For each Conv step, the cuDNN
// forward convolution its kernel would run at the profile's opt shapes (dnn/conv_problem.h, the
// epilogue left out) runs with each precise algorithm (implicit GEMM, precomputed implicit GEMM,
// GEMM, direct: FFT and Winograd stay out, for accuracy) whose workspace fits the kernel's cap,
// with the math type streamrt allows (FMA for float32 without TF32, tensor-op otherwise), on
// random data: warm-up runs, then about 2 ms of timed runs between CUDA events. Candidates are
// tried in cuDNN's heuristic order, so rank 0 is the heuristic's first choice. The fastest is
// recorded in the step's "__conv_algo"; kernels/conv.cu uses it at run time.
//
// Off unless BuilderConfig::passes.conv_tactics (streamrt build --conv-tactics): the builder
// offers Conv steps to this tuner only then (builder/tactics.cc). On an H200 (2026-11-21) the
// timed choices made ResNet-50 batch 32 fp16 slower end to end (CUDA graph 2.64 ms against
// 2.21 ms with cuDNN's heuristic), although each won its own timing. Timing one convolution over and over keeps its operands in
// L2, which a network run does not; flushing L2 between timed runs is the next step.
#include <algorithm>
#include <array>
#include <optional>
#include <string>

#include "backends/cuda/dnn/conv_problem.h"
#include "backends/cuda/kernels/cuda_types.cuh"
#include "core/logging.h"

namespace streamrt::cuda {
namespace {

constexpr int kWarmups = 2;
constexpr double kTimedMs = 2.0;  // timed runs per candidate: about this long, 3 to 50 of them
constexpr uint64_t kMaxOperandBytes = uint64_t{4} << 30;  // larger problems keep the heuristic

// Uniform values in [-1, 1) from a hash of the index: operands that look like real data.
template <typename T>
__global__ void fill_random_kernel(T* p, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15, h *= 0x2c1b3c6du, h ^= h >> 12;
    p[i] = from_acc<T>(static_cast<float>(h & 0xffffu) / 32768.f - 1.f);
  }
}

// Device memory that only grows.
class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  void* get() const { return ptr_; }
  Status grow(size_t bytes) {
    if (bytes <= size_) return ok_status();
    if (ptr_) cudaFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
    SRT_CUDA(cudaMalloc(&ptr_, std::max<size_t>(bytes, 256)));
    size_ = std::max<size_t>(bytes, 256);
    return ok_status();
  }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

struct Candidate {
  cudnnConvolutionFwdAlgo_t algo;
  size_t workspace = 0;
  std::optional<double> ms;  // unset: cuDNN refused it
};

// The step's cuDNN convolution at these input shapes, or nullopt when its kernel makes none.
Result<std::optional<CudnnConv>> step_conv(const ir::Node& step, std::span<const ops::TensorInfo> in) {
  if (step.op_type != "Conv" || !step.domain.empty() || in.size() < 2) return std::optional<CudnnConv>();
  const DataType dt = in[0].dtype;
  if (!is_float(dt) || in[1].dtype != dt || !in[0].has_shape || !in[1].has_shape) return std::optional<CudnnConv>();
  const bool has_b = in.size() > 2 && in[2].dtype != DataType::kUndefined;
  SRT_ASSIGN_OR_RETURN(ConvGeom g, conv_geom(step, in[0].dims, in[1].dims, has_b ? &in[2].dims : nullptr));
  auto c = cudnn_conv(step, g, dt, builder::step_allows_tf32(step), dims_numel(in[1].dims), dims_numel(g.y()));
  if (!c.ok() && c.status().code() == StatusCode::kUnsupported) return std::optional<CudnnConv>();
  if (!c.ok()) return c.status();
  return std::optional<CudnnConv>(std::move(c).value());
}

class ConvSession final : public builder::TacticSession {
 public:
  ~ConvSession() override;
  Result<bool> tune(ir::Node& step, std::span<const ops::TensorInfo> in) override;

 private:
  Status ensure_ready();
  Result<std::vector<Candidate>> candidates(const CudnnConv& c, const ConvDescriptors& d);
  Status bind(const CudnnConv& c, size_t workspace);
  Result<std::optional<double>> run_ms(const ConvDescriptors& d, const Candidate& k, int iters);
  Result<std::optional<double>> time_ms(const ConvDescriptors& d, const Candidate& k);

  cudnnHandle_t handle_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  ScratchBuffer x_, w_, y_, workspace_;
};

ConvSession::~ConvSession() {
  if (stream_) cudaStreamSynchronize(stream_);
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  if (handle_) cudnnDestroy(handle_);
  if (stream_) cudaStreamDestroy(stream_);
}

// Device resources, made at the first convolution to time.
Status ConvSession::ensure_ready() {
  if (handle_) return ok_status();
  if (!stream_) SRT_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  if (!start_) SRT_CUDA(cudaEventCreate(&start_));
  if (!stop_) SRT_CUDA(cudaEventCreate(&stop_));
  cudnnHandle_t h = nullptr;
  SRT_CUDNN(cudnnCreate(&h));
  if (Status st = cudnn_status(cudnnSetStream(h, stream_), "cudnnSetStream"); !st.ok()) {
    cudnnDestroy(h);
    return st;
  }
  handle_ = h;  // last: a handle means everything is ready
  return ok_status();
}

// The precise algorithms in cuDNN's heuristic order, then those the ranking left out, each with
// its workspace at the tuned math type (those over the cap or refused are left out).
Result<std::vector<Candidate>> ConvSession::candidates(const CudnnConv& c, const ConvDescriptors& d) {
  SRT_CUDNN(cudnnSetConvolutionMathType(d.conv, tuned_math(c)));
  std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
  int count = 0;
  SRT_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(handle_, d.x, d.w, d.conv, d.y, static_cast<int>(perf.size()),
                                                   &count, perf.data()));
  std::vector<cudnnConvolutionFwdAlgo_t> order;
  for (int i = 0; i < count; ++i) order.push_back(perf[static_cast<size_t>(i)].algo);
  for (auto a : {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                 CUDNN_CONVOLUTION_FWD_ALGO_GEMM, CUDNN_CONVOLUTION_FWD_ALGO_DIRECT})
    order.push_back(a);
  std::vector<Candidate> out;
  for (cudnnConvolutionFwdAlgo_t a : order) {
    if (!precise_algo(a) || std::any_of(out.begin(), out.end(), [&](const Candidate& k) { return k.algo == a; }))
      continue;
    Candidate k{a};
    if (cudnnGetConvolutionForwardWorkspaceSize(handle_, d.x, d.w, d.conv, d.y, a, &k.workspace) !=
            CUDNN_STATUS_SUCCESS ||
        k.workspace > kMaxConvAlgoWorkspace)
      continue;
    out.push_back(k);
  }
  return out;
}

// Random X and W, and room for Y and the workspace.
Status ConvSession::bind(const CudnnConv& c, size_t workspace) {
  const size_t es = dtype_size(c.dtype);
  auto numel = [](const std::vector<int>& d) {
    int64_t n = 1;
    for (int v : d) n *= v;
    return n;
  };
  const int64_t nx = c.x_elems, nw = numel(c.wdims), ny = numel(c.ydims);
  const uint64_t bytes = static_cast<uint64_t>(nx + nw + ny) * es + workspace;
  size_t free = 0, total = 0;
  SRT_CUDA(cudaMemGetInfo(&free, &total));
  if (bytes > kMaxOperandBytes || bytes > free / 2)
    return unsupported("its operands (" + std::to_string(bytes >> 20) + " MiB) are too large to time");
  SRT_RETURN_IF_ERROR(x_.grow(static_cast<size_t>(nx) * es));
  SRT_RETURN_IF_ERROR(w_.grow(static_cast<size_t>(nw) * es));
  SRT_RETURN_IF_ERROR(y_.grow(static_cast<size_t>(ny) * es));
  SRT_RETURN_IF_ERROR(workspace_.grow(workspace));
  return cuda_dispatch<ops::kFloats>(c.dtype, "conv tactics", [&]<typename T>() -> Status {
    fill_random_kernel<T><<<grid_for(nx), 256, 0, stream_>>>(static_cast<T*>(x_.get()), nx, 1u);
    SRT_CUDA_LAUNCH("fill_random_kernel");
    fill_random_kernel<T><<<grid_for(nw), 256, 0, stream_>>>(static_cast<T*>(w_.get()), nw, 2u);
    SRT_CUDA_LAUNCH("fill_random_kernel");
    return ok_status();
  });
}

// Milliseconds per call over `iters` calls; nullopt when cuDNN refuses the algorithm (the
// candidate is skipped). CUDA errors keep their codes.
Result<std::optional<double>> ConvSession::run_ms(const ConvDescriptors& d, const Candidate& k, int iters) {
  const float alpha = 1.f, beta = 0.f;
  SRT_CUDA(cudaEventRecord(start_, stream_));
  for (int i = 0; i < iters; ++i) {
    const cudnnStatus_t st = cudnnConvolutionForward(handle_, &alpha, d.x, x_.get(), d.w, w_.get(), d.conv, k.algo,
                                                     k.workspace ? workspace_.get() : nullptr, k.workspace, &beta,
                                                     d.y, y_.get());
    if (st != CUDNN_STATUS_SUCCESS) {
      SRT_CUDA(cudaStreamSynchronize(stream_));
      if (st == CUDNN_STATUS_NOT_SUPPORTED || st == CUDNN_STATUS_BAD_PARAM) return std::optional<double>();
      return cudnn_status(st, "cudnnConvolutionForward");
    }
  }
  SRT_CUDA(cudaEventRecord(stop_, stream_));
  SRT_CUDA(cudaEventSynchronize(stop_));
  float ms = 0.f;
  SRT_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
  return std::optional<double>(static_cast<double>(ms) / iters);
}

Result<std::optional<double>> ConvSession::time_ms(const ConvDescriptors& d, const Candidate& k) {
  SRT_ASSIGN_OR_RETURN(std::optional<double> warm, run_ms(d, k, kWarmups));
  if (!warm) return warm;
  const int iters = static_cast<int>(std::clamp(kTimedMs / std::max(*warm, 1e-3), 3.0, 50.0));
  return run_ms(d, k, iters);
}

Result<bool> ConvSession::tune(ir::Node& step, std::span<const ops::TensorInfo> in) {
  SRT_ASSIGN_OR_RETURN(std::optional<CudnnConv> c, step_conv(step, in));
  if (!c) return false;
  SRT_RETURN_IF_ERROR(ensure_ready());
  ConvDescriptors d;
  SRT_RETURN_IF_ERROR(d.init(*c));
  SRT_ASSIGN_OR_RETURN(std::vector<Candidate> cand, candidates(*c, d));
  if (cand.empty()) return false;  // the run-time heuristic's fallbacks decide
  size_t workspace = 0;
  for (const Candidate& k : cand) workspace = std::max(workspace, k.workspace);
  SRT_RETURN_IF_ERROR(bind(*c, workspace));
  int best = -1;
  for (size_t i = 0; i < cand.size(); ++i) {
    SRT_ASSIGN_OR_RETURN(cand[i].ms, time_ms(d, cand[i]));
    if (!cand[i].ms) {
      log_verbose("tactics: " + step.describe() + ": cuDNN refused candidate #" + std::to_string(i));
      continue;
    }
    if (best < 0 || *cand[i].ms < *cand[static_cast<size_t>(best)].ms) best = static_cast<int>(i);
  }
  if (best < 0) return false;
  const Candidate& win = cand[static_cast<size_t>(best)];
  builder::ConvAlgoRecord r;
  r.library_version = cudnnGetVersion();
  r.flags = c->flags();
  r.algo = win.algo;
  r.math = tuned_math(*c);
  r.workspace = static_cast<int64_t>(win.workspace);
  r.problem = c->problem();
  r.candidates = static_cast<int64_t>(cand.size());
  r.rank = best;
  r.best_ns = static_cast<int64_t>(*win.ms * 1e6);
  r.heuristic_ns = static_cast<int64_t>(cand[0].ms.value_or(0.0) * 1e6);
  step.attrs[builder::kConvAlgoAttr] = builder::encode_conv_algo(r);
  return true;
}

class ConvTuner final : public builder::TacticTuner {
 public:
  DeviceType device() const override { return DeviceType::kCuda; }
  Result<std::unique_ptr<builder::TacticSession>> open() override {
    return std::unique_ptr<builder::TacticSession>(std::make_unique<ConvSession>());
  }
};

struct Registrar {
  Registrar() { builder::register_tactic_tuner(new ConvTuner()); }
} registrar;

}  // namespace
}  // namespace streamrt::cuda

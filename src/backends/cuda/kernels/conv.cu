// Conv (1-D, 2-D, 3-D; groups, strides, dilations, pads, auto_pad, bias) through cuDNN's
// legacy convolution API, NCHW. The window arithmetic is ops/window.h's, as the CPU kernel
// (src/ops/conv.cc). cuDNN takes symmetric pads only: asymmetric pads (SAME_* with an odd
// total, or explicit ones) are applied by copying X into a zero-padded buffer in the
// workspace. float32 runs without tensor cores (CUDNN_FMA_MATH: no TF32) unless the plan allows
// TF32 for the step ("__tf32", builder/tactics.h: then CUDNN_DEFAULT_MATH / TENSOR_OP_MATH, never
// the float16 down-conversion of ..._ALLOW_CONVERSION), float16/bfloat16 with them, all
// accumulating in float32. The bias is added by a small kernel. What cuDNN
// cannot do (no algorithm, more than 3 spatial axes, empty inputs, > 2^31 elements) runs as a
// direct kernel: one thread per output element, the CPU's sums in float.
#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <mutex>

#include "backends/cuda/kernels/cuda_types.cuh"
#include "builder/tactics.h"
#include "ops/window.h"

namespace streamrt::cuda {
namespace {

constexpr int kMaxSpatial = 6;       // direct kernel
constexpr int kMaxCudnnSpatial = 3;  // cuDNN: 4-D / 5-D tensors
constexpr size_t kMaxAlgoWorkspace = size_t{256} << 20;

struct TensorDesc {
  cudnnTensorDescriptor_t h = nullptr;
  ~TensorDesc() { if (h) cudnnDestroyTensorDescriptor(h); }
};
struct FilterDesc {
  cudnnFilterDescriptor_t h = nullptr;
  ~FilterDesc() { if (h) cudnnDestroyFilterDescriptor(h); }
};
struct ConvDesc {
  cudnnConvolutionDescriptor_t h = nullptr;
  ~ConvDesc() { if (h) cudnnDestroyConvolutionDescriptor(h); }
};

// Copies planes of X (spatial dims `in`) into zero-padded planes of dims `padded`, with
// `begin` zeros before each axis.
struct PadArgs {
  int rank = 0;
  int64_t in[kMaxSpatial] = {}, padded[kMaxSpatial] = {}, begin[kMaxSpatial] = {};
  int64_t total = 0;  // elements of the padded tensor
};

template <typename T>
__global__ void pad_kernel(const T* x, T* xp, PadArgs p) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.total; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t rem = i, src = 0, scale = 1;
    bool inside = true;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rem % p.padded[d] - p.begin[d];
      rem /= p.padded[d];
      inside = inside && c >= 0 && c < p.in[d];
      src += c * scale;
      scale *= p.in[d];
    }
    // rem is the plane (n * C + c); scale the plane size of X.
    xp[i] = inside ? x[rem * scale + src] : from_acc<T>(0);
  }
}

// y[n, m, ...] += b[m]; `inner` is the spatial size of Y.
template <typename T>
__global__ void bias_kernel(T* y, const T* b, int64_t maps, int64_t inner, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = from_acc<T>(to_acc(y[i]) + to_acc(b[(i / inner) % maps]));
}

// Direct convolution: y[n, m, o] = b[m] + sum over the group's channels c and kernel taps t of
// x[n, c, o * stride - pad_begin + t * dilation] * w[m, c, t] (taps outside X skipped).
struct DirectArgs {
  int rank = 0;
  int64_t in[kMaxSpatial] = {}, out[kMaxSpatial] = {}, kernel[kMaxSpatial] = {};
  int64_t strides[kMaxSpatial] = {}, dilations[kMaxSpatial] = {}, pad_begin[kMaxSpatial] = {};
  int64_t channels = 0, maps = 0, group = 1, in_size = 0, out_size = 0, taps = 0, total = 0;
};

template <typename T>
__global__ void direct_conv_kernel(const T* x, const T* w, const T* b, T* y, DirectArgs p) {
  const int64_t cg = p.channels / p.group, mg = p.maps / p.group;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < p.total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t nm = i / p.out_size, m = nm % p.maps, n = nm / p.maps;
    int64_t origin[kMaxSpatial];
    for (int64_t d = p.rank - 1, rem = i % p.out_size; d >= 0; --d) {
      origin[d] = (rem % p.out[d]) * p.strides[d] - p.pad_begin[d];
      rem /= p.out[d];
    }
    const T* xn = x + (n * p.channels + (m / mg) * cg) * p.in_size;
    const T* wm = w + m * cg * p.taps;
    float acc = 0.f;
    for (int64_t t = 0; t < p.taps; ++t) {
      int64_t off = 0, scale = 1, rem = t;
      for (int d = p.rank - 1; d >= 0 && off >= 0; --d) {
        const int64_t ip = origin[d] + (rem % p.kernel[d]) * p.dilations[d];
        rem /= p.kernel[d];
        off = ip < 0 || ip >= p.in[d] ? -1 : off + ip * scale;
        scale *= p.in[d];
      }
      if (off < 0) continue;
      for (int64_t c = 0; c < cg; ++c) acc += to_acc(xn[c * p.in_size + off]) * to_acc(wm[c * p.taps + t]);
    }
    if (b) acc += to_acc(b[m]);
    y[i] = from_acc<T>(acc);
  }
}

struct ConvGeom {
  int64_t batch = 0, channels = 0, maps = 0, group = 1;
  Dims in, out;                // spatial dims of X and Y
  std::vector<int64_t> pads;   // effective [begin.., end..]
  ops::Window win;
};

Result<ConvGeom> conv_geom(const CudaKernelContext& ctx) {
  const ir::Node& node = ctx.node();
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& w = ctx.input(1);
  for (size_t i = 1; i < 3; ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype != x.dtype) return ctx.error("input types differ");
  if (x.dims.size() < 3 || w.dims.size() != x.dims.size())
    return ctx.error("X " + dims_to_string(x.dims) + " and W " + dims_to_string(w.dims) +
                     " must have the same rank >= 3");
  const size_t spatial = x.dims.size() - 2;
  if (spatial > kMaxSpatial) return ctx.unsupported(std::to_string(spatial) + "-D convolution");
  ConvGeom g;
  SRT_ASSIGN_OR_RETURN(g.group, node.attr_int("group", 1));
  g.batch = x.dims[0];
  g.channels = x.dims[1];
  g.maps = w.dims[0];
  if (g.group < 1 || g.channels != w.dims[1] * g.group || g.maps % g.group != 0)
    return ctx.error("X " + dims_to_string(x.dims) + " and W " + dims_to_string(w.dims) + " do not fit group " +
                     std::to_string(g.group));
  if (ctx.has_input(2) && ctx.input(2).dims != Dims{g.maps})
    return ctx.error("B has shape " + dims_to_string(ctx.input(2).dims) + ", expected [" + std::to_string(g.maps) + "]");
  SRT_ASSIGN_OR_RETURN(g.win, ops::read_window(node, spatial, std::vector<int64_t>(w.dims.begin() + 2, w.dims.end())));
  g.in.assign(x.dims.begin() + 2, x.dims.end());
  SRT_ASSIGN_OR_RETURN(g.out, ops::window_output(node, g.win, g.in, &g.pads));
  Dims y = {g.batch, g.maps};
  y.insert(y.end(), g.out.begin(), g.out.end());
  if (ctx.output(0).dims != y)
    return ctx.error("output has shape " + dims_to_string(ctx.output(0).dims) + ", expected " + dims_to_string(y));
  return g;
}

Result<cudnnDataType_t> cudnn_type(DataType t) {
  switch (t) {
    case DataType::kFloat32: return CUDNN_DATA_FLOAT;
    case DataType::kFloat16: return CUDNN_DATA_HALF;
    case DataType::kBFloat16: return CUDNN_DATA_BFLOAT16;
    default: return unsupported(std::string("cuDNN convolution: data type ") + dtype_name(t) + " is not supported");
  }
}

// Packed NCHW(D) descriptor for `dims` (4 or 5 entries).
Status set_tensor(TensorDesc& d, cudnnDataType_t t, const std::vector<int>& dims) {
  std::vector<int> strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
  SRT_CUDNN(cudnnCreateTensorDescriptor(&d.h));
  SRT_CUDNN(cudnnSetTensorNdDescriptor(d.h, t, static_cast<int>(dims.size()), dims.data(), strides.data()));
  return ok_status();
}

// The algorithm chosen for one problem (everything that shaped the choice is in the key).
struct AlgoChoice {
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  size_t workspace = 0;
};
std::mutex g_algo_mutex;
std::map<std::vector<int64_t>, AlgoChoice>& algo_cache() {
  static auto* cache = new std::map<std::vector<int64_t>, AlgoChoice>();
  return *cache;
}

// FFT and Winograd trade accuracy for speed; prefer the GEMM-like algorithms so results stay
// within float32 rounding of the CPU's im2col + sgemm.
bool precise(cudnnConvolutionFwdAlgo_t a) {
  return a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM ||
         a == CUDNN_CONVOLUTION_FWD_ALGO_GEMM || a == CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
}

// cuDNN's heuristic (v7) ranking, filtered: float32 without tensor-op math unless `tf32`, and
// never with ALLOW_CONVERSION (float16 inputs); the first precise algorithm whose workspace
// fits, else the first of any kind that fits.
Result<AlgoChoice> choose_algo(cudnnHandle_t h, bool fp32, bool tf32, const TensorDesc& xd, const FilterDesc& wd,
                               const ConvDesc& cd, const TensorDesc& yd) {
  const bool strict = fp32 && !tf32;
  std::array<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT> perf{};
  int count = 0;
  SRT_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(h, xd.h, wd.h, cd.h, yd.h, static_cast<int>(perf.size()), &count,
                                                   perf.data()));
  std::optional<AlgoChoice> any;
  for (int i = 0; i < count; ++i) {
    const auto& p = perf[static_cast<size_t>(i)];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (fp32 && p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) continue;
    if (strict && p.mathType == CUDNN_TENSOR_OP_MATH) continue;
    AlgoChoice c{p.algo, strict ? CUDNN_FMA_MATH : p.mathType, 0};
    // The ranking's memory figure is for its own math type; ask again with ours.
    if (cudnnSetConvolutionMathType(cd.h, c.math) != CUDNN_STATUS_SUCCESS) continue;
    if (cudnnGetConvolutionForwardWorkspaceSize(h, xd.h, wd.h, cd.h, yd.h, c.algo, &c.workspace) !=
        CUDNN_STATUS_SUCCESS)
      continue;
    if (c.workspace > kMaxAlgoWorkspace) continue;
    if (precise(c.algo)) return c;
    if (!any) any = c;
  }
  if (any) return *any;
  return unsupported("cuDNN found no forward convolution algorithm");
}

template <typename T>
Status conv_direct(CudaKernelContext& ctx, const ConvGeom& g) {
  DirectArgs p;
  p.rank = static_cast<int>(g.in.size());
  p.taps = 1;
  for (size_t d = 0; d < g.in.size(); ++d) {
    p.in[d] = g.in[d], p.out[d] = g.out[d], p.kernel[d] = g.win.kernel[d];
    p.strides[d] = g.win.strides[d], p.dilations[d] = g.win.dilations[d], p.pad_begin[d] = g.pads[d];
    p.taps *= g.win.kernel[d];
  }
  p.channels = g.channels, p.maps = g.maps, p.group = g.group;
  p.in_size = dims_numel(g.in), p.out_size = dims_numel(g.out);
  p.total = ctx.output(0).numel();
  const T* b = ctx.has_input(2) ? ctx.input(2).as<const T>() : nullptr;
  direct_conv_kernel<T><<<grid_for(p.total), 256, 0, ctx.stream()>>>(ctx.input(0).as<const T>(),
                                                                       ctx.input(1).as<const T>(), b,
                                                                       ctx.output(0).as<T>(), p);
  SRT_CUDA_LAUNCH("direct_conv_kernel");
  return ok_status();
}

// cuDNN's forward convolution, then the bias. kUnsupported (before anything is enqueued) when
// cuDNN cannot take the problem.
template <typename T>
Status conv_cudnn(CudaKernelContext& ctx, const ConvGeom& g) {
  const ops::TensorRef& x = ctx.input(0);
  const ops::TensorRef& w = ctx.input(1);
  const ops::TensorRef& y = ctx.output(0);
  const size_t r = g.in.size();
  const std::string what = ctx.node().describe();
  if (r > kMaxCudnnSpatial || x.numel() == 0 || w.numel() == 0)
    return unsupported(what + ": not a cuDNN convolution");
  SRT_ASSIGN_OR_RETURN(cudnnDataType_t dt, cudnn_type(x.dtype));
  // cuDNN pads symmetrically; otherwise X is padded into the workspace first.
  bool symmetric = true;
  for (size_t d = 0; d < r; ++d) symmetric = symmetric && g.pads[d] == g.pads[r + d];
  Dims xin = g.in;  // spatial dims of the tensor cuDNN reads
  if (!symmetric)
    for (size_t d = 0; d < r; ++d) xin[d] += g.pads[d] + g.pads[r + d];
  const int64_t x_elems = g.batch * g.channels * dims_numel(xin);
  for (int64_t v : {x_elems, w.numel(), y.numel()})
    if (v > INT_MAX) return unsupported(what + ": tensors over 2^31 elements");
  // 1-D becomes 2-D with a leading spatial axis of 1.
  std::vector<int> xdims = {static_cast<int>(g.batch), static_cast<int>(g.channels)};
  std::vector<int> wdims = {static_cast<int>(g.maps), static_cast<int>(g.channels / g.group)};
  std::vector<int> ydims = {static_cast<int>(g.batch), static_cast<int>(g.maps)};
  std::vector<int> pads, strides, dilations;
  if (r == 1) {
    xdims.push_back(1), wdims.push_back(1), ydims.push_back(1);
    pads.push_back(0), strides.push_back(1), dilations.push_back(1);
  }
  for (size_t d = 0; d < r; ++d) {
    xdims.push_back(static_cast<int>(xin[d]));
    wdims.push_back(static_cast<int>(g.win.kernel[d]));
    ydims.push_back(static_cast<int>(g.out[d]));
    pads.push_back(symmetric ? static_cast<int>(g.pads[d]) : 0);
    strides.push_back(static_cast<int>(g.win.strides[d]));
    dilations.push_back(static_cast<int>(g.win.dilations[d]));
  }
  TensorDesc xd, yd;
  FilterDesc wd;
  ConvDesc cd;
  SRT_RETURN_IF_ERROR(set_tensor(xd, dt, xdims));
  SRT_RETURN_IF_ERROR(set_tensor(yd, dt, ydims));
  SRT_CUDNN(cudnnCreateFilterDescriptor(&wd.h));
  SRT_CUDNN(cudnnSetFilterNdDescriptor(wd.h, dt, CUDNN_TENSOR_NCHW, static_cast<int>(wdims.size()), wdims.data()));
  SRT_CUDNN(cudnnCreateConvolutionDescriptor(&cd.h));
  SRT_CUDNN(cudnnSetConvolutionNdDescriptor(cd.h, static_cast<int>(pads.size()), pads.data(), strides.data(),
                                            dilations.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  SRT_CUDNN(cudnnSetConvolutionGroupCount(cd.h, static_cast<int>(g.group)));
  const bool fp32 = x.dtype == DataType::kFloat32;
  const bool tf32 = fp32 && builder::step_allows_tf32(ctx.node());
  SRT_CUDNN(cudnnSetConvolutionMathType(cd.h, !fp32 ? CUDNN_TENSOR_OP_MATH : tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  // cuDNN must agree with the shape rule (it computes floor((in + 2p - ek) / s) + 1).
  std::vector<int> check(ydims.size());
  SRT_CUDNN(cudnnGetConvolutionNdForwardOutputDim(cd.h, xd.h, wd.h, static_cast<int>(check.size()), check.data()));
  if (check != ydims) return internal_error(what + ": cuDNN's output shape differs from the shape rule");

  CudaResources& res = ctx.resources();
  int device = 0;
  SRT_CUDA(cudaGetDevice(&device));
  std::vector<int64_t> key = {device, static_cast<int64_t>(reinterpret_cast<uintptr_t>(res.cudnn)), dt, g.group, tf32};
  for (auto* v : {&xdims, &wdims, &pads, &strides, &dilations}) {
    key.push_back(-1);
    key.insert(key.end(), v->begin(), v->end());
  }
  AlgoChoice algo;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(g_algo_mutex);
    auto it = algo_cache().find(key);
    if (it != algo_cache().end()) algo = it->second, cached = true;
  }
  if (!cached) {
    SRT_ASSIGN_OR_RETURN(algo, choose_algo(res.cudnn, fp32, tf32, xd, wd, cd, yd));
    std::lock_guard<std::mutex> lock(g_algo_mutex);
    if (algo_cache().size() >= 4096) algo_cache().clear();
    algo_cache()[key] = algo;
  }
  SRT_CUDNN(cudnnSetConvolutionMathType(cd.h, algo.math));

  // Workspace: [padded X (256-byte aligned)] [cuDNN's scratch].
  const size_t pad_bytes = symmetric ? 0 : (static_cast<size_t>(x_elems) * sizeof(T) + 255) / 256 * 256;
  SRT_RETURN_IF_ERROR(res.ensure_workspace(pad_bytes + algo.workspace));
  uint8_t* ws = static_cast<uint8_t*>(res.workspace);
  const void* xsrc = x.data;
  if (!symmetric) {
    PadArgs p;
    p.rank = static_cast<int>(r);
    for (size_t d = 0; d < r; ++d) p.in[d] = g.in[d], p.padded[d] = xin[d], p.begin[d] = g.pads[d];
    p.total = x_elems;
    pad_kernel<T><<<grid_for(x_elems), 256, 0, ctx.stream()>>>(x.as<const T>(), reinterpret_cast<T*>(ws), p);
    SRT_CUDA_LAUNCH("conv pad_kernel");
    xsrc = ws;
  }
  SRT_CUDNN(cudnnSetStream(res.cudnn, ctx.stream()));
  const float alpha = 1.f, beta = 0.f;  // float scales for float, half and bfloat16 data
  SRT_CUDNN(cudnnConvolutionForward(res.cudnn, &alpha, xd.h, xsrc, wd.h, w.data, cd.h, algo.algo,
                                    algo.workspace ? ws + pad_bytes : nullptr, algo.workspace, &beta, yd.h, y.data));
  if (ctx.has_input(2)) {
    bias_kernel<T><<<grid_for(y.numel()), 256, 0, ctx.stream()>>>(y.as<T>(), ctx.input(2).as<const T>(), g.maps,
                                                                    dims_numel(g.out), y.numel());
    SRT_CUDA_LAUNCH("conv bias_kernel");
  }
  return ok_status();
}

Status conv_cuda(CudaKernelContext& ctx) {
  SRT_ASSIGN_OR_RETURN(ConvGeom g, conv_geom(ctx));
  if (ctx.output(0).numel() == 0) return ok_status();
  return cuda_dispatch<ops::kFloats>(ctx.input(0).dtype, ctx.node().describe(), [&]<typename T>() -> Status {
    Status st = conv_cudnn<T>(ctx, g);
    if (st.code() != StatusCode::kUnsupported) return st;
    return conv_direct<T>(ctx, g);
  });
}

}  // namespace

STREAMRT_REGISTER_CUDA_KERNEL(Conv, "Conv", conv_cuda);

}  // namespace streamrt::cuda

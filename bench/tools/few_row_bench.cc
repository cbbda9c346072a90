// The few-row tensor-core kernel (src/backends/cuda/kernels/few_row_gemm.cu) on a decode batch's
// products, swept over its columns a block, K split and ring depth: which launch shape reads the
// weights fastest.
//
//   streamrt_few_row_bench [--rows 8] [--iters 50] [--shapes qkv,o,gateup,down,lmhead] [--dtype fp16|bf16]
//                          [--cols 0,64,128,256] [--splits 0,1,2,4,8] [--slots 0,2,3,4,6,8,12] [--json OUT]
//
// Shapes are Llama-3.2-1B's (hidden 2048, MLP 8192, vocabulary 128256): Q / K / V with the RMS
// normalization, o_proj with the residual, gate / up with the normalization and SwiGLU's gate,
// down_proj with the residual, the LM head with the final normalization. Each point rotates over
// enough copies of the weights (>= 256 MiB) that none is read from L2, times `iters` launches with
// CUDA events and prints the weight bytes read per second; 0 = the kernel's own choice. A device
// copy of 1 GiB gives the memory's practical rate in the same run. Prints a markdown table.
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "cuda_bench_util.h"
#include "backends/cuda/kernels/half_gemv.h"

using streamrt::DataType;
using streamrt::cuda::CudaResources;
using streamrt::cuda::HalfGemv;

namespace {

struct ShapeSpec {
  std::string name;
  int64_t k;
  std::vector<int64_t> n;
  bool norm, gate, residual;
};

const std::vector<ShapeSpec> kShapes = {
    {"qkv", 2048, {2048, 512, 512}, true, false, false},
    {"o", 2048, {2048}, false, false, true},
    {"gateup", 2048, {8192, 8192}, true, true, false},
    {"down", 8192, {2048}, false, false, true},
    {"lmhead", 2048, {128256}, true, false, false},
};


void* device_random(size_t bytes, uint32_t seed) {
  std::vector<uint16_t> h(bytes / 2);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> u(0, 0x1fff);  // small halves / bfloat16s of either sign
  for (auto& v : h) v = static_cast<uint16_t>(u(rng) | ((u(rng) & 1) << 15));
  return streamrt::bench::to_device(h);
}

double copy_gbps(cudaStream_t s) {
  const size_t bytes = size_t{1} << 30;
  void *a = nullptr, *b = nullptr;
  CHECK_CUDA(cudaMalloc(&a, bytes));
  CHECK_CUDA(cudaMalloc(&b, bytes));
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  CHECK_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
  CHECK_CUDA(cudaEventRecord(e0, s));
  for (int i = 0; i < 5; ++i) CHECK_CUDA(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
  CHECK_CUDA(cudaEventRecord(e1, s));
  CHECK_CUDA(cudaEventSynchronize(e1));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
  cudaFree(a);
  cudaFree(b);
  return 5.0 * bytes / (ms * 1e-3) / 1e9;  // bytes read per second (as many are written)
}


}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"few-row kernel sweep over K split and ring depth (markdown table)"};
  int rows = 8, iters = 50;
  std::string shapes = "qkv,o,gateup,down,lmhead", dtype = "fp16", cols = "0,64,128,256", splits = "0,1,2,4,8",
              slots = "0,2,3,4,6,8,12", json;
  app.add_option("--rows", rows, "rows of A (2..8)")->check(CLI::Range(2, 8));
  app.add_option("--iters", iters, "launches timed a point")->check(CLI::PositiveNumber);
  app.add_option("--shapes", shapes, "comma-separated: qkv, o, gateup, down, lmhead");
  app.add_option("--dtype", dtype, "fp16 | bf16")->check(CLI::IsMember({"fp16", "bf16"}));
  app.add_option("--cols", cols, "columns a block to try (0: the kernel's choice)");
  app.add_option("--splits", splits, "K splits to try (0: the kernel's choice)");
  app.add_option("--slots", slots, "ring depths to try (0: the kernel's choice)");
  app.add_option("--json", json, "append one JSON line a point here");
  CLI11_PARSE(app, argc, argv);
  std::vector<int> col_list, split_list, slot_list;
  try {
    col_list = streamrt::bench::parse_list(cols);
    split_list = streamrt::bench::parse_list(splits);
    slot_list = streamrt::bench::parse_list(slots);
  } catch (const std::exception&) {
    std::fprintf(stderr, "error: --splits / --slots take comma-separated integers\n");
    return 2;
  }

  CudaResources res = streamrt::bench::device_resources();
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  const DataType t = dtype == "bf16" ? DataType::kBFloat16 : DataType::kFloat16;
  std::printf("# few_row_bench: %s, %d rows, %s, %d launches a point\n\n", prop.name, rows, dtype.c_str(), iters);
  std::printf("device-to-device copy of 1 GiB: %.0f GB/s read (as many written)\n\n", copy_gbps(res.stream));
  std::printf("| shape | weight MiB | columns | split | slots | us a launch | GB/s |\n|---|---|---|---|---|---|---|\n");
  std::ofstream out;
  if (!json.empty()) out.open(json, std::ios::app);
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));

  for (const ShapeSpec& sh : kShapes) {
    if (("," + shapes + ",").find("," + sh.name + ",") == std::string::npos) continue;
    int64_t ncols = 0;
    for (int64_t n : sh.n) ncols += n;
    const size_t wbytes = size_t(sh.k) * ncols * 2;
    const int copies = static_cast<int>(std::max<size_t>(2, ((size_t{256} << 20) + wbytes - 1) / wbytes));
    std::vector<std::vector<void*>> w(copies);
    for (int c = 0; c < copies; ++c)
      for (size_t i = 0; i < sh.n.size(); ++i) w[c].push_back(device_random(size_t(sh.k) * sh.n[i] * 2, 7 * c + i));
    void* a = device_random(size_t(rows) * sh.k * 2, 1);
    void* scale = device_random(size_t(sh.k) * 2, 2);
    std::vector<void*> y;
    for (int64_t n : sh.n) y.push_back(device_random(size_t(rows) * n * 2, 3));
    auto make = [&](int c, int col, int split, int slot) {
      HalfGemv g;
      g.dtype = t;
      g.rows = rows;
      g.k = sh.k;
      g.a = a;
      g.norm_scale = sh.norm ? scale : nullptr;
      g.eps = 1e-5f;
      g.parts = static_cast<int>(sh.n.size());
      g.gate = sh.gate;
      for (size_t i = 0; i < sh.n.size(); ++i) g.part[i] = {w[c][i], nullptr, sh.gate && i == 1 ? nullptr : y[i], sh.n[i]};
      g.residual = sh.residual ? y[0] : nullptr;
      g.cols = col;
      g.split = split;
      g.slots = slot;
      return g;
    };
    auto name = [](int v) { return v ? std::to_string(v) : std::string("auto"); };
    for (int col : col_list)
      for (int split : split_list)
        for (int slot : slot_list) {
          if ((col == 0) != (split == 0) || (split == 0) != (slot == 0)) continue;  // auto: all three or none
          if (!streamrt::cuda::half_gemv_applies(make(0, col, split, slot), res.cc_major)) continue;
          streamrt::Status st = streamrt::cuda::half_gemv(res, make(0, col, split, slot));
          if (!st.ok()) continue;  // this shape does not fit
          CHECK_CUDA(cudaEventRecord(e0, res.stream));
          for (int i = 0; i < iters; ++i) st = streamrt::cuda::half_gemv(res, make(1 + i % (copies - 1), col, split, slot));
          CHECK_CUDA(cudaEventRecord(e1, res.stream));
          CHECK_CUDA(cudaEventSynchronize(e1));
          CHECK_CUDA(cudaGetLastError());
          float ms = 0;
          CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
          const double us = 1000.0 * ms / iters, gbps = wbytes / (us * 1e-6) / 1e9;
          std::printf("| %s | %.1f | %s | %s | %s | %.2f | %.0f |\n", sh.name.c_str(), wbytes / 1048576.0,
                      name(col).c_str(), name(split).c_str(), name(slot).c_str(), us, gbps);
          if (out)
            out << "{\"shape\":\"" << sh.name << "\",\"rows\":" << rows << ",\"cols\":" << col << ",\"split\":" << split
                << ",\"slots\":" << slot << ",\"us\":" << us << ",\"gbps\":" << gbps << "}\n";
        }
    for (auto& c : w)
      for (void* p : c) cudaFree(p);
    cudaFree(a);
    cudaFree(scale);
    for (void* p : y) cudaFree(p);
  }
  return 0;
}

// The group GEMM (src/backends/cuda/kernels/group_gemm.cu) against what a MatMulGroup runs without it:
// one cuBLASLt GEMM a weight (the heuristic's first algorithm, as an untuned plan has it) and, for
// gate / up, the gate kernel. Real layer shapes at prefill lengths, both accumulator widths; each
// point's group output is compared with cuBLASLt's (max |difference|, fp16 rounding expected). A kernel
// turn on the GPU machine without exporting models:
//
//   streamrt_group_gemm_bench [--rows 512,2048,4096] [--shapes llama-qkv,...] [--cols 128,256] [--iters 50]
//                             [--rotary D] [--json OUT]
// --rotary D (64 or 128): the Q / K / V shapes rotate Q and K as heads of D by a table row a row, in the
// group GEMM's epilogue against rotate_rows after cuBLASLt's GEMMs (a folded Rotary, kernels/rotary.h).
// (bench/tools/group_gemm_profile.sh runs one launch of it under Nsight Compute.)
//
// Shapes: Llama-3.2-1B (hidden 2048, KV 512, MLP 8192), Qwen2.5-0.5B (896, KV 128 with biases, MLP 4864)
// and Llama-3.1-8B (4096, KV 1024, MLP 14336): `<model>-qkv` and `<model>-gateup`; `llama-o`, `llama-down`,
// `qwen-o`, `qwen-down` are one weight (o_proj, down_proj). Prints a markdown table
// of us a call and TFLOP/s (2 * rows * K * sum N FLOPs), CUDA events around `iters` launches.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cuda_bench_util.h"
#include "backends/cuda/kernels/gate.h"
#include "backends/cuda/kernels/gemm.h"
#include "backends/cuda/kernels/group_gemm.h"
#include "backends/cuda/kernels/rotary.h"
#include "core/float16.h"
#include "ir/graph.h"

using streamrt::DataType;
using streamrt::cuda::CudaResources;
using streamrt::cuda::GroupGemm;

namespace {

struct ShapeSpec {
  std::string name;
  int64_t k;
  std::vector<int64_t> n;
  bool gate, bias;
};

const std::vector<ShapeSpec> kShapes = {
    {"llama-qkv", 2048, {2048, 512, 512}, false, false},   {"llama-gateup", 2048, {8192, 8192}, true, false},
    {"qwen-qkv", 896, {896, 128, 128}, false, true},       {"qwen-gateup", 896, {4864, 4864}, true, false},
    {"llama8b-qkv", 4096, {4096, 1024, 1024}, false, false}, {"llama8b-gateup", 4096, {14336, 14336}, true, false},
    // One weight: a layer's o_proj and down_proj (plain MatMuls with the residual in a plan; here without it).
    {"llama-o", 2048, {2048}, false, false},               {"llama-down", 8192, {2048}, false, false},
    {"qwen-o", 896, {896}, false, false},                  {"qwen-down", 4864, {896}, false, false},
};


void* device_random(size_t elems, float scale, uint32_t seed) {
  std::vector<uint16_t> h(elems);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  for (auto& v : h) v = streamrt::Half(u(rng)).bits;
  return streamrt::bench::to_device(h);
}


// Microseconds a call of `launch` (one warm-up call first), or -1 when it fails.
double time_us(cudaStream_t s, int iters, const std::function<streamrt::Status()>& launch) {
  if (!launch().ok()) return -1;
  cudaEvent_t e0, e1;
  CHECK_CUDA(cudaEventCreate(&e0));
  CHECK_CUDA(cudaEventCreate(&e1));
  CHECK_CUDA(cudaEventRecord(e0, s));
  for (int i = 0; i < iters; ++i)
    if (!launch().ok()) return -1;
  CHECK_CUDA(cudaEventRecord(e1, s));
  CHECK_CUDA(cudaEventSynchronize(e1));
  CHECK_CUDA(cudaGetLastError());
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, e0, e1));
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  return 1000.0 * ms / iters;
}

// Largest |a - b| over `elems` float16 values in device memory.
double max_diff(const void* a, const void* b, size_t elems) {
  std::vector<uint16_t> ha(elems), hb(elems);
  CHECK_CUDA(cudaMemcpy(ha.data(), a, elems * 2, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(hb.data(), b, elems * 2, cudaMemcpyDeviceToHost));
  auto value = [](uint16_t bits) {
    streamrt::Half h;
    h.bits = bits;
    return double(float(h));
  };
  double m = 0;
  for (size_t i = 0; i < elems; ++i) m = std::max(m, std::fabs(value(ha[i]) - value(hb[i])));
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"group GEMM against cuBLASLt's GEMM a weight (markdown table)"};
  int iters = 50;
  int rotary = 0;
  std::string rows_arg = "512,2048,4096", shapes = "llama-qkv,llama-gateup,qwen-qkv,qwen-gateup", cols_arg = "128,256",
              json;
  app.add_option("--rows", rows_arg, "comma-separated rows of X");
  app.add_option("--shapes", shapes, "comma-separated: {llama,qwen,llama8b}-{qkv,gateup}, {llama,qwen}-{o,down}");
  app.add_option("--cols", cols_arg, "accumulator widths to time: 128, 256 or both");
  app.add_option("--iters", iters, "launches timed a point")->check(CLI::PositiveNumber);
  app.add_option("--json", json, "append one JSON line a point here");
  app.add_option("--rotary", rotary, "rotate Q and K (Q / K / V shapes) as heads of this size: 64 or 128")
      ->check(CLI::IsMember({0, 64, 128}));
  CLI11_PARSE(app, argc, argv);
  std::vector<int> rows_list, cols_list;
  try {
    rows_list = streamrt::bench::parse_list(rows_arg);
    cols_list = streamrt::bench::parse_list(cols_arg);
  } catch (const std::exception&) {
    std::fprintf(stderr, "error: --rows and --cols take comma-separated integers\n");
    return 2;
  }
  for (int c : cols_list)
    if (c != 128 && c != 256) {
      std::fprintf(stderr, "error: --cols: %d is not an accumulator width (128 or 256)\n", c);
      return 2;
    }

  CudaResources res = streamrt::bench::device_resources();
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  if (cublasLtCreate(&res.cublaslt) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "error: cublasLtCreate failed\n");
    return 1;
  }
  res.workspace_size = streamrt::cuda::kLtWorkspaceBytes;
  CHECK_CUDA(cudaMalloc(&res.workspace, res.workspace_size));
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, device));
  std::printf("# group_gemm_bench: %s, float16, %d launches a point\n\n", prop.name, iters);
  std::printf("| shape | rows | group 128 cols us | group 256 cols us | best TFLOP/s | cuBLASLt (+ gate) us | TFLOP/s | "
              "group / cuBLASLt | max diff |\n|---|---|---|---|---|---|---|---|---|\n");
  std::ofstream out;
  if (!json.empty()) out.open(json, std::ios::app);
  const streamrt::ir::Node untuned;  // no "__lt_algo": cuBLASLt's heuristic decides, as in an untuned plan
  const streamrt::cuda::LtStepTactics heuristic(untuned);
  for (const ShapeSpec& sh : kShapes) {
    if (("," + shapes + ",").find("," + sh.name + ",") == std::string::npos) continue;
    for (int rows : rows_list) {
      const size_t parts = sh.n.size();
      void* x = device_random(size_t(rows) * sh.k, 1.f, 1);
      std::vector<void*> w, b, y, ref;
      int64_t ncols = 0;
      for (size_t i = 0; i < parts; ++i) {
        w.push_back(device_random(size_t(sh.k) * sh.n[i], 1.f / std::sqrt(float(sh.k)), 10 + uint32_t(i)));
        b.push_back(sh.bias ? device_random(size_t(sh.n[i]), 0.5f, 20 + uint32_t(i)) : nullptr);
        y.push_back(device_random(size_t(rows) * sh.n[i], 1.f, 30));
        ref.push_back(device_random(size_t(rows) * sh.n[i], 1.f, 31));
        ncols += sh.n[i];
      }
      void* gated = device_random(size_t(rows) * sh.n[0], 1.f, 32);
      GroupGemm g;
      g.dtype = DataType::kFloat16, g.rows = rows, g.k = sh.k, g.x = x, g.parts = int(parts), g.gate = sh.gate;
      for (size_t i = 0; i < parts; ++i) g.part[i] = {w[i], b[i], sh.gate && i == 1 ? nullptr : y[i], sh.n[i]};
      // Rotary tables of one row a product row; Q and K rotated (both sides), the same tables.
      const bool rotate = rotary > 0 && !sh.gate;
      void* cos = rotate ? device_random(size_t(rows) * rotary, 1.f, 40) : nullptr;
      void* sin = rotate ? device_random(size_t(rows) * rotary, 1.f, 41) : nullptr;
      std::vector<streamrt::cuda::RotaryRows> rotations;
      if (rotate) {
        g.rotary_dim = rotary;
        for (size_t i = 0; i < 2; ++i) {
          g.part[i].cos = cos, g.part[i].sin = sin, g.part[i].table_rows = rows;
          rotations.push_back({ref[i], cos, sin, rows, sh.n[i], rotary, rows});
        }
      }
      double group_us[2] = {-1, -1};
      for (int c = 0; c < 2; ++c) {
        g.cols = c == 0 ? 128 : 256;
        if (std::find(cols_list.begin(), cols_list.end(), g.cols) == cols_list.end()) continue;
        if (streamrt::cuda::group_gemm_applies(g, res))
          group_us[c] = time_us(res.stream, iters, [&] { return streamrt::cuda::group_gemm(g, res, res.stream); });
      }
      const double lt_us = time_us(res.stream, iters, [&]() -> streamrt::Status {
        for (size_t i = 0; i < parts; ++i) {
          streamrt::cuda::Matmul2d m{DataType::kFloat16, rows, sh.k, sh.n[i], x, w[i], b[i], ref[i]};
          streamrt::Status st = streamrt::cuda::matmul_2d(res, heuristic, m);
          if (!st.ok()) return st;
        }
        if (rotate) return streamrt::cuda::rotate_rows(res, DataType::kFloat16, rotations);
        if (!sh.gate) return streamrt::ok_status();
        return streamrt::cuda::swiglu_gate(res.stream, DataType::kFloat16, gated, ref[0], ref[1], int64_t(rows) * sh.n[0]);
      });
      CHECK_CUDA(cudaStreamSynchronize(res.stream));
      const double flops = 2.0 * rows * sh.k * ncols;
      double best = -1;
      for (double us : group_us)
        if (us > 0 && (best < 0 || us < best)) best = us;
      // The last group launch (the last width timed) against cuBLASLt's outputs; NaN when none ran.
      double diff = best > 0 ? 0.0 : std::nan("");
      if (best > 0 && sh.gate) diff = max_diff(y[0], gated, size_t(rows) * sh.n[0]);
      if (best > 0 && !sh.gate)
        for (size_t i = 0; i < parts; ++i) diff = std::max(diff, max_diff(y[i], ref[i], size_t(rows) * sh.n[i]));
      auto cell = [](double us) { return us > 0 ? std::to_string(us).substr(0, 6) : std::string("n/a"); };
      std::printf("| %s | %d | %s | %s | %.0f | %s | %.0f | %.2f | %.3g |\n", sh.name.c_str(), rows,
                  cell(group_us[0]).c_str(), cell(group_us[1]).c_str(), best > 0 ? flops / best / 1e6 : 0.0,
                  cell(lt_us).c_str(), lt_us > 0 ? flops / lt_us / 1e6 : 0.0, best > 0 && lt_us > 0 ? best / lt_us : 0.0,
                  diff);
      if (out)
        out << "{\"shape\":\"" << sh.name << "\",\"rows\":" << rows << ",\"group128_us\":" << group_us[0]
            << ",\"group256_us\":" << group_us[1] << ",\"cublaslt_us\":" << lt_us << ",\"max_diff\":" << diff
            << "}\n";
      cudaFree(cos);
      cudaFree(sin);
      for (void* p : w) cudaFree(p);
      for (void* p : b) cudaFree(p);
      for (void* p : y) cudaFree(p);
      for (void* p : ref) cudaFree(p);
      cudaFree(gated);
      cudaFree(x);
    }
  }
  return 0;
}

// Shared by the conv fusion tests (tests/unit/fusion_conv_test.cc on the host,
// tests/gpu/conv_gpu_test.cc on a GPU): small graphs of a Conv followed by Relu / Add / Add+Relu,
// built by hand, and running a graph through the whole builder and runtime on a device, with
// and without the conv fusion.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <random>

#include "builder/build_graph.h"
#include "core/float16.h"
#include "ir/shape_inference.h"
#include "ops/conv.h"
#include "plan/plan.h"
#include "streamrt/runtime.h"
#include "tactics_test_util.h"

namespace streamrt::testing {

// What follows the Conv. kAddSwapped is Add(R, Y).
enum class ConvTail { kRelu, kAdd, kAddSwapped, kAddRelu, kAddSwappedRelu };

struct ConvBlock {
  Dims x = {2, 4, 6, 6};
  int64_t maps = 4;
  std::vector<int64_t> kernel = {3, 3}, pads = {1, 1, 1, 1}, strides = {1, 1};
  std::vector<int64_t> dilations = {};  // the attribute's default when empty
  int64_t group = 1;
  bool bias = true;
  ConvTail tail = ConvTail::kAddRelu;
  DataType dtype = DataType::kFloat32;
};

inline ir::Node graph_node(const std::string& op, std::vector<ir::ValueId> in, std::vector<ir::ValueId> out) {
  ir::Node n;
  n.name = op + "_" + std::to_string(out[0]);
  n.op_type = op;
  n.opset = 17;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// Uniform [-1, 1) values scaled by `scale`, rounded to `dtype`.
inline Tensor random_tensor(DataType dtype, const Dims& dims, uint32_t seed, float scale = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& f : v) f = dist(rng) * scale;
  if (dtype == DataType::kFloat32) return Tensor::from_vector(DataType::kFloat32, dims, v);
  std::vector<uint16_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    bits[i] = dtype == DataType::kFloat16 ? Half::from_float(v[i]) : BFloat16::from_float(v[i]);
  return Tensor::from_vector(dtype, dims, bits);
}

// Y = Conv(X, W[, B]); then the tail, reading the graph input R (Y's dims) for an Add. Inputs
// "X" (and "R"), output "out". Shapes are inferred.
inline ir::Graph conv_block_graph(const ConvBlock& b) {
  ir::Graph g;
  g.name = "conv_block";
  const ir::ValueId x = g.add_value("X", b.dtype, b.x, true);
  Dims wd = {b.maps, b.x[1] / b.group};
  wd.insert(wd.end(), b.kernel.begin(), b.kernel.end());
  const ir::ValueId w = g.add_value("W");
  // Weights scaled by 1 / sqrt(fan-in): outputs of order one, about half of them negative.
  int64_t fan_in = 1;
  for (size_t i = 1; i < wd.size(); ++i) fan_in *= wd[i];
  g.set_constant(w, random_tensor(b.dtype, wd, 11, 1.f / std::sqrt(static_cast<float>(fan_in))));
  ir::Node conv = graph_node("Conv", {x, w}, {g.add_value("Y")});
  if (b.bias) {
    const ir::ValueId bv = g.add_value("B");
    g.set_constant(bv, random_tensor(b.dtype, {b.maps}, 12, 0.5f));
    conv.inputs.push_back(bv);
  }
  conv.attrs["kernel_shape"] = ir::Attribute::make_ints(b.kernel);
  conv.attrs["pads"] = ir::Attribute::make_ints(b.pads);
  conv.attrs["strides"] = ir::Attribute::make_ints(b.strides);
  conv.attrs["group"] = ir::Attribute::make_int(b.group);
  if (!b.dilations.empty()) conv.attrs["dilations"] = ir::Attribute::make_ints(b.dilations);
  const ir::ValueId y = conv.outputs[0];
  g.inputs = {x};
  g.nodes.push_back(std::move(conv));
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  const bool add = b.tail != ConvTail::kRelu;
  const bool relu = b.tail == ConvTail::kRelu || b.tail == ConvTail::kAddRelu || b.tail == ConvTail::kAddSwappedRelu;
  const bool swapped = b.tail == ConvTail::kAddSwapped || b.tail == ConvTail::kAddSwappedRelu;
  ir::ValueId cur = y;
  if (add) {
    const ir::ValueId r = g.add_value("R", b.dtype, g.value(y).dims, true);
    g.inputs.push_back(r);
    const ir::ValueId sum = g.add_value(relu ? "sum" : "out");
    g.nodes.push_back(graph_node("Add", swapped ? std::vector{r, cur} : std::vector{cur, r}, {sum}));
    cur = sum;
  }
  if (relu) {
    const ir::ValueId out = g.add_value("out");
    g.nodes.push_back(graph_node("Relu", {cur}, {out}));
    cur = out;
  }
  g.outputs = {cur};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

// Blocks beyond the plain 3x3: asymmetric pads (CUDA pads X into the workspace first), a strided
// 1x1 (a ResNet projection), grouped, depthwise, dilated, 1-D, 3-D, and 4 spatial axes (which
// cuDNN does not take: the direct kernel runs).
inline std::vector<ConvBlock> varied_blocks() {
  return {
      {.x = {2, 4, 9, 8}, .maps = 6, .pads = {1, 0, 0, 1}},
      {.x = {2, 16, 14, 14}, .maps = 32, .kernel = {1, 1}, .pads = {0, 0, 0, 0}, .strides = {2, 2}},
      {.x = {2, 8, 10, 10}, .maps = 12, .group = 4, .tail = ConvTail::kAdd},
      {.x = {1, 16, 12, 12}, .maps = 16, .group = 16, .bias = false},
      {.x = {1, 4, 11, 11}, .maps = 4, .pads = {2, 2, 2, 2}, .dilations = {2, 2}, .tail = ConvTail::kRelu},
      {.x = {2, 4, 33}, .maps = 4, .kernel = {3}, .pads = {1, 1}, .strides = {1}},
      {.x = {1, 4, 6, 6, 6}, .maps = 4, .kernel = {3, 3, 3}, .pads = {1, 1, 1, 1, 1, 1}, .strides = {1, 1, 1}},
      {.x = {1, 3, 4, 4, 4, 4}, .maps = 3, .kernel = {2, 2, 2, 2}, .pads = {1, 0, 1, 0, 0, 1, 0, 1},
       .strides = {1, 1, 1, 1}},
      {.x = {1, 3, 4, 4, 4, 4}, .maps = 3, .kernel = {2, 2, 2, 2}, .pads = {0, 0, 0, 0, 0, 0, 0, 0},
       .strides = {1, 1, 1, 1}, .bias = false, .tail = ConvTail::kRelu},
  };
}

// `fuse`: BuilderPasses::conv_fusion; `conv_tactics` (with `tactics`): BuilderPasses::conv_tactics.
inline Result<std::vector<uint8_t>> build_graph_plan(const ir::Graph& g, DeviceType device, bool fuse,
                                                     DataType precision = DataType::kFloat32, bool tactics = true,
                                                     bool conv_tactics = false) {
  BuilderConfig c;
  c.device = device;
  c.float_precision = precision;
  c.tactics = tactics;
  c.passes.conv_fusion = fuse;
  c.passes.conv_tactics = conv_tactics;
  return builder::build_plan_from_graph(g, c);
}

// Runs a plan on `device` with the graph's inputs and returns its one output; `options` (device
// aside) are the runtime's.
inline Result<Tensor> run_graph_plan(DeviceType device, std::vector<uint8_t> plan,
                                     const std::map<std::string, Tensor>& inputs, RuntimeOptions ro = {}) {
  ro.device = device;
  SRT_ASSIGN_OR_RETURN(auto rt, Runtime::create(ro));
  SRT_ASSIGN_OR_RETURN(auto engine, rt->load_engine_bytes(std::move(plan)));
  SRT_ASSIGN_OR_RETURN(auto ctx, engine->create_execution_context());
  std::vector<DeviceBuffer> keep;
  Tensor out;
  size_t out_buffer = 0;
  for (const TensorDesc& io : engine->io_tensors()) {
    if (!io.is_input) continue;
    auto it = inputs.find(io.name);
    if (it == inputs.end()) return invalid_argument("no value for input '" + io.name + "'");
    SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(device, it->second.nbytes()));
    SRT_RETURN_IF_ERROR(b.copy_from_host(it->second.data(), it->second.nbytes()));
    SRT_RETURN_IF_ERROR(ctx->set_input_shape(io.name, it->second.dims()));
    SRT_RETURN_IF_ERROR(ctx->set_tensor_address(io.name, b.data(), b.size()));
    keep.push_back(std::move(b));
  }
  for (const TensorDesc& io : engine->io_tensors()) {
    if (!io.is_input) {
      SRT_ASSIGN_OR_RETURN(const Dims dims, ctx->tensor_shape(io.name));  // the inputs' shapes are set
      SRT_ASSIGN_OR_RETURN(out, Tensor::allocate(io.dtype, dims));
      SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(device, out.nbytes()));
      SRT_RETURN_IF_ERROR(ctx->set_tensor_address(io.name, b.data(), b.size()));
      out_buffer = keep.size();
      keep.push_back(std::move(b));
    }
  }
  SRT_RETURN_IF_ERROR(ctx->execute());
  SRT_RETURN_IF_ERROR(keep.at(out_buffer).copy_to_host(out.mutable_data(), out.nbytes()));
  return out;
}

// The graph's inputs: random X and R of their dims and dtypes.
inline std::map<std::string, Tensor> block_inputs(const ir::Graph& g, uint32_t seed) {
  std::map<std::string, Tensor> in;
  for (ir::ValueId v : g.inputs) in[g.value(v).name] = random_tensor(g.value(v).dtype, g.value(v).dims, seed++);
  return in;
}

}  // namespace streamrt::testing

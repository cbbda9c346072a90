// A tiny KV-cache decoder written by hand, and a decode loop over it through the public API, for the
// in-place KV cache (BuilderConfig::kv_cache_in_place) tests on the CPU and the GPU:
//
//   present_key   = Concat(past_key, key, axis 2)        [1, 2, P + n, 8]
//   present_value = Concat(past_value, value, axis -2)   [1, 2, P + n, 8]
//   y             = Attention(query, present_key, present_value; causal, kv_group 2)   [1, 4, n, 8]
//
// Profiles: n in 1..3 (opt 1), P in 1..13 (opt 8), so present reaches 16 positions: the capacity.
// float32 with head size 8 unless TinyKv says otherwise (float16 with 64 takes CUDA's tensor-core path).
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <random>

#include "builder/build_graph.h"
#include "core/float16.h"
#include "ir/shape_inference.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt::testing {

inline constexpr int64_t kTinyHeads = 4, kTinyKvHeads = 2, kTinyDim = 8, kTinyMaxPast = 13, kTinyMaxNew = 3;

struct TinyKv {
  DataType dtype = DataType::kFloat32;
  int64_t dim = kTinyDim;
};
inline constexpr int64_t kTinyCapacity = kTinyMaxPast + kTinyMaxNew;

inline ir::Graph tiny_kv_graph(TinyKv t = {}) {
  ir::Graph g;
  g.name = "tiny_kv";
  auto in = [&](const char* name, int64_t heads) {
    const ir::ValueId v = g.add_value(name, t.dtype, {1, heads, kDynamicDim, t.dim}, true);
    g.inputs.push_back(v);
    return v;
  };
  const ir::ValueId q = in("query", kTinyHeads), k = in("key", kTinyKvHeads), v = in("value", kTinyKvHeads);
  const ir::ValueId pk = in("past_key", kTinyKvHeads), pv = in("past_value", kTinyKvHeads);
  const ir::ValueId y = g.add_value("y"), ck = g.add_value("present_key"), cv = g.add_value("present_value");
  auto node = [&](const char* op, std::vector<ir::ValueId> ins, ir::ValueId out, std::map<std::string, ir::Attribute> a) {
    ir::Node n;
    n.name = std::string(op) + "_" + g.value(out).name;
    n.op_type = op;
    n.opset = 17;
    n.inputs = std::move(ins);
    n.outputs = {out};
    n.attrs = std::move(a);
    g.nodes.push_back(std::move(n));
  };
  node("Concat", {pk, k}, ck, {{"axis", ir::Attribute::make_int(2)}});
  node("Concat", {pv, v}, cv, {{"axis", ir::Attribute::make_int(-2)}});
  node("Attention", {q, ck, cv}, y, {{"causal", ir::Attribute::make_int(1)}, {"kv_group", ir::Attribute::make_int(2)}});
  g.outputs = {y, ck, cv};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return g;
}

inline BuilderConfig tiny_kv_config(DeviceType device, bool in_place, TinyKv t = {}) {
  BuilderConfig c;
  c.device = device;
  c.kv_cache_in_place = in_place;
  for (const char* name : {"query", "key", "value"}) {
    const int64_t h = std::string(name) == "query" ? kTinyHeads : kTinyKvHeads;
    c.profiles[name] = {{1, h, 1, t.dim}, {1, h, 1, t.dim}, {1, h, kTinyMaxNew, t.dim}};
  }
  for (const char* name : {"past_key", "past_value"})
    c.profiles[name] = {{1, kTinyKvHeads, 1, t.dim}, {1, kTinyKvHeads, 8, t.dim}, {1, kTinyKvHeads, kTinyMaxPast, t.dim}};
  return c;
}

inline Result<std::vector<uint8_t>> build_tiny_kv(DeviceType device, bool in_place, BuildReport* report = nullptr,
                                                  TinyKv t = {}) {
  return builder::build_plan_from_graph(tiny_kv_graph(t), tiny_kv_config(device, in_place, t), report);
}

inline Tensor tiny_random(Dims dims, uint32_t seed, DataType dtype = DataType::kFloat32) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(dims_numel(dims)));
  for (float& x : v) x = u(rng);
  if (dtype == DataType::kFloat32) return Tensor::from_vector(DataType::kFloat32, std::move(dims), v);
  std::vector<uint16_t> bits(v.size());
  for (size_t i = 0; i < v.size(); ++i) bits[i] = Half::from_float(v[i]);
  return Tensor::from_vector(DataType::kFloat16, std::move(dims), bits);
}

// How the loop hands the cache to the engine: host copies every step (dense or packed into the
// plan's layout: any plan), one device buffer per pair bound to past and present (in place), or
// two that swap.
enum class CacheBinding { kHostRoundTrip, kOneBuffer, kTwoBuffers };

struct TinyDecodeRun {
  std::vector<Tensor> ys;  // per step
  std::map<std::string, Tensor> presents;  // after the last step, dense
};

// New tokens per step: a 3-token prompt after one cached position, then single tokens and a pair.
inline const std::vector<int64_t>& tiny_steps() {
  static const std::vector<int64_t> n = {3, 1, 1, 2, 1, 1, 1, 1, 2};  // 1 + 13 positions = 14 < 16
  return n;
}

inline Result<TinyDecodeRun> run_tiny_decode(DeviceType device, std::vector<uint8_t> plan, CacheBinding binding,
                                             TinyKv tk = {}) {
  SRT_ASSIGN_OR_RETURN(auto rt, Runtime::create({device}));
  SRT_ASSIGN_OR_RETURN(auto engine, rt->load_engine_bytes(std::move(plan)));
  SRT_ASSIGN_OR_RETURN(auto ctx, engine->create_execution_context());
  std::map<std::string, TensorDesc> desc;
  for (const TensorDesc& d : engine->io_tensors()) desc[d.name] = d;
  struct Pair {
    std::string past, present;
    Tensor host;  // dense, kHostRoundTrip
    DeviceBuffer buf[2];
    int cur = 0;
  };
  std::vector<Pair> pairs(2);
  pairs[0].past = "past_key", pairs[0].present = "present_key";
  pairs[1].past = "past_value", pairs[1].present = "present_value";
  int64_t past = 1;
  const Dims kv1 = {1, kTinyKvHeads, 1, tk.dim};
  for (size_t i = 0; i < pairs.size(); ++i) {
    Pair& p = pairs[i];
    p.host = tiny_random(kv1, 100 + static_cast<uint32_t>(i), tk.dtype);
    if (binding == CacheBinding::kHostRoundTrip) continue;
    const TensorDesc& d = desc.at(p.past);
    for (int b = 0; b < (binding == CacheBinding::kOneBuffer ? 1 : 2); ++b) {
      SRT_ASSIGN_OR_RETURN(p.buf[b], DeviceBuffer::allocate(device, d.storage_bytes(kv1)));
    }
    std::vector<uint8_t> stored(p.buf[0].size());
    SRT_RETURN_IF_ERROR(pack_to_storage(d, kv1, p.host.data(), stored.data()));
    SRT_RETURN_IF_ERROR(p.buf[0].copy_from_host(stored.data(), stored.size()));
  }
  TinyDecodeRun out;
  std::deque<DeviceBuffer> keep;  // references stay valid as it grows
  for (size_t s = 0; s < tiny_steps().size(); ++s) {
    const int64_t n = tiny_steps()[s];
    keep.clear();
    for (const char* name : {"query", "key", "value"}) {
      const Tensor t = tiny_random({1, std::string(name) == "query" ? kTinyHeads : kTinyKvHeads, n, tk.dim},
                                   static_cast<uint32_t>(s * 10 + name[0]), tk.dtype);
      SRT_ASSIGN_OR_RETURN(DeviceBuffer b, DeviceBuffer::allocate(device, t.nbytes()));
      SRT_RETURN_IF_ERROR(b.copy_from_host(t.data(), t.nbytes()));
      SRT_RETURN_IF_ERROR(ctx->set_input_shape(name, t.dims()));
      SRT_RETURN_IF_ERROR(ctx->set_tensor_address(name, b.data(), b.size()));
      keep.push_back(std::move(b));
    }
    const Dims pd = {1, kTinyKvHeads, past, tk.dim}, qd = {1, kTinyKvHeads, past + n, tk.dim};
    std::vector<DeviceBuffer*> present_buf;
    for (Pair& p : pairs) {
      SRT_RETURN_IF_ERROR(ctx->set_input_shape(p.past, pd));
      if (binding == CacheBinding::kHostRoundTrip) {
        std::vector<uint8_t> stored(desc.at(p.past).storage_bytes(pd));
        SRT_RETURN_IF_ERROR(pack_to_storage(desc.at(p.past), pd, p.host.data(), stored.data()));
        SRT_ASSIGN_OR_RETURN(DeviceBuffer in, DeviceBuffer::allocate(device, stored.size()));
        SRT_RETURN_IF_ERROR(in.copy_from_host(stored.data(), stored.size()));
        SRT_ASSIGN_OR_RETURN(DeviceBuffer o, DeviceBuffer::allocate(device, desc.at(p.present).storage_bytes(qd)));
        SRT_RETURN_IF_ERROR(ctx->set_tensor_address(p.past, in.data(), in.size()));
        SRT_RETURN_IF_ERROR(ctx->set_tensor_address(p.present, o.data(), o.size()));
        keep.push_back(std::move(in));
        keep.push_back(std::move(o));
        present_buf.push_back(&keep.back());
        continue;
      }
      DeviceBuffer& in = p.buf[p.cur];
      DeviceBuffer& o = binding == CacheBinding::kOneBuffer ? in : p.buf[1 - p.cur];
      SRT_RETURN_IF_ERROR(ctx->set_tensor_address(p.past, in.data(), in.size()));
      SRT_RETURN_IF_ERROR(ctx->set_tensor_address(p.present, o.data(), o.size()));
      present_buf.push_back(&o);
    }
    Tensor y = Tensor::allocate(tk.dtype, {1, kTinyHeads, n, tk.dim}).value();
    SRT_ASSIGN_OR_RETURN(DeviceBuffer yb, DeviceBuffer::allocate(device, y.nbytes()));
    SRT_RETURN_IF_ERROR(ctx->set_tensor_address("y", yb.data(), yb.size()));
    SRT_RETURN_IF_ERROR(ctx->execute());  // synchronous
    SRT_RETURN_IF_ERROR(yb.copy_to_host(y.mutable_data(), y.nbytes()));
    out.ys.push_back(std::move(y));
    for (size_t i = 0; i < pairs.size(); ++i) {
      Pair& p = pairs[i];
      std::vector<uint8_t> stored(present_buf[i]->size());
      SRT_RETURN_IF_ERROR(present_buf[i]->copy_to_host(stored.data(), stored.size()));
      Tensor dense = Tensor::allocate(tk.dtype, qd).value();
      SRT_RETURN_IF_ERROR(unpack_from_storage(desc.at(p.present), qd, stored.data(), dense.mutable_data()));
      p.host = dense;
      out.presents[p.present] = std::move(dense);
      if (binding == CacheBinding::kTwoBuffers) p.cur = 1 - p.cur;
    }
    past += n;
  }
  return out;
}

}  // namespace streamrt::testing

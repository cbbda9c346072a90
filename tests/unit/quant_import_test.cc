// Pre-quantized models (builder/import_quantized.cc): DequantizeLinear feeding MatMul / Gemm
// weights and com.microsoft MatMulNBits become WeightOnlyMatMul steps reading the model's codes
// compressed. Plans built from hand-written models (tests/unit/quant_import_util.h) must hold
// WeightOnlyMatMul steps and no dequantization, stream exactly the compressed bytes at budget 0,
// compute the weight the model's codes stand for (checked in double), split into chunks with the
// same outputs, go through the engine cache, and refuse what they cannot read. onnxruntime's outputs
// on such models are the onnx-test fixtures (tests/fixtures/quant_import).
#include <gtest/gtest.h>

#include <filesystem>

#include "onnx/tensor_proto.h"
#include "ops/op.h"
#include "ops/weight_quant.h"
#include "plan/plan.h"
#include "quant_import_util.h"
#include "streaming_test_util.h"
#include "streamrt/cache.h"
#include "streamrt/refit.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;
using Spec = QuantWeightSpec;
using Layout = QuantWeightSpec::Layout;
constexpr int kI8 = onnx::TensorProto_DataType_INT8, kU8 = onnx::TensorProto_DataType_UINT8;

std::string write_model(const onnx::ModelProto& m, const std::string& tag) {
  const auto path =
      std::filesystem::temp_directory_path() / ("srt_qimport_" + tag + "_" + std::to_string(getpid()) + ".onnx");
  write_file(path, serialize(m));
  return path.string();
}

BuilderConfig streaming_config(uint64_t chunk = 0) {
  BuilderConfig c;
  c.weight_streaming = true;
  c.min_streamable_bytes = 1;  // every weight streams: codes, scales, zero points, bias
  c.stream_chunk_bytes = chunk;
  return c;
}

struct Built {
  plan::PlanData plan;
  std::shared_ptr<Engine> engine;
  BuildReport report;
};

Result<Built> build(const onnx::ModelProto& m, const BuilderConfig& c, const std::string& tag) {
  const std::string path = write_model(m, tag);
  Built b;
  auto bytes = build_plan_from_onnx(path, c, &b.report);
  std::filesystem::remove(path);
  if (!bytes.ok()) return bytes.status();
  SRT_ASSIGN_OR_RETURN(plan::LoadedPlan loaded, plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr));
  b.plan = loaded.data;
  SRT_ASSIGN_OR_RETURN(auto runtime, Runtime::create({DeviceType::kCpu}));
  SRT_ASSIGN_OR_RETURN(b.engine, runtime->load_engine_bytes(std::move(bytes).value()));
  return b;
}

std::map<std::string, Tensor> inputs_for(const Spec& s, uint32_t seed = 5) {
  return {{"x", Tensor::from_vector<float>(DataType::kFloat32, {s.m, s.k}, random_floats(s.m * s.k, seed))}};
}

void expect_matches_reference(const QuantWeightModel& q, const Spec& s, const std::map<std::string, Tensor>& in,
                              const std::vector<uint8_t>& out) {
  const float* x = in.at("x").data_as<float>();
  const auto ref = quant_reference(q, std::vector<float>(x, x + s.m * s.k), s.m, s.k, s.n);
  ASSERT_EQ(out.size(), ref.size() * 4);
  const float* y = reinterpret_cast<const float*>(out.data());
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(y[i], ref[i], 1e-5 * (1 + std::fabs(ref[i]))) << "element " << i;
}

// Steps by op type.
std::map<std::string, int> step_ops(const plan::PlanData& p) {
  std::map<std::string, int> ops;
  for (const ir::Node& s : p.steps) ops[s.op_type]++;
  return ops;
}

const ir::Node* weight_only_step(const plan::PlanData& p) {
  for (const ir::Node& s : p.steps)
    if (s.op_type == ops::kWeightOnlyMatMul) return &s;
  return nullptr;
}

// Bytes the step's compressed weight takes: codes, float32 scales, zero points (bias apart).
uint64_t compressed_bytes(int bits, int64_t group, int64_t k, int64_t n, bool zeros8) {
  if (bits == 8) return static_cast<uint64_t>(n * k + n * 4 + (zeros8 ? n : 0));
  const int64_t groups = (k + group - 1) / group;
  return static_cast<uint64_t>(n * groups * group / 2 + n * groups * 4 + n * groups);
}

struct Expect {
  Spec spec;
  int bits;
  int64_t group;  // 4 bits
  bool zeros8;    // 8 bits: zero points kept (else symmetric codes)
};

std::vector<Expect> import_cases() {
  const int I4 = kOnnxInt4, U4 = kOnnxUInt4;
  using F = Spec::Form;
  return {
      {{F::kDequantize, kI8, Layout::kTensor, 0, false, "MatMul", false, false, 1, 64, 48}, 8, 0, false},
      {{F::kDequantize, kI8, Layout::kChannel, 0, true, "MatMul", false, true, 12, 96, 40}, 8, 0, true},
      {{F::kDequantize, kU8, Layout::kChannel, 0, true, "Gemm", false, true, 3, 80, 33}, 8, 0, true},
      {{F::kDequantize, kU8, Layout::kTensor, 0, true, "Gemm", true, false, 9, 64, 20}, 8, 0, true},
      {{F::kDequantize, kI8, Layout::kChannel, 0, false, "MatMul", true, false, 2, 70, 24}, 8, 0, false},
      {{F::kDequantize, I4, Layout::kBlocked, 32, true, "MatMul", false, false, 1, 128, 40}, 4, 32, false},
      {{F::kDequantize, U4, Layout::kBlocked, 16, true, "MatMul", false, true, 10, 72, 24}, 4, 16, false},
      {{F::kDequantize, I4, Layout::kBlocked, 64, false, "Gemm", false, true, 4, 200, 17}, 4, 64, false},
      {{F::kDequantize, U4, Layout::kBlocked, 256, true, "MatMul", true, false, 1, 512, 16}, 4, 256, false},
      // 4-bit codes per channel: K = 100 in one group of 128 (64 bytes a row) beats smaller groups.
      {{F::kDequantize, I4, Layout::kChannel, 0, true, "MatMul", false, false, 3, 100, 20}, 4, 128, false},
      {{F::kMatMulNBits, 0, Layout::kBlocked, 32, true, "", false, true, 1, 64, 48}, 4, 32, false},
      {{F::kMatMulNBits, 0, Layout::kBlocked, 64, false, "", false, false, 12, 200, 20}, 4, 64, false},
      {{F::kMatMulNBits, 0, Layout::kBlocked, 16, true, "", false, false, 9, 80, 8}, 4, 16, false},
  };
}

TEST(QuantImport, QuantizedWeightsBecomeCompressedStepsStreamingTheirBytes) {
  uint32_t seed = 1;
  for (const Expect& e : import_cases()) {
    const Spec& s = e.spec;
    SCOPED_TRACE(s.name());
    const QuantWeightModel q = make_quant_weight_model(s, seed++);
    auto b = build(q.model, streaming_config(), "whole");
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_EQ(b->report.steps_prequantized, 1u);
    // One step reads the codes: no dequantization, Transpose, MatMul, Gemm or Add is left.
    EXPECT_EQ(step_ops(b->plan), (std::map<std::string, int>{{ops::kWeightOnlyMatMul, 1}}));
    const ir::Node* step = weight_only_step(b->plan);
    ASSERT_NE(step, nullptr);
    EXPECT_EQ(step->attr_int("bits").value(), e.bits);
    if (e.bits == 4) {
      EXPECT_EQ(step->attr_int("group").value(), e.group);
    }
    EXPECT_EQ(step->attr_string("__prequantized").value(), q.codes_name);
    const uint64_t expected = compressed_bytes(e.bits, e.group, s.k, s.n, e.zeros8) + (s.bias ? s.n * 4 : 0);
    EXPECT_EQ(b->engine->streamable_weights_size(), expected);
    ASSERT_TRUE(b->engine->set_weight_streaming_budget(0).ok());
    StreamingStats stats;
    const auto in = inputs_for(s);
    auto out = run_once(*b->engine, in, &stats);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(stats.bytes_streamed, expected);
    expect_matches_reference(q, s, in, (*out)[0]);
  }
}

// MatMulNBits' B is the step's packed weight byte for byte (no re-packing).
TEST(QuantImport, MatMulNBitsCodesAreStoredAsTheModelHasThem) {
  const Spec s{Spec::Form::kMatMulNBits, 0, Layout::kBlocked, 32, true, "", false, false, 1, 96, 24};
  const QuantWeightModel q = make_quant_weight_model(s, 7);
  auto b = build(q.model, BuilderConfig{}, "nbits");
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  const std::string& raw = q.model.graph().initializer(0).raw_data();
  ASSERT_EQ(q.model.graph().initializer(0).name(), "B");
  bool found = false;
  for (size_t i = 0; i < b->plan.weights.size(); ++i)
    if (b->plan.weights[i].name == "B::q") {
      found = true;
      const Tensor& t = b->plan.weight_data[i];
      EXPECT_EQ(t.dims(), (Dims{24, 48}));
      ASSERT_EQ(t.nbytes(), raw.size());
      EXPECT_EQ(std::memcmp(t.data(), raw.data(), raw.size()), 0);
    }
  EXPECT_TRUE(found);
}

TEST(QuantImport, ChunkSplitsKeepTheOutputsAndTheCompressedBytes) {
  using F = Spec::Form;
  for (const Spec& s : {Spec{F::kDequantize, kU8, Layout::kChannel, 0, true, "MatMul", false, true, 3, 96, 200},
                        Spec{F::kMatMulNBits, 0, Layout::kBlocked, 32, true, "", false, true, 10, 128, 200}}) {
    SCOPED_TRACE(s.name());
    const QuantWeightModel q = make_quant_weight_model(s, 11);
    auto whole = build(q.model, streaming_config(), "whole");
    auto split = build(q.model, streaming_config(4096), "split");  // 64-column chunks
    ASSERT_TRUE(whole.ok() && split.ok());
    EXPECT_GE(split->report.steps_split, 1u);
    EXPECT_GE(step_ops(split->plan)[ops::kWeightOnlyMatMul], 2);
    EXPECT_EQ(split->engine->streamable_weights_size(), whole->engine->streamable_weights_size());
    ASSERT_TRUE(split->engine->set_weight_streaming_budget(0).ok());
    const auto in = inputs_for(s);
    StreamingStats stats;
    auto a = run_once(*whole->engine, in);
    auto c = run_once(*split->engine, in, &stats);
    ASSERT_TRUE(a.ok() && c.ok());
    EXPECT_EQ(*a, *c);
    EXPECT_EQ(stats.bytes_streamed, split->engine->streamable_weights_size());
  }
}

// Patterns WeightOnlyMatMul cannot hold stay DequantizeLinear + MatMul, folded to a float weight.
TEST(QuantImport, DequantizationsThatDoNotFitAreFoldedAsBefore) {
  using F = Spec::Form;
  // Per-axis scales along K (axis 0 of a [K, N] weight, K = N); a block size of 8; blocked
  // codes beyond 4 bits.
  const Spec along_k{F::kDequantize, kI8, Layout::kChannel, 0, true, "MatMul", false, false, 2, 48, 48};
  const Spec block8{F::kDequantize, kOnnxInt4, Layout::kBlocked, 8, true, "MatMul", false, false, 2, 64, 16};
  const Spec wide_blocks{F::kDequantize, kI8, Layout::kBlocked, 32, true, "MatMul", false, false, 2, 64, 16};
  for (const Spec& s : {along_k, block8, wide_blocks}) {
    SCOPED_TRACE(s.name());
    QuantWeightModel q = make_quant_weight_model(s, 13);
    if (s.k == s.n) {  // the per-channel model read along K instead: row kk scaled by w_scale[kk]
      for (auto& a : *q.model.mutable_graph()->mutable_node(0)->mutable_attribute())
        if (a.name() == "axis") a.set_i(0);
      const auto& inits = q.model.graph().initializer();  // w_q, w_scale, w_zp
      const float* scale = reinterpret_cast<const float*>(inits[1].raw_data().data());
      for (int64_t kk = 0; kk < s.k; ++kk)
        for (int64_t c = 0; c < s.n; ++c)
          q.w[kk * s.n + c] = (static_cast<int8_t>(inits[0].raw_data()[kk * s.n + c]) -
                               static_cast<double>(static_cast<int8_t>(inits[2].raw_data()[kk]))) *
                              scale[kk];
    }
    auto b = build(q.model, BuilderConfig{}, "fold");
    ASSERT_TRUE(b.ok()) << b.status().to_string();
    EXPECT_EQ(b->report.steps_prequantized, 0u);
    EXPECT_EQ(step_ops(b->plan), (std::map<std::string, int>{{"MatMul", 1}}));
    const auto in = inputs_for(s);
    auto out = run_once(*b->engine, in);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_matches_reference(q, s, in, (*out)[0]);
  }
}

onnx::AttributeProto* attribute(onnx::NodeProto* n, const std::string& name) {
  for (auto& a : *n->mutable_attribute())
    if (a.name() == name) return &a;
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  return a;
}

TEST(QuantImport, MatMulNBitsItCannotReadCompressedIsRefusedNamingTheNode) {
  const Spec s{Spec::Form::kMatMulNBits, 0, Layout::kBlocked, 32, true, "", false, false, 1, 64, 16};
  auto expect_refused = [&](const onnx::ModelProto& m, StatusCode code, const std::vector<std::string>& words) {
    auto b = build(m, BuilderConfig{}, "refused");
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), code) << b.status().to_string();
    for (const std::string& w : words) EXPECT_NE(b.status().message().find(w), std::string::npos) << w;
  };
  {  // B computed in the graph: an input here.
    QuantWeightModel q = make_quant_weight_model(s, 3);
    auto* g = q.model.mutable_graph();
    g->mutable_initializer()->erase(g->mutable_initializer()->begin());
    add_input(g, "B", onnx::TensorProto_DataType_UINT8, {16, 2, 16});
    expect_refused(q.model, StatusCode::kUnsupported, {"mmnb", "'B'", "computed", "constants"});
  }
  {  // g_idx that reorders K (act-order).
    QuantWeightModel q = make_quant_weight_model(s, 3);
    std::vector<int32_t> g_idx(64);
    for (int k = 0; k < 64; ++k) g_idx[k] = k % 2;
    *q.model.mutable_graph()->add_initializer() = raw_tensor<int32_t>("g_idx", onnx::TensorProto_DataType_INT32, {64}, g_idx);
    q.model.mutable_graph()->mutable_node(0)->add_input("g_idx");
    expect_refused(q.model, StatusCode::kUnsupported, {"mmnb", "g_idx[1] = 1"});
    for (int k = 0; k < 64; ++k) g_idx[k] = k / 32;  // the plain order is fine
    *q.model.mutable_graph()->mutable_initializer(q.model.graph().initializer_size() - 1) =
        raw_tensor<int32_t>("g_idx", onnx::TensorProto_DataType_INT32, {64}, g_idx);
    EXPECT_TRUE(build(q.model, BuilderConfig{}, "gidx").ok());
  }
  {  // 8-bit codes; a block size that is no power of two.
    QuantWeightModel q = make_quant_weight_model(s, 3);
    attribute(q.model.mutable_graph()->mutable_node(0), "bits")->set_i(8);
    expect_refused(q.model, StatusCode::kUnsupported, {"mmnb", "bits = 8"});
    q = make_quant_weight_model(s, 3);
    attribute(q.model.mutable_graph()->mutable_node(0), "block_size")->set_i(24);
    expect_refused(q.model, StatusCode::kInvalidModel, {"mmnb", "block_size", "24"});
  }
  {  // Fractional float zero points.
    QuantWeightModel q = make_quant_weight_model(s, 3);
    auto* g = q.model.mutable_graph();
    for (auto& init : *g->mutable_initializer())
      if (init.name() == "zp") init = f32_raw("zp", {32}, std::vector<float>(32, 7.5f));
    expect_refused(q.model, StatusCode::kUnsupported, {"mmnb", "7.5", "whole zero points"});
  }
}

// The model's codes are the plan's: refit by the codes' name is refused, refit of the plan
// weights made from them and refit from the ONNX model work.
TEST(QuantImport, RefitTakesThePlanWeightsOrTheModelNotTheCodesByName) {
  const Spec s{Spec::Form::kDequantize, kU8, Layout::kChannel, 0, true, "MatMul", false, false, 3, 64, 32};
  const QuantWeightModel old_q = make_quant_weight_model(s, 21);
  const QuantWeightModel new_q = make_quant_weight_model(s, 22);
  auto b = build(old_q.model, BuilderConfig{}, "old");
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  const auto in = inputs_for(s);
  auto r = Refitter::create(b->engine).value();
  const std::vector<uint8_t> codes(static_cast<size_t>(s.k * s.n), 1);
  Status st = r->set_weights("w_q", DataType::kUInt8, {s.k, s.n}, codes.data(), codes.size());
  EXPECT_EQ(st.code(), StatusCode::kUnsupported) << st.to_string();
  EXPECT_NE(st.message().find("w_q::scales"), std::string::npos) << st.to_string();
  // Doubling every scale doubles the output.
  auto before = run_once(*b->engine, in);
  ASSERT_TRUE(before.ok());
  std::vector<float> scales(s.n);
  for (int64_t c = 0; c < s.n; ++c)
    scales[c] = 2 * reinterpret_cast<const float*>(old_q.model.graph().initializer(1).raw_data().data())[c];
  ASSERT_TRUE(r->set_weights("w_q::scales", DataType::kFloat32, {s.n}, scales.data(), scales.size() * 4).ok());
  ASSERT_TRUE(r->refit().ok());
  auto doubled = run_once(*b->engine, in);
  ASSERT_TRUE(doubled.ok());
  const float* y0 = reinterpret_cast<const float*>((*before)[0].data());
  const float* y1 = reinterpret_cast<const float*>((*doubled)[0].data());
  for (int64_t i = 0; i < s.m * s.n; ++i) ASSERT_FLOAT_EQ(y1[i], 2 * y0[i]) << i;
  // From a model with other codes: what a build of that model computes.
  const std::string path = write_model(new_q.model, "refit");
  auto r2 = Refitter::create(b->engine).value();
  st = r2->set_weights_from_onnx(path);
  std::filesystem::remove(path);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_TRUE(r2->refit().ok());
  auto got = run_once(*b->engine, in);
  ASSERT_TRUE(got.ok());
  expect_matches_reference(new_q, s, in, (*got)[0]);
}

// The engine cache keys the optimized graph, which holds the compressed steps: a second build of
// the model is a hit that runs like the first.
TEST(QuantImport, CachedBuildsHitAndRunTheSame) {
  const Spec s{Spec::Form::kMatMulNBits, 0, Layout::kBlocked, 32, true, "", false, true, 2, 64, 24};
  const QuantWeightModel q = make_quant_weight_model(s, 31);
  const std::string path = write_model(q.model, "cache");
  MemoryEngineCache cache;
  CachedBuildInfo first, second;
  auto a = build_plan_cached(path, BuilderConfig{}, cache, &first);
  auto b = build_plan_cached(path, BuilderConfig{}, cache, &second);
  std::filesystem::remove(path);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(first.hit);
  EXPECT_TRUE(second.hit) << second.miss_reason;
  auto rt = Runtime::create({DeviceType::kCpu}).value();
  auto ea = rt->load_engine_bytes(std::move(a).value());
  auto eb = rt->load_engine_bytes(std::move(b).value());
  ASSERT_TRUE(ea.ok() && eb.ok());
  const auto in = inputs_for(s);
  auto ya = run_once(**ea, in);
  auto yb = run_once(**eb, in);
  ASSERT_TRUE(ya.ok() && yb.ok());
  EXPECT_EQ(*ya, *yb);
  expect_matches_reference(q, s, in, (*yb)[0]);
}

// MatMulNBits' own CPU kernel (programs' host steps run it; the builder never leaves one).
TEST(QuantImport, MatMulNBitsKernelComputesTheDequantizedProduct) {
  const Spec s{Spec::Form::kMatMulNBits, 0, Layout::kBlocked, 16, true, "", false, true, 5, 72, 12};
  const QuantWeightModel q = make_quant_weight_model(s, 41);
  const auto& inits = q.model.graph().initializer();
  auto tensor = [&](const std::string& name) {
    for (const auto& t : inits)
      if (t.name() == name) return onnx_import::tensor_from_proto(t, ".").value();
    return Tensor{};
  };
  const onnx::NodeProto& np = q.model.graph().node(0);
  ir::Node n;
  n.name = np.name();
  n.op_type = np.op_type();
  n.domain = np.domain();
  n.opset = 1;
  for (const auto& a : np.attribute()) n.attrs[a.name()] = ir::Attribute::make_int(a.i());
  n.inputs = {0, 1, 2, 3, ir::kNoValue, 5};
  n.outputs = {6};
  const auto in = inputs_for(s);
  auto out = ops::evaluate_on_host(n, {in.at("x"), tensor("B"), tensor("scales"), tensor("zp"), Tensor{}, tensor("bias")});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const auto* p = static_cast<const uint8_t*>((*out)[0].data());
  expect_matches_reference(q, s, in, std::vector<uint8_t>(p, p + (*out)[0].nbytes()));
}

}  // namespace
}  // namespace streamrt

// Engine cache keys: equal for the same architecture with other weight values, different when
// anything that shapes the plan differs (src/cache/key.h).
#include <gtest/gtest.h>

#include "cache/key.h"
#include "cache/sha256.h"
#include "core/field_count.h"
#include "cache_test_util.h"
#include "core/float16.h"

namespace streamrt {
namespace {

using cache::compute_key;
using cache::KeyContext;
using testing::GemmModel;
using testing::TempDir;

// A hand-made optimized graph: y = Reshape(Act(Gemm(x, W)), S), with knobs for every part.
struct Spec {
  std::string act = "Relu";
  int64_t trans_b = 1;
  bool swap_gemm_inputs = false;
  Dims x_dims = {2, 4};
  DataType x_dtype = DataType::kFloat32;
  std::string w_name = "W";
  Dims w_dims = {3, 4};
  DataType w_dtype = DataType::kFloat32;
  float w_scale = 1.f;                   // weight VALUES
  std::vector<int64_t> shape = {3, 2};   // the Reshape's shape constant (int64: structure)
  bool dead_value_first = false;         // an unused value before all others (other ids)
  std::string graph_name = "g";
};

ir::Graph make_graph(const Spec& s) {
  ir::Graph g;
  g.name = s.graph_name;
  if (s.dead_value_first) g.add_value("unused", DataType::kFloat32, {7}, true);
  ir::ValueId x = g.add_value("x", s.x_dtype, s.x_dims, true);
  ir::ValueId w = g.add_value(s.w_name, s.w_dtype, s.w_dims, true);
  std::vector<float> wv(static_cast<size_t>(dims_numel(s.w_dims)));
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = s.w_scale * static_cast<float>(i + 1);
  if (s.w_dtype == DataType::kFloat16) {
    std::vector<uint16_t> hv;
    for (float f : wv) hv.push_back(Half::from_float(f));
    g.constants[w] = Tensor::from_vector(s.w_dtype, s.w_dims, hv);
  } else {
    g.constants[w] = Tensor::from_vector(s.w_dtype, s.w_dims, wv);
  }
  ir::ValueId shape = g.add_value("S", DataType::kInt64, {2}, true);
  g.constants[shape] = Tensor::from_vector(DataType::kInt64, {2}, s.shape);
  ir::ValueId h = g.add_value("h", DataType::kFloat32, {2, 3}, true);
  ir::ValueId a = g.add_value("a", DataType::kFloat32, {2, 3}, true);
  ir::ValueId y = g.add_value("y", DataType::kFloat32, {3, 2}, true);
  ir::Node gemm{.name = "gemm", .op_type = "Gemm", .opset = 17};
  gemm.inputs = s.swap_gemm_inputs ? std::vector<ir::ValueId>{w, x} : std::vector<ir::ValueId>{x, w};
  gemm.outputs = {h};
  gemm.attrs["transB"] = ir::Attribute::make_int(s.trans_b);
  ir::Node act{.name = "act", .op_type = s.act, .opset = 17, .inputs = {h}, .outputs = {a}};
  ir::Node reshape{.name = "reshape", .op_type = "Reshape", .opset = 17, .inputs = {a, shape}, .outputs = {y}};
  g.nodes = {gemm, act, reshape};
  g.inputs = {x};
  g.outputs = {y};
  return g;
}

KeyContext device_ctx(plan::DeviceKind kind, int major, int minor, const std::string& name) {
  KeyContext c;
  c.device.kind = kind;
  c.device.cc_major = major;
  c.device.cc_minor = minor;
  c.device.name = name;
  return c;
}

const KeyContext kCpu = device_ctx(plan::DeviceKind::kCpu, 0, 0, "cpu");

CacheKeyInfo key_of(const Spec& s, const BuilderConfig& c = {}, const KeyContext& ctx = kCpu) {
  return compute_key(make_graph(s), c, ctx);
}

// The parts whose digests differ between a and b.
std::vector<std::string> changed_parts(const CacheKeyInfo& a, const CacheKeyInfo& b) {
  std::vector<std::string> out;
  for (const auto& [part, digest] : a.components)
    if (b.components.at(part) != digest) out.push_back(part);
  return out;
}

TEST(CacheKey, SameArchitectureWithOtherWeightValuesSharesTheKey) {
  Spec a, b;
  b.w_scale = -3.5f;
  EXPECT_EQ(key_of(a).key, key_of(b).key);
  EXPECT_EQ(key_of(a).key, key_of(a).key);  // deterministic
  // Value numbering follows first use, not ValueId: leftovers of removed nodes do not count.
  Spec c;
  c.dead_value_first = true;
  EXPECT_EQ(key_of(a).key, key_of(c).key);
}

TEST(CacheKey, EachStructuralDifferenceChangesTheKeyInItsPart) {
  const CacheKeyInfo base = key_of(Spec{});
  struct Case {
    const char* what;
    Spec spec;
    std::vector<std::string> parts;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, auto edit, std::vector<std::string> parts) {
    Spec s;
    edit(s);
    cases.push_back({what, s, parts});
  };
  add("op", [](Spec& s) { s.act = "Sigmoid"; }, {"graph.nodes"});
  add("attribute", [](Spec& s) { s.trans_b = 0; }, {"graph.nodes"});
  add("edge", [](Spec& s) { s.swap_gemm_inputs = true; }, {"graph.nodes"});
  add("input shape", [](Spec& s) { s.x_dims = {5, 4}; }, {"graph.io", "graph.nodes"});
  add("input dtype", [](Spec& s) { s.x_dtype = DataType::kFloat16; }, {"graph.io", "graph.nodes"});
  add("weight name", [](Spec& s) { s.w_name = "W2"; }, {"graph.weights"});
  add("weight dims", [](Spec& s) { s.w_dims = {4, 3}; }, {"graph.weights"});
  add("weight dtype", [](Spec& s) { s.w_dtype = DataType::kFloat16; }, {"graph.weights"});
  add("shape constant value", [](Spec& s) { s.shape = {2, 3}; }, {"graph.weights"});
  add("graph name", [](Spec& s) { s.graph_name = "other"; }, {"graph.io"});
  for (const Case& c : cases) {
    CacheKeyInfo k = key_of(c.spec);
    EXPECT_NE(k.key, base.key) << c.what;
    EXPECT_EQ(changed_parts(base, k), c.parts) << c.what;
  }
}

TEST(CacheKey, EveryBuilderOptionIsPartOfTheKeyButStripWeights) {
  const CacheKeyInfo base = key_of(Spec{});
  std::vector<std::pair<std::string, BuilderConfig>> cases;
  auto add = [&](const std::string& field, auto edit) {
    BuilderConfig c;
    edit(c);
    cases.emplace_back(field, c);
  };
  add("device", [](BuilderConfig& c) { c.device = DeviceType::kCuda; });
  add("shapes", [](BuilderConfig& c) { c.shapes["x"] = {2, 4}; });
  add("profiles", [](BuilderConfig& c) { c.profiles["x"] = {{1, 4}, {2, 4}, {8, 4}}; });
  add("float_precision", [](BuilderConfig& c) { c.float_precision = DataType::kFloat16; });
  add("weight_streaming", [](BuilderConfig& c) { c.weight_streaming = true; });
  add("min_streamable_bytes", [](BuilderConfig& c) { c.min_streamable_bytes = 4096; });
  add("tactics", [](BuilderConfig& c) { c.tactics = false; });
  add("allow_tf32", [](BuilderConfig& c) { c.allow_tf32 = true; });
  add("engine_name", [](BuilderConfig& c) { c.engine_name = "mine"; });
  add("stream_chunk_bytes", [](BuilderConfig& c) { c.stream_chunk_bytes = 1 << 20; });
  add("weight_quant", [](BuilderConfig& c) { c.weight_quant.scheme = WeightQuantScheme::kInt8; });
  add("kv_cache_in_place", [](BuilderConfig& c) { c.kv_cache_in_place = true; });
  add("passes.conv_fusion", [](BuilderConfig& c) { c.passes.conv_fusion = false; });
  add("passes.matmul_bias_fusion", [](BuilderConfig& c) { c.passes.matmul_bias_fusion = false; });
  add("passes.matmul_residual_fusion", [](BuilderConfig& c) { c.passes.matmul_residual_fusion = false; });
  add("passes.matmul_group_fusion", [](BuilderConfig& c) { c.passes.matmul_group_fusion = false; });
  add("passes.rotary_fusion", [](BuilderConfig& c) { c.passes.rotary_fusion = false; });
  add("passes.attention_fusion", [](BuilderConfig& c) { c.passes.attention_fusion = false; });
  add("passes.view_aliasing", [](BuilderConfig& c) { c.passes.view_aliasing = false; });
  add("passes.conv_tactics", [](BuilderConfig& c) { c.passes.conv_tactics = true; });
  add("passes.step_timing", [](BuilderConfig& c) { c.passes.step_timing = false; });
  // A case per field (BuilderPasses' fields each), but those key.cc leaves out on purpose: a field
  // added to BuilderConfig or BuilderPasses without a case here fails the count (key.cc's
  // static_asserts, one without being hashed).
  const size_t left_out = 4;  // strip_weights, max_nodes, max_tensor_elements, progress
  EXPECT_EQ(cases.size() + left_out, field_count<BuilderConfig>() - 1 + field_count<BuilderPasses>());
  for (const auto& [field, config] : cases) {
    CacheKeyInfo k = key_of(Spec{}, config);
    EXPECT_NE(k.key, base.key) << field;
    EXPECT_EQ(changed_parts(base, k), std::vector<std::string>{"config." + field}) << field;
    EXPECT_EQ(cache::explain_miss(base, k), "builder option changed: " + field);
  }
  // Profiles differing only in opt change the plan's recorded profile: a different key.
  BuilderConfig p1, p2;
  p1.profiles["x"] = {{1, 4}, {2, 4}, {8, 4}};
  p2.profiles["x"] = {{1, 4}, {4, 4}, {8, 4}};
  EXPECT_NE(key_of(Spec{}, p1).key, key_of(Spec{}, p2).key);
  BuilderConfig strip;
  strip.strip_weights = true;
  EXPECT_EQ(key_of(Spec{}, strip).key, base.key);
  BuilderConfig bounds;  // the builder's work bounds decide whether a plan builds, not what it is
  bounds.max_nodes = 10;
  bounds.max_tensor_elements = 100;
  EXPECT_EQ(key_of(Spec{}, bounds).key, base.key);
  // Each scheme is a key of its own (int8 and fp8 store the same bytes, not the same codes).
  BuilderConfig int8, fp8;
  int8.weight_quant.scheme = WeightQuantScheme::kInt8;
  fp8.weight_quant.scheme = WeightQuantScheme::kFp8;
  EXPECT_EQ(changed_parts(key_of(Spec{}, int8), key_of(Spec{}, fp8)), std::vector<std::string>{"config.weight_quant"});
  // Calibration inputs decide GPTQ's codes: one changed value is another key, in weight_quant.
  BuilderConfig cal1, cal2;
  for (BuilderConfig* c : {&cal1, &cal2}) {
    c->weight_quant.scheme = WeightQuantScheme::kInt4;
    c->weight_quant.calibration.push_back({{"x", Tensor::from_vector<float>(DataType::kFloat32, {1, 2}, {1.f, 2.f})}});
  }
  cal2.weight_quant.calibration[0]["x"].mutable_data_as<float>()[1] = 3.f;
  EXPECT_EQ(changed_parts(key_of(Spec{}, cal1), key_of(Spec{}, cal2)), std::vector<std::string>{"config.weight_quant"});
  BuilderConfig watched;  // a progress callback reports on the build, it does not change it
  watched.progress = [](const BuildProgress&) {};
  EXPECT_EQ(key_of(Spec{}, watched).key, base.key);
}

// The key depends on the config alone, not on the process's environment (the library reads
// none): the variables that once changed plans change nothing here.
TEST(CacheKey, TheEnvironmentIsNoPartOfTheKey) {
  const CacheKeyInfo base = key_of(Spec{});
  for (const char* name : {"STREAMRT_NO_VIEW_ALIASING", "STREAMRT_CONV_TACTICS", "STREAMRT_NO_STEP_TIMING"}) {
    ::setenv(name, "1", 1);
    const CacheKeyInfo k = key_of(Spec{});
    ::unsetenv(name);
    EXPECT_EQ(k.key, base.key) << name;
  }
}

TEST(CacheKey, TargetDeviceAndFormatVersionArePartOfTheKey) {
  const CacheKeyInfo base = key_of(Spec{});
  const KeyContext h100 = device_ctx(plan::DeviceKind::kCuda, 9, 0, "NVIDIA H100 80GB HBM3");
  const KeyContext a100 = device_ctx(plan::DeviceKind::kCuda, 8, 0, "NVIDIA H100 80GB HBM3");
  const KeyContext h200 = device_ctx(plan::DeviceKind::kCuda, 9, 0, "NVIDIA H200");
  EXPECT_NE(key_of(Spec{}, {}, h100).key, base.key);
  EXPECT_NE(key_of(Spec{}, {}, h100).key, key_of(Spec{}, {}, a100).key);  // compute capability
  EXPECT_NE(key_of(Spec{}, {}, h100).key, key_of(Spec{}, {}, h200).key);  // device name
  EXPECT_EQ(cache::explain_miss(base, key_of(Spec{}, {}, h100)), "target device changed");
  KeyContext next_format = kCpu;
  next_format.plan_format_version = plan::kPlanFormatVersion + 1;
  KeyContext next_version = kCpu;
  next_version.streamrt_version = "99.0.0";
  EXPECT_NE(key_of(Spec{}, {}, next_format).key, base.key);
  EXPECT_NE(key_of(Spec{}, {}, next_version).key, base.key);
  EXPECT_EQ(cache::explain_miss(base, key_of(Spec{}, {}, next_format)), "plan format or streamrt version changed");
}

TEST(CacheKey, MissExplanations) {
  const CacheKeyInfo base = key_of(Spec{});
  EXPECT_EQ(cache::explain_miss(std::nullopt, base), "first build of this model");
  EXPECT_EQ(cache::explain_miss(base, base), "entry was evicted or removed");
  Spec op;
  op.act = "Sigmoid";
  EXPECT_EQ(cache::explain_miss(base, key_of(op)), "graph changed: ops, attributes or edges");
  BuilderConfig fp16;
  fp16.float_precision = DataType::kFloat16;
  fp16.weight_streaming = true;
  EXPECT_EQ(cache::explain_miss(base, key_of(op, fp16)),
            "builder option changed: float_precision, weight_streaming; graph changed: ops, attributes or edges");
}

TEST(CacheKey, HexRoundTripAndBadHex) {
  CacheKey k = key_of(Spec{}).key;
  std::string hex = k.hex();
  ASSERT_EQ(hex.size(), 64u);
  auto back = CacheKey::from_hex(hex);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, k);
  for (std::string bad : {std::string(""), hex.substr(1), hex + "0", std::string(64, 'g'), std::string(64, 'A')}) {
    auto r = CacheKey::from_hex(bad);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

// Known answer: the key is SHA-256 (through OpenSSL). "abc" -> ba7816bf...
TEST(CacheKey, Sha256KnownAnswer) {
  EXPECT_EQ(cache::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(cache::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// ---- through the ONNX importer and the builder's passes ------------------------------------

Result<CacheKeyInfo> key_of_model(GemmModel m, const TempDir& dir, const std::string& name,
                                  const BuilderConfig& c = testing::batch_config(4)) {
  m.write(dir.file(name));
  return compute_cache_key(dir.file(name), c);
}

TEST(CacheKey, OnnxModelsOfOneArchitectureShareTheKey) {
  TempDir dir;
  GemmModel a, b, alpha, renamed;
  b.seed = 99;
  alpha.alpha = 0.5f;
  renamed.w_name = "fc.weight";
  auto ka = key_of_model(a, dir, "a.onnx"), kb = key_of_model(b, dir, "b.onnx");
  ASSERT_TRUE(ka.ok()) << ka.status().to_string();
  ASSERT_TRUE(kb.ok());
  EXPECT_EQ(ka->key, kb->key);  // other file name and other weights: the same key
  EXPECT_NE(ka->key, key_of_model(alpha, dir, "alpha.onnx")->key);
  EXPECT_NE(ka->key, key_of_model(renamed, dir, "renamed.onnx")->key);
  EXPECT_NE(ka->key, key_of_model(a, dir, "a8.onnx", testing::batch_config(4, 8))->key);
}

// x / Sqrt(ReduceMean(Pow(x, p)) + eps) * scale: fused into RMSNormalization when p == 2, with
// eps baked into an attribute. Keyed on the optimized graph, eps and p are structure; the scale
// stays a refittable weight.
onnx::ModelProto rms_model(float eps, float p, float scale) {
  using namespace testing;
  onnx::ModelProto m = make_model();
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto_DataType_FLOAT, {int64_t{2}, int64_t{4}});
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {int64_t{2}, int64_t{4}});
  *g->add_initializer() = f32_raw("p", {}, {p});
  *g->add_initializer() = f32_raw("eps", {}, {eps});
  *g->add_initializer() = f32_raw("scale", {4}, {scale, 2 * scale, 3 * scale, 4 * scale});
  add_node(g, "Pow", "pow", {"x", "p"}, {"sq"});
  auto* mean = add_node(g, "ReduceMean", "mean", {"sq"}, {"ms"});
  auto* axes = mean->add_attribute();
  axes->set_name("axes");
  axes->set_type(onnx::AttributeProto_AttributeType_INTS);
  axes->add_ints(-1);
  add_node(g, "Add", "add", {"ms", "eps"}, {"mse"});
  add_node(g, "Sqrt", "sqrt", {"mse"}, {"rms"});
  add_node(g, "Div", "div", {"x", "rms"}, {"n"});
  add_node(g, "Mul", "mul", {"n", "scale"}, {"y"});
  return m;
}

TEST(CacheKey, ValuesThatBuildDecisionsReadAreStructure) {
  TempDir dir;
  auto key = [&](float eps, float p, float scale) {
    std::string path = dir.file("rms.onnx");
    testing::write_file(path, testing::serialize(rms_model(eps, p, scale)));
    auto k = compute_cache_key(path, BuilderConfig{});
    EXPECT_TRUE(k.ok()) << k.status().to_string();
    return k.ok() ? k->key : CacheKey{};
  };
  const CacheKey base = key(1e-5f, 2.f, 1.f);
  EXPECT_EQ(key(1e-5f, 2.f, -0.25f), base);  // the scale is a weight
  EXPECT_NE(key(1e-6f, 2.f, 1.f), base);     // epsilon: an attribute of the fused node
  EXPECT_NE(key(1e-5f, 3.f, 1.f), base);     // no fusion for x^3
}

}  // namespace
}  // namespace streamrt

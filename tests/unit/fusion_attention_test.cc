// fuse_attention: which MatMul-(scale)-(mask)-Softmax-MatMul chains become Attention, which stay,
// and that the fused graph computes what the unfused one does (both run with the CPU kernels, and
// end to end through the builder and the CPU runtime).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "builder/fusion.h"
#include "ops/attention.h"
#include "compute_test_util.h"
#include "ir/shape_inference.h"
#include "onnx_model_util.h"
#include "plan/plan.h"
#include "streamrt/builder.h"
#include "streamrt/runtime.h"

namespace streamrt::builder {
namespace {
using namespace streamrt::testing;
using ir::Attribute;

constexpr float kInf = std::numeric_limits<float>::infinity();

enum class Scale { kNone, kMulScores, kDivScores, kSplit };
enum class Mask {
  kNone,
  kAddInput,         // additive float mask, a graph input
  kAddCausal,        // additive constant: 0 / -inf above the diagonal
  kAddConstOther,    // additive constant, not causal
  kWhereCausal,      // Where(const bool "masked", -1e4, scores)
  kWhereKeepCausal,  // Where(const bool "keep", scores, -inf)
  kWhereConstOther,  // Where(const bool "masked", -inf, scores), not causal
  kWhereNotInput,    // Where(Cast(Not(keep input)), -inf, scores): tiny_gpt's run-time mask
};

struct Variant {
  Scale scale = Scale::kMulScores;
  Mask mask = Mask::kNone;
  bool transpose_k = true;  // K^T = Transpose(K) in the graph (else K^T is an input)
  int64_t sq = 5, skv = 5;
};

const int64_t kB = 2, kH = 3, kD = 4, kDv = 6;

struct Built {
  ir::Graph g;
  std::vector<ir::ValueId> inputs;
  std::vector<Tensor> values;  // one per input
};

ir::Node node(const std::string& op, std::vector<ir::ValueId> in, ir::ValueId out,
              std::map<std::string, Attribute> attrs = {}) {
  ir::Node n;
  n.name = op + "_" + std::to_string(out);
  n.op_type = op;
  n.opset = 17;
  n.inputs = std::move(in);
  n.outputs = {out};
  n.attrs = std::move(attrs);
  return n;
}

// 1 where key j is past query i's causal limit (bottom-right aligned), else 0.
std::vector<float> causal_pattern(int64_t sq, int64_t skv) {
  std::vector<float> m;
  for (int64_t i = 0; i < sq; ++i)
    for (int64_t j = 0; j < skv; ++j) m.push_back(j > i + skv - sq ? 1.f : 0.f);
  return m;
}

Tensor bool_tensor(const Dims& dims, const std::vector<float>& v) {
  std::vector<uint8_t> b(v.begin(), v.end());
  return Tensor::from_vector(DataType::kBool, dims, b);
}

Built build(const Variant& v) {
  Built b;
  ir::Graph& g = b.g;
  auto input = [&](const std::string& name, DataType t, Dims dims, Tensor value) {
    ir::ValueId id = g.add_value(name, t, dims, true);
    g.inputs.push_back(id);
    b.inputs.push_back(id);
    b.values.push_back(std::move(value));
    return id;
  };
  auto constant = [&](const std::string& name, Tensor t) {
    ir::ValueId id = g.add_value(name);
    g.set_constant(id, std::move(t));
    return id;
  };
  auto val = [&](const std::string& name) { return g.add_value(name); };
  const Dims qd{kB, kH, v.sq, kD}, kd{kB, kH, v.skv, kD}, vd{kB, kH, v.skv, kDv};
  auto rnd = [](const Dims& d, uint32_t seed, float amp) {
    auto x = random_values(numel(d), seed);
    for (auto& e : x) e *= amp;
    return f32(d, x);
  };
  ir::ValueId q = input("q", DataType::kFloat32, qd, rnd(qd, 1, 2.f));
  ir::ValueId kt;
  if (v.transpose_k) {
    ir::ValueId k = input("k", DataType::kFloat32, kd, rnd(kd, 2, 2.f));
    kt = val("kt");
    g.nodes.push_back(node("Transpose", {k}, kt, {{"perm", Attribute::make_ints({0, 1, 3, 2})}}));
  } else {
    Dims ktd{kB, kH, kD, v.skv};
    kt = input("kt", DataType::kFloat32, ktd, rnd(ktd, 2, 2.f));
  }
  ir::ValueId vv = input("v", DataType::kFloat32, vd, rnd(vd, 3, 1.f));
  if (v.scale == Scale::kSplit) {  // torch: Q * sqrt(s) and K^T * sqrt(s)
    ir::ValueId c = constant("sqrt_s", f32({}, {0.75f})), qs = val("qs"), ks = val("ks");
    g.nodes.push_back(node("Mul", {q, c}, qs));
    g.nodes.push_back(node("Mul", {c, kt}, ks));
    q = qs, kt = ks;
  }
  ir::ValueId s = val("scores");
  g.nodes.push_back(node("MatMul", {q, kt}, s));
  if (v.scale == Scale::kMulScores || v.scale == Scale::kDivScores) {
    const bool mul = v.scale == Scale::kMulScores;
    ir::ValueId c = constant("scale", f32({}, {mul ? 0.5f : 2.f})), ss = val("scaled");
    g.nodes.push_back(node(mul ? "Mul" : "Div", {s, c}, ss));
    s = ss;
  }
  const Dims md{v.sq, v.skv};
  std::vector<float> causal = causal_pattern(v.sq, v.skv), other = causal_pattern(v.sq, v.skv);
  std::reverse(other.begin(), other.end());  // masks the lower-left instead; every row keeps a key
  ir::ValueId masked = val("masked");
  switch (v.mask) {
    case Mask::kNone: masked = s; break;
    case Mask::kAddInput: {
      auto m = random_values(v.sq * v.skv, 4);
      ir::ValueId in = input("mask", DataType::kFloat32, {1, 1, v.sq, v.skv}, f32({1, 1, v.sq, v.skv}, m));
      g.nodes.push_back(node("Add", {s, in}, masked));
      break;
    }
    case Mask::kAddCausal:
    case Mask::kAddConstOther: {
      std::vector<float> m = v.mask == Mask::kAddCausal ? causal : other;
      for (auto& x : m) x = x ? -kInf : 0.f;
      g.nodes.push_back(node("Add", {constant("cmask", f32(md, m)), s}, masked));
      break;
    }
    case Mask::kWhereCausal:
    case Mask::kWhereConstOther: {
      const bool c = v.mask == Mask::kWhereCausal;
      ir::ValueId cond = constant("cond", bool_tensor(md, c ? causal : other));
      g.nodes.push_back(node("Where", {cond, constant("fill", f32({}, {c ? -1e4f : -kInf})), s}, masked));
      break;
    }
    case Mask::kWhereKeepCausal: {
      std::vector<float> keep = causal;
      for (auto& x : keep) x = 1 - x;
      g.nodes.push_back(node("Where", {constant("keep", bool_tensor(md, keep)), s, constant("fill", f32({}, {-kInf}))},
                             masked));
      break;
    }
    case Mask::kWhereNotInput: {
      std::vector<float> keep = other;
      for (auto& x : keep) x = 1 - x;
      ir::ValueId in = input("keep", DataType::kBool, {1, 1, v.sq, v.skv}, bool_tensor({1, 1, v.sq, v.skv}, keep));
      ir::ValueId n = val("not"), c = val("cond");
      g.nodes.push_back(node("Not", {in}, n));
      g.nodes.push_back(node("Cast", {n}, c, {{"to", Attribute::make_int(9)}}));
      g.nodes.push_back(node("Where", {c, constant("fill", f32({}, {-kInf})), s}, masked));
      break;
    }
  }
  ir::ValueId p = val("probs"), y = val("y");
  g.nodes.push_back(node("Softmax", {masked}, p, {{"axis", Attribute::make_int(-1)}}));
  g.nodes.push_back(node("MatMul", {p, vv}, y));
  g.outputs = {y};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return b;
}

// Runs the graph node by node with the CPU kernels; returns its first output.
Tensor interpret(const Built& b) {
  const ir::Graph& g = b.g;
  std::vector<Tensor> vals(g.values.size());
  for (size_t i = 0; i < b.inputs.size(); ++i) vals[b.inputs[i]] = b.values[i];
  for (const auto& [id, t] : g.constants) vals[id] = t;
  for (const auto& n : g.nodes) {
    std::vector<Tensor> ins;
    for (auto in : n.inputs) ins.push_back(vals[in]);
    auto outs = run_ok(n, ins);
    if (outs.size() != n.outputs.size()) return {};
    for (size_t k = 0; k < outs.size(); ++k) vals[n.outputs[k]] = outs[k];
  }
  return vals[g.outputs[0]];
}

const ir::Node* find_op(const ir::Graph& g, const std::string& op) {
  for (const auto& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

struct Expect {
  bool causal;
  size_t inputs;  // of the Attention node
  int64_t window = 0;
};

Expect expected(const Variant& v) {
  switch (v.mask) {
    case Mask::kAddCausal:
    case Mask::kWhereCausal:
    case Mask::kWhereKeepCausal:
      return {true, 3};
    case Mask::kNone:
      return {false, 3};
    case Mask::kWhereConstOther:  // keeps j >= i: a window of one key ending at each query, unbounded above
      return {false, 3, 1};
    default:
      return {false, 4};
  }
}

class AttentionFusion : public ::testing::TestWithParam<Variant> {};

TEST_P(AttentionFusion, FusesToOneNodeWithSameResult) {
  const Variant v = GetParam();
  Built b = build(v);
  const std::vector<float> want = values_f32(interpret(b));
  ASSERT_EQ(fuse_attention(b.g), 1u);
  const ir::Node* a = find_op(b.g, "Attention");
  ASSERT_NE(a, nullptr);
  // Only the Attention node is left (a mask kept as an input needs no node of its own).
  EXPECT_EQ(b.g.nodes.size(), 1u);
  const Expect e = expected(v);
  EXPECT_EQ(a->attr_int("causal", 0).value(), e.causal ? 1 : 0);
  EXPECT_EQ(a->attr_int("window", 0).value(), e.window);
  EXPECT_EQ(a->attr_int("k_transposed", -1).value(), v.transpose_k ? 0 : 1);
  EXPECT_EQ(a->inputs.size(), e.inputs);
  const float scale = v.scale == Scale::kNone ? 1.f : v.scale == Scale::kSplit ? 0.5625f : 0.5f;
  EXPECT_FLOAT_EQ(a->attr_float("scale").value(), scale);
  if (e.inputs == 4) {
    const bool bool_mask = v.mask != Mask::kAddInput && v.mask != Mask::kAddConstOther;
    EXPECT_EQ(b.g.value(a->inputs[3]).dtype, bool_mask ? DataType::kBool : DataType::kFloat32);
    EXPECT_EQ(a->has_attr("mask_fill"), bool_mask);
    if (bool_mask) {
      EXPECT_EQ(a->attr_float("mask_fill").value(), -kInf);
    }
  }
  ASSERT_TRUE(ir::infer_shapes(b.g).ok());
  expect_close(values_f32(interpret(b)), want);
}

std::string variant_name(const ::testing::TestParamInfo<Variant>& info) {
  static const char* const kScales[] = {"NoScale", "MulScores", "DivScores", "SplitScale"};
  static const char* const kMasks[] = {"NoMask", "AddInput", "AddCausal", "AddConstOther", "WhereCausal",
                                       "WhereKeepCausal", "WhereConstOther", "WhereNotInput"};
  const Variant& v = info.param;
  return std::string(kScales[static_cast<int>(v.scale)]) + kMasks[static_cast<int>(v.mask)] +
         (v.transpose_k ? "" : "KT") + "_" + std::to_string(v.sq) + "x" + std::to_string(v.skv);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, AttentionFusion,
    ::testing::Values(Variant{}, Variant{.scale = Scale::kDivScores}, Variant{.scale = Scale::kSplit},
                      Variant{.scale = Scale::kNone, .transpose_k = false},
                      Variant{.mask = Mask::kAddInput, .sq = 3, .skv = 7},
                      Variant{.mask = Mask::kAddCausal}, Variant{.mask = Mask::kAddCausal, .sq = 2, .skv = 6},
                      Variant{.mask = Mask::kAddConstOther}, Variant{.mask = Mask::kWhereCausal},
                      Variant{.scale = Scale::kSplit, .mask = Mask::kWhereCausal, .transpose_k = false},
                      Variant{.mask = Mask::kWhereKeepCausal, .sq = 3, .skv = 7},
                      Variant{.mask = Mask::kWhereConstOther}, Variant{.mask = Mask::kWhereNotInput},
                      Variant{.scale = Scale::kSplit, .mask = Mask::kWhereNotInput, .transpose_k = false}),
    variant_name);

// Each rule that must hold, broken once: the graph stays as it was.
TEST(AttentionFusionNegative, LeavesGraphsAloneWhereARuleFails) {
  auto unchanged = [](Built b, const char* why) {
    const size_t n = b.g.nodes.size();
    EXPECT_EQ(fuse_attention(b.g), 0u) << why;
    EXPECT_EQ(b.g.nodes.size(), n) << why;
    EXPECT_EQ(find_op(b.g, "Attention"), nullptr) << why;
  };
  {
    Built b = build({});  // the probabilities are also a graph output
    b.g.outputs.push_back(b.g.find_value("probs"));
    unchanged(std::move(b), "extra consumer of the softmax");
  }
  {
    Built b = build({});  // the scores feed another node too
    ir::ValueId extra = b.g.add_value("extra");
    b.g.nodes.push_back(node("Relu", {b.g.find_value("scores")}, extra));
    b.g.outputs.push_back(extra);
    unchanged(std::move(b), "extra consumer of the scores");
  }
  {
    Built b = build({});
    for (auto& n : b.g.nodes)
      if (n.op_type == "Softmax") n.attrs["axis"] = Attribute::make_int(2);
    unchanged(std::move(b), "softmax over the query axis");
  }
  {
    Built b = build({});
    b.g.set_constant(b.g.find_value("scale"), f32({5}, {0.5f, 0.5f, 0.5f, 0.5f, 0.25f}));
    unchanged(std::move(b), "scale is a vector");
  }
  {
    Built b = build({.mask = Mask::kWhereNotInput});  // Where(cond, -inf, .) with no Not to undo
    for (auto& n : b.g.nodes)
      if (n.op_type == "Not") n.op_type = "Identity";
    unchanged(std::move(b), "run-time 'masked' condition");
  }
}

// Where's fill becomes mask_fill, so a finite fill over fully masked rows (uniform weights in the
// unfused graph) gives the same result, also where the mask becomes the op's causal flag.
TEST(AttentionFusion, WhereFillIsKeptExactly) {
  auto same = [](Built b, float fill, bool causal, const char* why) {
    const std::vector<float> want = values_f32(interpret(b));
    ASSERT_EQ(fuse_attention(b.g), 1u) << why;
    const ir::Node* a = find_op(b.g, "Attention");
    ASSERT_NE(a, nullptr) << why;
    EXPECT_EQ(a->attr_int("causal", 0).value(), causal ? 1 : 0) << why;
    ASSERT_EQ(a->inputs.size(), causal ? 3u : 4u) << why;
    EXPECT_EQ(a->attr_float("mask_fill", 0.f).value(), fill) << why;
    ASSERT_TRUE(ir::infer_shapes(b.g).ok());
    expect_close(values_f32(interpret(b)), want);
  };
  {
    Built b = build({.mask = Mask::kWhereCausal});  // a small fill is no -inf: a bool mask, not causal
    b.g.set_constant(b.g.find_value("fill"), f32({}, {-1.f}));
    same(std::move(b), -1.f, false, "small fill");
  }
  {
    // Sq > Skv: rows 0, 1 keep no key and average V uniformly, as the op's causal rows do with a
    // finite fill.
    Built b = build({.mask = Mask::kWhereCausal, .sq = 6, .skv = 4});
    same(std::move(b), -1e4f, true, "causal triangle with fully masked rows");
  }
  {
    Built b = build({.mask = Mask::kWhereNotInput});  // a run-time mask with a fully masked row
    b.g.set_constant(b.g.find_value("fill"), f32({}, {-1e4f}));
    std::vector<float> keep(25, 1.f);
    std::fill(keep.begin() + 5, keep.begin() + 10, 0.f);
    b.values[3] = bool_tensor({1, 1, 5, 5}, keep);
    same(std::move(b), -1e4f, false, "run-time mask");
  }
}

TEST(AttentionFusion, MaskedConditionIsNegatedOnceForSeveralLayers) {
  // Two attention chains reading one constant "masked" condition share one negated constant.
  Built b = build({.mask = Mask::kWhereConstOther});
  ir::Graph& g = b.g;
  // Every other key masked: no causal or window band the op could take instead.
  const ir::ValueId cond = g.find_value("cond");
  const Dims md = g.constant(cond)->dims();
  std::vector<float> masked(static_cast<size_t>(dims_numel(md)));
  for (size_t e = 0; e < masked.size(); ++e) masked[e] = static_cast<float>((e / md.back() + e % md.back()) % 2);
  g.set_constant(cond, bool_tensor(md, masked));
  const size_t n = g.nodes.size();
  for (size_t i = 0; i < n; ++i) {  // a second copy of every node, on fresh values
    ir::Node c = g.nodes[i];
    for (auto& in : c.inputs)
      if (!g.is_constant(in) && std::find(b.inputs.begin(), b.inputs.end(), in) == b.inputs.end())
        in = g.find_value(g.value(in).name + "'");
    c.outputs[0] = g.add_value(g.value(c.outputs[0]).name + "'");
    g.nodes.push_back(c);
  }
  g.outputs.push_back(g.find_value("y'"));
  ASSERT_TRUE(ir::infer_shapes(g).ok());
  const size_t constants = g.constants.size();
  EXPECT_EQ(fuse_attention(g), 2u);
  EXPECT_EQ(g.constants.size(), constants + 1);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].inputs[3], g.nodes[1].inputs[3]);
}

// A plan loaded on a CPU runtime (members in the order they must outlive each other).
struct CpuRun {
  std::unique_ptr<Runtime> rt;
  std::shared_ptr<Engine> engine;
  std::unique_ptr<ExecutionContext> ctx;  // null (and the test failed) on an error
};

CpuRun load_on_cpu(std::vector<uint8_t> bytes) {
  CpuRun r;
  RuntimeOptions cpu;
  cpu.device = DeviceType::kCpu;
  auto rt = Runtime::create(cpu);
  if (!rt.ok()) {
    ADD_FAILURE() << rt.status().to_string();
    return r;
  }
  r.rt = std::move(rt).value();
  auto engine = r.rt->load_engine_bytes(std::move(bytes));
  if (!engine.ok()) {
    ADD_FAILURE() << engine.status().to_string();
    return r;
  }
  r.engine = *engine;
  auto ctx = r.engine->create_execution_context();
  if (!ctx.ok()) {
    ADD_FAILURE() << ctx.status().to_string();
    return r;
  }
  r.ctx = std::move(ctx).value();
  return r;
}

// The ONNX model of the MatMul-Mul-Where-Softmax-MatMul chain GPT-2 exports, with a causal
// constant mask, built and run by the CPU runtime: one Attention step, the naive result.
TEST(AttentionFusion, EndToEndThroughBuilderAndCpuRuntime) {
  const int64_t s = 6, d = 8;
  onnx::ModelProto m = make_model();
  auto* gp = m.mutable_graph();
  for (const char* name : {"q", "k", "v"}) add_input(gp, name, onnx::TensorProto_DataType_FLOAT, {int64_t{1}, int64_t{2}, s, d});
  add_output(gp, "y", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, int64_t{2}, s, d});
  onnx::TensorProto cond;
  cond.set_name("masked");
  cond.set_data_type(onnx::TensorProto_DataType_BOOL);
  cond.add_dims(s);
  cond.add_dims(s);
  std::vector<uint8_t> masked;
  for (float x : causal_pattern(s, s)) masked.push_back(x != 0);
  cond.set_raw_data(bytes_of(masked));
  *gp->add_initializer() = cond;
  *gp->add_initializer() = f32_raw("scale", {}, {0.35355339f});
  *gp->add_initializer() = f32_raw("fill", {}, {-1e4f});
  auto* t = add_node(gp, "Transpose", "t", {"k"}, {"kt"});
  auto* perm = t->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto_AttributeType_INTS);
  for (int64_t p : {0, 1, 3, 2}) perm->add_ints(p);
  add_node(gp, "MatMul", "qk", {"q", "kt"}, {"s"});
  add_node(gp, "Mul", "scale_mul", {"s", "scale"}, {"ss"});
  add_node(gp, "Where", "mask", {"masked", "fill", "ss"}, {"sm"});
  add_node(gp, "Softmax", "softmax", {"sm"}, {"p"});
  add_node(gp, "MatMul", "pv", {"p", "v"}, {"y"});
  TempDir dir;
  write_file(dir.path() / "model.onnx", serialize(m));

  BuildReport rep;
  auto bytes = build_plan_from_onnx(dir.file("model.onnx"), BuilderConfig{}, &rep);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto plan = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_EQ(plan->data.steps.size(), 1u);
  EXPECT_EQ(plan->data.steps[0].op_type, "Attention");
  EXPECT_EQ(plan->data.steps[0].attr_int("causal", 0).value(), 1);

  CpuRun run = load_on_cpu(std::move(bytes).value());
  ASSERT_NE(run.ctx, nullptr);
  auto& ctx = run.ctx;
  std::vector<std::vector<float>> in = {random_values(2 * s * d, 1), random_values(2 * s * d, 2),
                                        random_values(2 * s * d, 3)};
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(ctx->set_input_shape(names[i], {1, 2, s, d}).ok());
    ASSERT_TRUE(ctx->set_tensor_address(names[i], in[i].data(), in[i].size() * 4).ok());
  }
  std::vector<float> y(2 * s * d);
  ASSERT_TRUE(ctx->set_tensor_address("y", y.data(), y.size() * 4).ok());
  Status st = ctx->execute();
  ASSERT_TRUE(st.ok()) << st.to_string();
  // Naive causal attention per head.
  std::vector<float> want;
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < s; ++i) {
      std::vector<double> p;
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j <= i; ++j) {
        double dot = 0;
        for (int64_t c = 0; c < d; ++c) dot += in[0][(h * s + i) * d + c] * in[1][(h * s + j) * d + c];
        p.push_back(dot * 0.35355339);
        mx = std::max(mx, p.back());
      }
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (int64_t c = 0; c < d; ++c) {
        double acc = 0;
        for (int64_t j = 0; j <= i; ++j) acc += p[j] * in[2][(h * s + j) * d + c];
        want.push_back(static_cast<float>(acc / sum));
      }
    }
  expect_close(y, want);
}

// ---- Llama with a dynamic sequence length: ~causal[:t, :t] of a constant [N, N] triangle --------

struct Sliced {
  bool two_slices = false;  // one Slice per axis instead of one over both
  bool triangle = true;     // the constant is tril (else triu: not causal)
  int64_t start = 0;        // slice start on both axes
  bool other_keys = false;  // K and V from a second input with its own length (Sq != Skv)
  bool swap_halves = false;  // Q's halves of the head dim swapped by Slices whose bounds are computed
                             // from Shape(Q) at run time, as rotate_half exports
};

const int64_t kN = 8, kModel = 6, kHeads = 2;  // constant triangle [kN, kN]; x is [1, t, kModel]

// x [1, t, kModel] -> per-head Q, K, V via MatMul + Reshape([1, t, kHeads, -]) + Transpose (t from
// Shape(x)), the mask Not(Slice(C, [s, s], [t, t])), Where(mask, -1e4, Q K^T / 2), Softmax, @ V.
Built build_sliced(const Sliced& o) {
  Built b;
  ir::Graph& g = b.g;
  auto constant = [&](const std::string& name, Tensor t) {
    ir::ValueId id = g.add_value(name);
    g.set_constant(id, std::move(t));
    return id;
  };
  auto val = [&](const std::string& name) { return g.add_value(name); };
  auto add = [&](const std::string& op, std::vector<ir::ValueId> in, const std::string& out,
                 std::map<std::string, Attribute> attrs = {}) {
    ir::ValueId v = val(out);
    g.nodes.push_back(node(op, std::move(in), v, std::move(attrs)));
    return v;
  };
  auto input = [&](const std::string& name) {
    ir::ValueId id = g.add_value(name, DataType::kFloat32, {1, -1, kModel}, true);
    g.inputs.push_back(id);
    b.inputs.push_back(id);
    return id;
  };
  auto length = [&](ir::ValueId x, const std::string& p) {  // Unsqueeze(Gather(Shape(x), 1)): [t]
    ir::ValueId t = add("Gather", {add("Shape", {x}, p + "shape"), constant(p + "one", i64({}, {1}))}, p + "t");
    return add("Unsqueeze", {t, constant(p + "axis0", i64({1}, {0}))}, p + "t1");
  };
  auto heads = [&](ir::ValueId x, ir::ValueId t1, const std::string& name, uint32_t seed) {
    ir::ValueId w = constant(name + "_w", f32({kModel, kModel}, random_values(kModel * kModel, seed)));
    ir::ValueId shape = add("Concat", {constant(name + "_b", i64({1}, {1})), t1, constant(name + "_hd", i64({2}, {kHeads, -1}))},
                            name + "_shape", {{"axis", Attribute::make_int(0)}});
    ir::ValueId r = add("Reshape", {add("MatMul", {x, w}, name + "_proj"), shape}, name + "_heads");
    return add("Transpose", {r}, name, {{"perm", Attribute::make_ints({0, 2, 1, 3})}});
  };
  ir::ValueId x = input("x"), t1 = length(x, "x");
  ir::ValueId kx = o.other_keys ? input("kx") : x, kt1 = o.other_keys ? length(kx, "kx") : t1;
  ir::ValueId q = heads(x, t1, "q", 11), k = heads(kx, kt1, "k", 12), v = heads(kx, kt1, "v", 13);
  if (o.swap_halves) {  // Concat(Q[..., D/2:], Q[..., :D/2]) with D/2 = Shape(Q)[3] / 2
    ir::ValueId d = add("Gather", {add("Shape", {q}, "q_shape"), constant("three", i64({}, {3}))}, "q_d");
    ir::ValueId half = add("Unsqueeze", {add("Div", {d, constant("two", i64({}, {2}))}, "q_half0"),
                                         constant("q_axis0", i64({1}, {0}))}, "q_half");
    ir::ValueId last = constant("q_last", i64({1}, {-1}));
    ir::ValueId hi = add("Slice", {q, half, constant("q_big", i64({1}, {1 << 20})), last}, "q_hi");
    ir::ValueId lo = add("Slice", {q, constant("q_zero", i64({1}, {0})), half, last}, "q_lo");
    q = add("Concat", {hi, lo}, "q_swapped", {{"axis", Attribute::make_int(-1)}});
  }
  std::vector<uint8_t> tri;
  for (int64_t i = 0; i < kN; ++i)
    for (int64_t j = 0; j < kN; ++j) tri.push_back(o.triangle ? j <= i : j >= i);
  ir::ValueId c = constant("causal", Tensor::from_vector(DataType::kBool, {kN, kN}, tri));
  ir::ValueId sliced;
  if (o.two_slices) {
    ir::ValueId starts = constant("starts", i64({1}, {o.start}));
    ir::ValueId rows = add("Slice", {c, starts, t1, constant("ax0", i64({1}, {0}))}, "rows");
    sliced = add("Slice", {rows, starts, t1, constant("ax1", i64({1}, {1})), constant("step", i64({1}, {1}))}, "sliced");
  } else {
    ir::ValueId ends = add("Concat", {t1, t1}, "ends", {{"axis", Attribute::make_int(0)}});
    sliced = add("Slice", {c, constant("starts", i64({2}, {o.start, o.start})), ends, constant("axes", i64({2}, {0, 1}))},
                 "sliced");
  }
  ir::ValueId mask = add("Not", {sliced}, "mask");
  ir::ValueId kt = add("Transpose", {k}, "kt", {{"perm", Attribute::make_ints({0, 1, 3, 2})}});
  ir::ValueId s = add("Mul", {add("MatMul", {q, kt}, "scores"), constant("scale", f32({}, {0.5f}))}, "scaled");
  ir::ValueId w = add("Where", {mask, constant("fill", f32({}, {-1e4f})), s}, "masked");
  ir::ValueId y = add("MatMul", {add("Softmax", {w}, "probs", {{"axis", Attribute::make_int(-1)}}), v}, "y");
  g.outputs = {y};
  EXPECT_TRUE(ir::infer_shapes(g).ok());
  return b;
}

void set_length(Built& b, int64_t t) {
  b.values.clear();
  for (size_t i = 0; i < b.inputs.size(); ++i)
    b.values.push_back(f32({1, t, kModel}, random_values(t * kModel, static_cast<uint32_t>(20 + i))));
}

// The graph's outputs at lengths 3 and 7 (the lengths the sliced tests run at).
std::vector<std::vector<float>> outputs_at_lengths(Built& b) {
  std::vector<std::vector<float>> out;
  for (int64_t t : {3, 7}) {
    set_length(b, t);
    out.push_back(values_f32(interpret(b)));
  }
  return out;
}

// After a rewrite: shapes re-inferred, the same outputs at both lengths.
void expect_outputs_at_lengths(Built& b, const std::vector<std::vector<float>>& want) {
  ASSERT_TRUE(ir::infer_shapes(b.g).ok());
  auto got = outputs_at_lengths(b);
  for (size_t i = 0; i < want.size(); ++i) expect_close(got[i], want[i]);
}

// Fuses `b`'s one attention and checks its mask became causal = 1 with no mask input; the node.
const ir::Node* fuse_expecting_causal(Built& b) {
  EXPECT_EQ(fuse_attention(b.g), 1u);
  const ir::Node* a = find_op(b.g, "Attention");
  if (!a) return nullptr;
  EXPECT_EQ(a->attr_int("causal", 0).value(), 1);
  EXPECT_EQ(a->inputs.size(), 3u);  // no mask
  return a;
}

TEST(AttentionFusionSlicedCausal, SliceOfTriangleBecomesCausalAtEveryLength) {
  for (bool two : {false, true}) {
    SCOPED_TRACE(two ? "two slices" : "one slice");
    Built b = build_sliced({.two_slices = two});
    const auto want = outputs_at_lengths(b);
    const ir::Node* a = fuse_expecting_causal(b);
    ASSERT_NE(a, nullptr);
    EXPECT_FALSE(a->has_attr("mask_fill"));
    // The heads' Transpose [0, 2, 1, 3] of Q, K and V are read in place (K^T's own Transpose
    // went with the match), and nothing transposes the output.
    EXPECT_EQ(a->attr_int("bshd", 0).value(), ops::kBshdQ | ops::kBshdK | ops::kBshdV);
    EXPECT_EQ(a->attr_int("k_transposed", 0).value(), 0);
    EXPECT_EQ(find_op(b.g, "Transpose"), nullptr);
    for (const char* gone : {"Where", "Not", "Slice"}) EXPECT_EQ(find_op(b.g, gone), nullptr) << gone;
    expect_outputs_at_lengths(b, want);
  }
}

// Slices of Q's last axis with bounds computed at run time (rotate_half) do not hide that Q's
// sequence axis is the mask's: the mask still becomes causal = 1 (the dynamic-length Llama export
// kept a [t, t] bool mask read per element before).
TEST(AttentionFusionSlicedCausal, RunTimeSlicesOfTheHeadDimKeepTheLengthTraceable) {
  Built b = build_sliced({.two_slices = true, .swap_halves = true});
  const auto want = outputs_at_lengths(b);
  ASSERT_NE(fuse_expecting_causal(b), nullptr);
  expect_outputs_at_lengths(b, want);
}

TEST(AttentionFusionSlicedCausal, OtherMasksStayRunTimeMasks) {
  auto not_causal = [](Sliced o, const char* why) {
    Built b = build_sliced(o);
    ASSERT_EQ(fuse_attention(b.g), 1u) << why;
    const ir::Node* a = find_op(b.g, "Attention");
    ASSERT_NE(a, nullptr) << why;
    EXPECT_EQ(a->attr_int("causal", 0).value(), 0) << why;
    EXPECT_EQ(a->inputs.size(), 4u) << why;
  };
  not_causal({.triangle = false}, "upper triangle");
  not_causal({.two_slices = true, .triangle = false}, "upper triangle, two slices");
  not_causal({.start = 1}, "slice starts at [1, 1]");
  not_causal({.two_slices = true, .start = 1}, "slices start at 1");
  not_causal({.other_keys = true}, "keys of another length");
}

// The same graph as an ONNX model (x: [1, "t", kModel]), built with a profile t in [1, kN] and run
// by the CPU runtime at two lengths: one Attention step, the unfused graph's results.
TEST(AttentionFusionSlicedCausal, EndToEndWithDynamicLength) {
  Built b = build_sliced({.two_slices = true});
  const ir::Graph& g = b.g;
  onnx::ModelProto m = make_model();
  auto* gp = m.mutable_graph();
  add_input(gp, "x", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, std::string("t"), kModel});
  add_output(gp, "y", onnx::TensorProto_DataType_FLOAT, {int64_t{1}, kHeads, std::string("t"), int64_t{kModel / kHeads}});
  for (const auto& [id, t] : g.constants) {
    onnx::TensorProto* init = gp->add_initializer();
    init->set_name(g.value(id).name);
    init->set_data_type(t.dtype() == DataType::kFloat32 ? onnx::TensorProto_DataType_FLOAT
                        : t.dtype() == DataType::kInt64 ? onnx::TensorProto_DataType_INT64
                                                        : onnx::TensorProto_DataType_BOOL);
    for (int64_t d : t.dims()) init->add_dims(d);
    init->set_raw_data(t.data(), t.nbytes());
  }
  for (const ir::Node& n : g.nodes) {
    std::vector<std::string> in;
    for (ir::ValueId v : n.inputs) in.push_back(g.value(v).name);
    auto* on = add_node(gp, n.op_type, n.name, in, {g.value(n.outputs[0]).name});
    for (const auto& [key, a] : n.attrs) {
      auto* oa = on->add_attribute();
      oa->set_name(key);
      if (a.kind == Attribute::Kind::kInt) oa->set_type(onnx::AttributeProto_AttributeType_INT), oa->set_i(a.i);
      else oa->set_type(onnx::AttributeProto_AttributeType_INTS);
      for (int64_t i : a.ints) oa->add_ints(i);
    }
  }
  TempDir dir;
  write_file(dir.path() / "model.onnx", serialize(m));
  BuilderConfig config;
  config.profiles["x"] = {{1, 1, kModel}, {1, 4, kModel}, {1, kN, kModel}};
  auto bytes = build_plan_from_onnx(dir.file("model.onnx"), config);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  auto plan = plan::read_plan_bytes(bytes->data(), bytes->size(), nullptr);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  int attention = -1;
  for (size_t i = 0; i < plan->data.steps.size(); ++i)
    if (plan->data.steps[i].op_type == "Attention") attention = static_cast<int>(i);
  ASSERT_GE(attention, 0);
  EXPECT_EQ(plan->data.steps[attention].attr_int("causal", 0).value(), 1);
  EXPECT_EQ(plan->data.steps[attention].inputs.size(), 3u);
  for (const auto& step : plan->data.steps) EXPECT_NE(step.op_type, "Slice");  // the mask is gone

  CpuRun run = load_on_cpu(std::move(bytes).value());
  ASSERT_NE(run.ctx, nullptr);
  auto& ctx = run.ctx;
  for (int64_t t : {3, 7}) {
    set_length(b, t);
    const std::vector<float> want = values_f32(interpret(b)), x = values_f32(b.values[0]);
    ASSERT_TRUE(ctx->set_input_shape("x", {1, t, kModel}).ok());
    ASSERT_TRUE(ctx->set_tensor_address("x", const_cast<float*>(x.data()), x.size() * 4).ok());
    std::vector<float> y(want.size());
    ASSERT_TRUE(ctx->set_tensor_address("y", y.data(), y.size() * 4).ok());
    Status st = ctx->execute();
    ASSERT_TRUE(st.ok()) << st.to_string();
    expect_close(y, want);
  }
}

}  // namespace
}  // namespace streamrt::builder

// fuse_attention: which MatMul-(scale)-(mask)-Softmax-MatMul chains become Attention, which stay,
// and that the fused graph computes what the unfused one does (both run with the CPU kernels, and
// end to end through the builder and the CPU runtime).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "builder/fusion.h"
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
};

Expect expected(const Variant& v) {
  switch (v.mask) {
    case Mask::kAddCausal:
    case Mask::kWhereCausal:
    case Mask::kWhereKeepCausal:
      return {true, 3};
    case Mask::kNone:
      return {false, 3};
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
// unfused graph) gives the same result; such a constant is no causal mask.
TEST(AttentionFusion, WhereFillIsKeptExactly) {
  auto same = [](Built b, float fill, const char* why) {
    const std::vector<float> want = values_f32(interpret(b));
    ASSERT_EQ(fuse_attention(b.g), 1u) << why;
    const ir::Node* a = find_op(b.g, "Attention");
    ASSERT_NE(a, nullptr) << why;
    EXPECT_EQ(a->attr_int("causal", 0).value(), 0) << why;
    ASSERT_EQ(a->inputs.size(), 4u) << why;
    EXPECT_EQ(a->attr_float("mask_fill", 0.f).value(), fill) << why;
    ASSERT_TRUE(ir::infer_shapes(b.g).ok());
    expect_close(values_f32(interpret(b)), want);
  };
  {
    Built b = build({.mask = Mask::kWhereCausal});  // a small fill is no -inf: a bool mask, not causal
    b.g.set_constant(b.g.find_value("fill"), f32({}, {-1.f}));
    same(std::move(b), -1.f, "small fill");
  }
  {
    Built b = build({.mask = Mask::kWhereCausal, .sq = 6, .skv = 4});  // Sq > Skv: rows 0, 1 fully masked
    same(std::move(b), -1e4f, "causal triangle with fully masked rows");
  }
  {
    Built b = build({.mask = Mask::kWhereNotInput});  // a run-time mask with a fully masked row
    b.g.set_constant(b.g.find_value("fill"), f32({}, {-1e4f}));
    std::vector<float> keep(25, 1.f);
    std::fill(keep.begin() + 5, keep.begin() + 10, 0.f);
    b.values[3] = bool_tensor({1, 1, 5, 5}, keep);
    same(std::move(b), -1e4f, "run-time mask");
  }
}

TEST(AttentionFusion, MaskedConditionIsNegatedOnceForSeveralLayers) {
  // Two attention chains reading one constant "masked" condition share one negated constant.
  Built b = build({.mask = Mask::kWhereConstOther});
  ir::Graph& g = b.g;
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

  RuntimeOptions cpu;
  cpu.device = DeviceType::kCpu;
  auto rt = Runtime::create(cpu);
  ASSERT_TRUE(rt.ok());
  auto engine = (*rt)->load_engine_bytes(std::move(bytes).value());
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_execution_context();
  ASSERT_TRUE(ctx.ok());
  std::vector<std::vector<float>> in = {random_values(2 * s * d, 1), random_values(2 * s * d, 2),
                                        random_values(2 * s * d, 3)};
  const char* names[] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*ctx)->set_input_shape(names[i], {1, 2, s, d}).ok());
    ASSERT_TRUE((*ctx)->set_tensor_address(names[i], in[i].data(), in[i].size() * 4).ok());
  }
  std::vector<float> y(2 * s * d);
  ASSERT_TRUE((*ctx)->set_tensor_address("y", y.data(), y.size() * 4).ok());
  Status st = (*ctx)->execute();
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

}  // namespace
}  // namespace streamrt::builder

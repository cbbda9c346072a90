// RandomUniform(Like), RandomNormal(Like), Bernoulli, Multinomial: ranges, moments and
// frequencies on large samples (seeded, so the bounds are checked on fixed draws; they sit at
// six standard errors or more), the seed contract, and that the builder never folds them.
#include <cmath>
#include <cstring>
#include <map>
#include <set>

#include "builder/passes.h"
#include "engine_test_util.h"
#include "ir/shape_inference.h"
#include "op_test_util.h"
#include "ops/random_util.h"

namespace streamrt {
namespace {

using ir::Attribute;
using testing::make_node;
using testing::run_ok;

constexpr int kOnnxFloat = 1, kOnnxDouble = 11, kOnnxHalf = 10, kOnnxBf16 = 16, kOnnxInt64 = 7, kOnnxBool = 9;

std::vector<double> doubles(const Tensor& t) { return t.to_double_vector().value(); }

struct Moments {
  double mean = 0, var = 0, lo = INFINITY, hi = -INFINITY;
};
Moments moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) {
    m.mean += x;
    m.lo = std::min(m.lo, x);
    m.hi = std::max(m.hi, x);
  }
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.var += (x - m.mean) * (x - m.mean);
  m.var /= static_cast<double>(v.size() - 1);
  return m;
}

// RandomUniform / RandomNormal of `n` elements with attributes a and b (low / high, mean / scale).
ir::Node fill_node(const char* op, int64_t n, std::pair<const char*, float> a, std::pair<const char*, float> b,
                   int dtype, std::optional<float> seed) {
  std::map<std::string, Attribute> attrs{{"shape", Attribute::make_ints({n})},
                                         {a.first, Attribute::make_float(a.second)},
                                         {b.first, Attribute::make_float(b.second)},
                                         {"dtype", Attribute::make_int(dtype)}};
  if (seed) attrs["seed"] = Attribute::make_float(*seed);
  return make_node(op, 0, 1, attrs);
}
ir::Node uniform_node(int64_t n, float low, float high, int dtype, std::optional<float> seed = 7.f) {
  return fill_node("RandomUniform", n, {"low", low}, {"high", high}, dtype, seed);
}
ir::Node normal_node(int64_t n, float mean, float scale, int dtype, std::optional<float> seed = 3.f) {
  return fill_node("RandomNormal", n, {"mean", mean}, {"scale", scale}, dtype, seed);
}

std::vector<uint8_t> bytes_of(const Tensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data());
  return {p, p + t.nbytes()};
}

// Philox4x32-10 known answers (Random123's kat_vectors): counter words (index lo, index hi,
// stream lo, stream hi), key words (lo, hi).
TEST(RandomUtil, PhiloxKnownAnswers) {
  using ops::random::Key;
  auto draw = [](uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1) {
    Key k{uint64_t{k1} << 32 | k0, uint64_t{c3} << 32 | c2, true};
    auto d = ops::random::philox(k, uint64_t{c1} << 32 | c0);
    return std::vector<uint32_t>(d.w, d.w + 4);
  };
  EXPECT_EQ(draw(0, 0, 0, 0, 0, 0), (std::vector<uint32_t>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(draw(~0u, ~0u, ~0u, ~0u, ~0u, ~0u),
            (std::vector<uint32_t>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(draw(0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0),
            (std::vector<uint32_t>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// The shared log / cos / exp are the library's within a few units in the last place.
TEST(RandomUtil, OwnTranscendentalsMatchTheLibrary) {
  for (double x : {1.0, 0.999999, 0.75, 0.5, 0.3, 1e-3, 1e-10, std::ldexp(1.0, -53)})
    EXPECT_NEAR(ops::random::log_unit(x), std::log(x), 4e-16 * std::max(1.0, std::fabs(std::log(x)))) << x;
  for (int k = 0; k < 64; ++k) {
    const double t = k / 64.0 + 1e-3;
    EXPECT_NEAR(ops::random::cos_turns(t), std::cos(2 * M_PI * t), 1e-15) << t;
  }
  for (double x : {0.0, -1e-9, -0.5, -1.0, -7.25, -100.0, -700.0})
    EXPECT_NEAR(ops::random::exp_nonpositive(x), std::exp(x), 4e-16 * std::exp(x)) << x;
  EXPECT_EQ(ops::random::exp_nonpositive(-INFINITY), 0.0);
}

TEST(RandomUniform, RangeAndMomentsFloat) {
  const int64_t n = 200000;
  auto out = run_ok(uniform_node(n, -2.f, 3.f, kOnnxFloat), {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DataType::kFloat32);
  EXPECT_EQ(out[0].dims(), (Dims{n}));
  auto v = doubles(out[0]);
  Moments m = moments(v);
  EXPECT_GE(m.lo, -2.0);
  EXPECT_LT(m.hi, 3.0);
  EXPECT_NEAR(m.mean, 0.5, 0.03);         // standard error 0.0032
  EXPECT_NEAR(m.var, 25.0 / 12, 0.04);    // standard error 0.0047
  std::vector<int> bins(10, 0);
  for (double x : v) ++bins[static_cast<int>((x + 2) / 0.5)];
  for (int b : bins) EXPECT_NEAR(b / static_cast<double>(n), 0.1, 0.005);  // standard error 0.00067
}

TEST(RandomUniform, DoubleHalfAndBfloat16StayBelowHigh) {
  const int64_t n = 100000;
  for (auto [dtype, type, top] : {std::tuple{kOnnxDouble, DataType::kFloat64, 1 - std::ldexp(1.0, -53)},
                                  std::tuple{kOnnxHalf, DataType::kFloat16, 1 - std::ldexp(1.0, -11)},
                                  std::tuple{kOnnxBf16, DataType::kBFloat16, 1 - std::ldexp(1.0, -8)}}) {
    auto out = run_ok(uniform_node(n, 0.f, 1.f, dtype), {});
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].dtype(), type);
    Moments m = moments(doubles(out[0]));
    EXPECT_GE(m.lo, 0.0) << dtype;
    EXPECT_LE(m.hi, top) << dtype;  // never 1, though the values come close
    EXPECT_GT(m.hi, 0.99) << dtype;
    EXPECT_NEAR(m.mean, 0.5, 0.01) << dtype;
    EXPECT_NEAR(m.var, 1.0 / 12, 0.005) << dtype;
  }
}

// [1, 1 + 2^-20) in float: the draws round to the float grid, and those that round up to high
// are stepped back below it.
TEST(RandomUniform, RoundingUpToHighIsSteppedBack) {
  const float high = 1.f + std::ldexp(1.f, -20);
  auto out = run_ok(uniform_node(20000, 1.f, high, kOnnxFloat), {});
  ASSERT_EQ(out.size(), 1u);
  std::set<float> seen;
  const std::vector<float> v = out[0].to_float_vector().value();
  for (float x : v) {
    EXPECT_GE(x, 1.f);
    EXPECT_LT(x, high);
    seen.insert(x);
  }
  EXPECT_EQ(seen.size(), 8u);  // 1 + k 2^-23 for k = 0..7
}

TEST(RandomNormal, MeanScaleAndShape) {
  const int64_t n = 200000;
  for (auto [dtype, mean_tol] : {std::pair{kOnnxFloat, 0.03}, std::pair{kOnnxDouble, 0.03}, std::pair{kOnnxHalf, 0.035}}) {
    auto out = run_ok(normal_node(n, 1.5f, 2.f, dtype), {});
    ASSERT_EQ(out.size(), 1u);
    auto v = doubles(out[0]);
    Moments m = moments(v);
    EXPECT_NEAR(m.mean, 1.5, mean_tol) << dtype;  // standard error 0.0045
    EXPECT_NEAR(m.var, 4.0, 0.08) << dtype;       // standard error 0.013
    size_t within1 = 0, beyond3 = 0;
    for (double x : v) {
      const double z = std::fabs(x - 1.5) / 2;
      within1 += z < 1;
      beyond3 += z > 3;
    }
    EXPECT_NEAR(within1 / static_cast<double>(n), 0.6827, 0.007) << dtype;  // standard error 0.001
    EXPECT_NEAR(beyond3 / static_cast<double>(n), 0.0027, 0.0008) << dtype; // standard error 0.00012
  }
}

TEST(RandomLike, TakeInputDimsAndTypeUnlessDtypeIsSet) {
  Tensor x = Tensor::from_vector(DataType::kFloat64, {3, 4}, std::vector<double>(12, 42.0));
  auto u = run_ok(make_node("RandomUniformLike", 1, 1, {{"seed", Attribute::make_float(1.f)}}), {x});
  ASSERT_EQ(u.size(), 1u);
  EXPECT_EQ(u[0].dtype(), DataType::kFloat64);
  EXPECT_EQ(u[0].dims(), (Dims{3, 4}));
  for (double v : doubles(u[0])) EXPECT_TRUE(v >= 0 && v < 1) << v;
  Tensor ints = Tensor::from_vector(DataType::kInt64, {2, 5}, std::vector<int64_t>(10, 0));
  auto nrm = run_ok(make_node("RandomNormalLike", 1, 1, {{"dtype", Attribute::make_int(kOnnxHalf)}}), {ints});
  ASSERT_EQ(nrm.size(), 1u);
  EXPECT_EQ(nrm[0].dtype(), DataType::kFloat16);
  EXPECT_EQ(nrm[0].dims(), (Dims{2, 5}));
  // An int input without dtype: the output would be int, which the ops do not produce.
  auto bad = ops::evaluate_on_host(make_node("RandomUniformLike", 1, 1), {ints});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("set attribute 'dtype'"), std::string::npos) << bad.status().to_string();
  auto no_shape = ops::evaluate_on_host(make_node("RandomNormal", 0, 1), {});
  ASSERT_FALSE(no_shape.ok());
  EXPECT_NE(no_shape.status().message().find("'shape' is required"), std::string::npos);
}

Tensor probabilities(const std::vector<double>& p) {
  return Tensor::from_vector(DataType::kFloat64, {static_cast<int64_t>(p.size())}, p);
}

TEST(Bernoulli, ZeroAndOneAreExactHalfIsFair) {
  const int64_t n = 100000;
  const ir::Node node = make_node("Bernoulli", 1, 1, {{"seed", Attribute::make_float(5.f)}}, 15);
  for (double p : {0.0, 1.0}) {
    auto out = run_ok(node, {probabilities(std::vector<double>(n, p))});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].dtype(), DataType::kFloat64);
    for (double y : doubles(out[0])) ASSERT_EQ(y, p);
  }
  auto out = run_ok(node, {probabilities(std::vector<double>(n, 0.5))});
  ASSERT_EQ(out.size(), 1u);
  double ones = 0;
  for (double y : doubles(out[0])) {
    ASSERT_TRUE(y == 0 || y == 1);
    ones += y;
  }
  EXPECT_NEAR(ones / n, 0.5, 0.01);  // standard error 0.0016
}

TEST(Bernoulli, PerElementProbabilitiesAndOutputTypes) {
  // Element i has probability (i % 5) / 4: classes 0 and 4 exact, 1..3 by frequency.
  const int64_t n = 50000;
  std::vector<float> p(n);
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(i % 5) / 4;
  for (auto [dtype, type] : {std::pair{kOnnxBool, DataType::kBool}, std::pair{kOnnxInt64, DataType::kInt64},
                             std::pair{kOnnxHalf, DataType::kFloat16}}) {
    auto node = make_node("Bernoulli", 1, 1, {{"dtype", Attribute::make_int(dtype)}, {"seed", Attribute::make_float(2.f)}}, 22);
    auto out = run_ok(node, {testing::f32({n}, p)});
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].dtype(), type);
    auto y = doubles(out[0]);
    std::vector<double> ones(5, 0);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_TRUE(y[i] == 0 || y[i] == 1) << i;
      ones[i % 5] += y[i];
    }
    EXPECT_EQ(ones[0], 0);
    EXPECT_EQ(ones[4], n / 5);
    for (int c = 1; c < 4; ++c) EXPECT_NEAR(ones[c] / (n / 5), c / 4.0, 0.02) << c;  // standard error <= 0.0036
  }
}

TEST(Multinomial, FrequenciesFollowTheProbabilities) {
  const int64_t samples = 100000;
  const std::vector<std::vector<double>> probs = {{0.1, 0.2, 0.0, 0.7}, {0.25, 0.25, 0.25, 0.25}};
  std::vector<float> logits;
  for (const auto& row : probs)
    for (double q : row) logits.push_back(q == 0 ? -INFINITY : static_cast<float>(std::log(q) + 3));  // unnormalized
  auto node = make_node("Multinomial", 1, 1,
                        {{"sample_size", Attribute::make_int(samples)}, {"dtype", Attribute::make_int(kOnnxInt64)},
                         {"seed", Attribute::make_float(11.f)}}, 7);
  auto out = run_ok(node, {testing::f32({2, 4}, logits)});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].dtype(), DataType::kInt64);
  ASSERT_EQ(out[0].dims(), (Dims{2, samples}));
  auto y = testing::values_i64(out[0]);
  for (size_t r = 0; r < probs.size(); ++r) {
    std::vector<double> count(4, 0);
    for (int64_t s = 0; s < samples; ++s) {
      const int64_t c = y[r * samples + s];
      ASSERT_TRUE(c >= 0 && c < 4) << c;
      ++count[c];
    }
    for (int c = 0; c < 4; ++c) EXPECT_NEAR(count[c] / samples, probs[r][c], 0.01) << r << " " << c;
    if (probs[r][2] == 0) {
      EXPECT_EQ(count[2], 0);  // never drawn
    }
  }
}

TEST(Multinomial, Int32DefaultAndRowsWithoutMass) {
  const float ninf = -INFINITY;
  auto out = run_ok(make_node("Multinomial", 1, 1, {{"sample_size", Attribute::make_int(5)}}, 7),
                    {testing::f32({3, 3}, {ninf, ninf, ninf, ninf, 0.f, ninf, 2.f, ninf, ninf})});
  ASSERT_EQ(out.size(), 1u);
  ASSERT_EQ(out[0].dtype(), DataType::kInt32);
  EXPECT_EQ(testing::values_i64(out[0]), (std::vector<int64_t>{0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0}));
  auto bad = ops::evaluate_on_host(make_node("Multinomial", 1, 1, {}, 7), {testing::f32({4}, {0, 0, 0, 0})});
  EXPECT_FALSE(bad.ok());
}

TEST(RandomSeed, SameSeedSameValuesUnseededDiffer) {
  for (const ir::Node& node : {uniform_node(1000, 0.f, 1.f, kOnnxFloat), normal_node(1000, 0.f, 1.f, kOnnxHalf)}) {
    auto a = run_ok(node, {}), b = run_ok(node, {});
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(bytes_of(a[0]), bytes_of(b[0])) << node.op_type;
  }
  auto other = run_ok(uniform_node(1000, 0.f, 1.f, kOnnxFloat, 8.f), {});
  auto seven = run_ok(uniform_node(1000, 0.f, 1.f, kOnnxFloat, 7.f), {});
  EXPECT_NE(bytes_of(other[0]), bytes_of(seven[0]));
  for (const ir::Node& node : {uniform_node(1000, 0.f, 1.f, kOnnxFloat, std::nullopt),
                               normal_node(1000, 0.f, 1.f, kOnnxFloat, std::nullopt)}) {
    auto a = run_ok(node, {}), b = run_ok(node, {});
    ASSERT_EQ(a.size(), 1u);
    ASSERT_EQ(b.size(), 1u);
    EXPECT_NE(bytes_of(a[0]), bytes_of(b[0])) << node.op_type;
  }
}

// Constant folding and value propagation leave a random node in the graph.
TEST(RandomFolding, FoldConstantsKeepsRandomNodes) {
  ir::Graph g;
  auto r = g.add_value("r");
  auto c = g.add_value("c");
  auto y = g.add_value("y");
  g.set_constant(c, testing::f32({4}, {1, 2, 3, 4}));
  g.outputs = {y};
  ir::Node rand = uniform_node(4, 0.f, 1.f, kOnnxFloat, std::nullopt);
  rand.inputs.clear();
  rand.outputs = {r};
  testing::add_node(g, "Add", {r, c}, {y});
  g.nodes.insert(g.nodes.begin(), rand);
  auto folded = builder::fold_constants(g);
  ASSERT_TRUE(folded.ok()) << folded.status().to_string();
  EXPECT_EQ(*folded, 0u);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op_type, "RandomUniform");
  EXPECT_FALSE(g.is_constant(r));
  EXPECT_FALSE(g.is_constant(y));
}

// y = RandomUniform(shape [64]) + b with b an initializer: everything is static, yet the plan keeps
// both steps, and an unseeded plan draws anew at every run while a seeded one repeats itself.
onnx::ModelProto random_add_model(bool seeded) {
  using namespace testing;
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  add_output(g, "y", onnx::TensorProto_DataType_FLOAT, {int64_t{64}});
  *g->add_initializer() = f32_raw("b", {64}, std::vector<float>(64, 10.f));
  auto* n = add_node(g, "RandomUniform", "rand", {}, {"r"});
  auto* shape = n->add_attribute();
  shape->set_name("shape");
  shape->set_type(onnx::AttributeProto::INTS);
  shape->add_ints(64);
  if (seeded) {
    auto* seed = n->add_attribute();
    seed->set_name("seed");
    seed->set_type(onnx::AttributeProto::FLOAT);
    seed->set_f(1.f);
  }
  add_node(g, "Add", "add", {"r", "b"}, {"y"});
  return m;
}

TEST(RandomFolding, PlanKeepsTheStepAndRunsDraw) {
  for (bool seeded : {false, true}) {
    auto engine = testing::cpu_engine_from_model(random_add_model(seeded));
    ASSERT_NE(engine, nullptr);
    EXPECT_EQ(engine->num_steps(), 2u);
    auto ctx = engine->create_execution_context().value();
    std::vector<float> y1(64), y2(64);
    for (auto* y : {&y1, &y2}) {
      ASSERT_TRUE(ctx->set_tensor_address("y", y->data(), 64 * 4).ok());
      ASSERT_TRUE(ctx->execute().ok());
    }
    for (float v : y1) EXPECT_TRUE(v >= 10.f && v < 11.f) << v;
    if (seeded) {
      EXPECT_EQ(y1, y2);
    } else {
      EXPECT_NE(y1, y2);
    }
  }
}

TEST(RandomFolding, SchemasSayNondeterministic) {
  for (const char* op : {"RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike", "Bernoulli",
                         "Multinomial"}) {
    const ops::OpSchema* s = ops::OpRegistry::global().find(op);
    ASSERT_NE(s, nullptr) << op;
    EXPECT_TRUE(s->nondeterministic) << op;
  }
  EXPECT_FALSE(ops::OpRegistry::global().find("Add")->nondeterministic);
}

}  // namespace
}  // namespace streamrt

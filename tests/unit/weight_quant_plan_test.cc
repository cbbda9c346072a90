// Plans built with BuilderConfig::weight_quant: MatMul / Gemm read compressed weights, the outputs
// stay within the quantization error of the float model (bounded here from the float weights),
// streaming moves the compressed bytes at budget 0 (with and without chunk splits), and refit
// of an original weight name quantizes the new values the same way.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "onnx_model_util.h"
#include "streaming_test_util.h"
#include "streamrt/refit.h"
#include "tactics_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

constexpr int64_t kM = 3, kK = 200, kN1 = 96, kN2 = 64;

struct Weights {
  std::vector<float> w1 = random_floats(kK * kN1, 1);   // [K, N1]
  std::vector<float> w2t = random_floats(kN2 * kN1, 2); // [N2, N1] (Gemm transB)
  std::vector<float> c = random_floats(kN2, 3);
};

// y1 = MatMul(x [3, 200], W1 [200, 96]); y2 = Gemm(x2 [3, 96], W2t [64, 96], C [64], transB).
onnx::ModelProto quant_model(const Weights& w) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  const int f = onnx::TensorProto_DataType_FLOAT;
  add_input(g, "x", f, {kM, kK});
  add_input(g, "x2", f, {kM, kN1});
  add_output(g, "y1", f, {kM, kN1});
  add_output(g, "y2", f, {kM, kN2});
  *g->add_initializer() = f32_raw("W1", {kK, kN1}, w.w1);
  *g->add_initializer() = f32_raw("W2t", {kN2, kN1}, w.w2t);
  *g->add_initializer() = f32_raw("C", {kN2}, w.c);
  add_node(g, "MatMul", "mm", {"x", "W1"}, {"y1"});
  auto* gemm = add_node(g, "Gemm", "gemm", {"x2", "W2t", "C"}, {"y2"});
  auto* tb = gemm->add_attribute();
  tb->set_name("transB");
  tb->set_type(onnx::AttributeProto::INT);
  tb->set_i(1);
  return m;
}

std::map<std::string, Tensor> quant_inputs() {
  std::map<std::string, Tensor> in;
  in["x"] = Tensor::from_vector<float>(DataType::kFloat32, {kM, kK}, random_floats(kM * kK, 7));
  in["x2"] = Tensor::from_vector<float>(DataType::kFloat32, {kM, kN1}, random_floats(kM * kN1, 8));
  return in;
}

struct Built {
  std::vector<uint8_t> plan;
  std::shared_ptr<Engine> engine;
  BuildReport report;
};

Built build(const onnx::ModelProto& m, const WeightQuant& q, uint64_t chunk, const std::string& tag) {
  const auto path = std::filesystem::temp_directory_path() / ("srt_quant_" + tag + "_" + std::to_string(getpid()) + ".onnx");
  write_file(path, serialize(m));
  BuilderConfig c;
  c.weight_quant = q;
  c.weight_streaming = true;
  c.min_streamable_bytes = 1;  // every weight streams, scales and zero points too
  c.stream_chunk_bytes = chunk;
  Built b;
  auto bytes = build_plan_from_onnx(path.string(), c, &b.report);
  std::filesystem::remove(path);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  if (!bytes.ok()) return b;
  b.plan = *bytes;
  auto e = Runtime::create({DeviceType::kCpu}).value()->load_engine_bytes(std::move(bytes).value());
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  if (e.ok()) b.engine = std::move(e).value();
  return b;
}

// Bytes of a [K, N] weight stored by scheme `q` (packed codes, float32 scales, zero points).
uint64_t compressed_bytes(const WeightQuant& q, int64_t k, int64_t n) {
  if (q.scheme == WeightQuantScheme::kInt8 || q.scheme == WeightQuantScheme::kFp8)
    return static_cast<uint64_t>(n * k + n * 4);
  const int64_t groups = (k + q.group - 1) / q.group;
  return static_cast<uint64_t>(n * groups * q.group / 2 + n * groups * 4 + n * groups);
}

// Bound on |quantized - float| of output (r, j) of x @ W (W read as w(k, j)): each weight moves
// by at most half its step, the step computed here from the float weights.
template <typename W>
double error_bound(const WeightQuant& q, const std::vector<float>& x, int64_t r, int64_t j, int64_t k, W w) {
  double bound = 0;
  const int64_t group = q.scheme == WeightQuantScheme::kInt4 ? q.group : k;
  for (int64_t g0 = 0; g0 < k; g0 += group) {
    const int64_t g1 = std::min(k, g0 + group);
    double lo = 0, hi = 0, amax = 0;
    for (int64_t i = g0; i < g1; ++i) {
      lo = std::min(lo, static_cast<double>(w(i, j)));
      hi = std::max(hi, static_cast<double>(w(i, j)));
      amax = std::max(amax, std::fabs(static_cast<double>(w(i, j))));
    }
    if (q.scheme == WeightQuantScheme::kFp8) {  // half an e4m3 step at each weight's magnitude
      for (int64_t i = g0; i < g1; ++i)
        bound += std::fabs(x[r * k + i]) * std::max(std::fabs(static_cast<double>(w(i, j))) / 16, amax / 448 * 0x1p-10) * 1.01;
      continue;
    }
    const double step = q.scheme == WeightQuantScheme::kInt4 ? (hi - lo) / 15 : amax / 127;
    for (int64_t i = g0; i < g1; ++i) bound += std::fabs(x[r * k + i]) * step * 0.51;
  }
  return bound + 1e-4;
}

std::vector<WeightQuant> schemes() {
  return {{WeightQuantScheme::kInt8, 128}, {WeightQuantScheme::kFp8, 128}, {WeightQuantScheme::kInt4, 32},
          {WeightQuantScheme::kInt4, 64}, {WeightQuantScheme::kInt4, 128}};
}

const float* floats(const std::vector<uint8_t>& bytes) { return reinterpret_cast<const float*>(bytes.data()); }

void expect_within_quantization_error(const WeightQuant& q, const Weights& w,
                                      const std::map<std::string, Tensor>& in,
                                      const std::vector<std::vector<uint8_t>>& out) {
  const float* x = in.at("x").data_as<float>();
  const float* x2 = in.at("x2").data_as<float>();
  const std::vector<float> xv(x, x + kM * kK), x2v(x2, x2 + kM * kN1);
  for (int64_t r = 0; r < kM; ++r) {
    for (int64_t j = 0; j < kN1; ++j) {
      double ref = 0;
      for (int64_t i = 0; i < kK; ++i) ref += static_cast<double>(xv[r * kK + i]) * w.w1[i * kN1 + j];
      const double b = error_bound(q, xv, r, j, kK, [&](int64_t i, int64_t jj) { return w.w1[i * kN1 + jj]; });
      ASSERT_NEAR(floats(out[0])[r * kN1 + j], ref, b) << "y1 " << r << ", " << j;
    }
    for (int64_t j = 0; j < kN2; ++j) {
      double ref = w.c[j];
      for (int64_t i = 0; i < kN1; ++i) ref += static_cast<double>(x2v[r * kN1 + i]) * w.w2t[j * kN1 + i];
      const double b = error_bound(q, x2v, r, j, kN1, [&](int64_t i, int64_t jj) { return w.w2t[jj * kN1 + i]; });
      ASSERT_NEAR(floats(out[1])[r * kN2 + j], ref, b) << "y2 " << r << ", " << j;
    }
  }
}

TEST(WeightQuantPlan, EachSchemeStreamsItsCompressedBytesWithinTheQuantizationError) {
  const Weights w;
  const auto in = quant_inputs();
  for (const WeightQuant& q : schemes()) {
    SCOPED_TRACE(weight_quant_name(q));
    Built b = build(quant_model(w), q, 0, "whole");
    ASSERT_TRUE(b.engine);
    EXPECT_EQ(b.report.steps_quantized, 2u);
    // The bias C streams as it is (float32); every other streamed byte is a compressed weight.
    const uint64_t expected = compressed_bytes(q, kK, kN1) + compressed_bytes(q, kN1, kN2) + kN2 * 4;
    EXPECT_EQ(b.engine->streamable_weights_size(), expected);
    ASSERT_TRUE(b.engine->set_weight_streaming_budget(0).ok());
    StreamingStats stats;
    auto out = run_once(*b.engine, in, &stats);
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    EXPECT_EQ(stats.bytes_streamed, expected);
    expect_within_quantization_error(q, w, in, *out);
    // Resident: the same bytes out.
    ASSERT_TRUE(b.engine->set_weight_streaming_budget(b.engine->streamable_weights_size()).ok());
    auto resident = run_once(*b.engine, in, &stats);
    ASSERT_TRUE(resident.ok());
    EXPECT_EQ(stats.bytes_streamed, 0u);
    EXPECT_EQ(*resident, *out);
  }
}

TEST(WeightQuantPlan, ChunkSplitsSliceTheCompressedWeightsAndKeepTheOutputs) {
  const Weights w;
  const auto in = quant_inputs();
  for (const WeightQuant& q : schemes()) {
    SCOPED_TRACE(weight_quant_name(q));
    Built whole = build(quant_model(w), q, 0, "whole");
    Built split = build(quant_model(w), q, 2048, "split");  // W1 (>= 9.6 KB compressed) splits by 64 columns
    ASSERT_TRUE(whole.engine && split.engine);
    EXPECT_GE(split.report.steps_split, 1u);
    EXPECT_EQ(split.engine->streamable_weights_size(), whole.engine->streamable_weights_size());
    ASSERT_TRUE(split.engine->set_weight_streaming_budget(0).ok());
    StreamingStats stats;
    auto a = run_once(*whole.engine, in);
    auto b = run_once(*split.engine, in, &stats);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(*a, *b);  // each column is the same dot product in the same order
    EXPECT_EQ(stats.bytes_streamed, split.engine->streamable_weights_size());
  }
}

// Refit by the model's weight names: the new values are quantized into the compressed weights
// (every chunk of a split one), and the engine computes what a plan built from them computes.
TEST(WeightQuantPlan, RefitOfAnOriginalWeightQuantizesTheNewValues) {
  const Weights old_w;
  Weights new_w;
  new_w.w1 = random_floats(kK * kN1, 31);
  new_w.w2t = random_floats(kN2 * kN1, 32);
  const auto in = quant_inputs();
  for (const WeightQuant& q : schemes()) {
    for (uint64_t chunk : {uint64_t{0}, uint64_t{2048}}) {
      SCOPED_TRACE(weight_quant_name(q) + " chunk " + std::to_string(chunk));
      Built b = build(quant_model(old_w), q, chunk, "old");
      Built fresh = build(quant_model(new_w), q, chunk, "new");
      ASSERT_TRUE(b.engine && fresh.engine);
      auto expected = run_once(*fresh.engine, in);
      ASSERT_TRUE(expected.ok());
      auto r = Refitter::create(b.engine).value();
      // Wrong dims, then an unknown name: refused, nothing staged.
      EXPECT_EQ(r->set_weights("W1", DataType::kFloat32, {kN1, kK}, new_w.w1.data(), new_w.w1.size() * 4).code(),
                StatusCode::kInvalidArgument);
      EXPECT_EQ(r->set_weights("nope", DataType::kFloat32, {1}, new_w.c.data(), 4).code(), StatusCode::kNotFound);
      EXPECT_EQ(r->num_staged(), 0u);
      ASSERT_TRUE(r->set_weights("W1", DataType::kFloat32, {kK, kN1}, new_w.w1.data(), new_w.w1.size() * 4).ok());
      ASSERT_TRUE(r->set_weights("W2t", DataType::kFloat32, {kN2, kN1}, new_w.w2t.data(), new_w.w2t.size() * 4).ok());
      ASSERT_TRUE(r->refit().ok());
      auto got = run_once(*b.engine, in);
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(*got, *expected);
      expect_within_quantization_error(q, new_w, in, *got);
    }
  }
}

// The same through set_weights_from_onnx: the model prepares to the plan's quantized steps.
TEST(WeightQuantPlan, RefitFromOnnxQuantizesLikeTheBuild) {
  const Weights old_w;
  Weights new_w;
  new_w.w1 = random_floats(kK * kN1, 41);
  const auto in = quant_inputs();
  const WeightQuant q{WeightQuantScheme::kInt4, 64};
  Built b = build(quant_model(old_w), q, 0, "old");
  Built fresh = build(quant_model(new_w), q, 0, "new");
  ASSERT_TRUE(b.engine && fresh.engine);
  const auto path = std::filesystem::temp_directory_path() / ("srt_quant_refit_" + std::to_string(getpid()) + ".onnx");
  write_file(path, serialize(quant_model(new_w)));
  auto r = Refitter::create(b.engine).value();
  Status st = r->set_weights_from_onnx(path.string());
  std::filesystem::remove(path);
  ASSERT_TRUE(st.ok()) << st.to_string();
  ASSERT_TRUE(r->refit().ok());
  auto got = run_once(*b.engine, in);
  auto expected = run_once(*fresh.engine, in);
  ASSERT_TRUE(got.ok() && expected.ok());
  EXPECT_EQ(*got, *expected);
}

}  // namespace
}  // namespace streamrt

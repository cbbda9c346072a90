// Plans built with calibration inputs (WeightQuant::calibration): the builder runs the model on
// the CPU over them and quantizes by GPTQ, so outputs on inputs like them are closer to float
// than the rounded plan's; a calibration sample that does not fit the model is refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include "onnx_model_util.h"
#include "streaming_test_util.h"
#include "streamrt/refit.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

constexpr int64_t kK = 128, kH = 96, kN = 32;

// y = Gemm(Relu(MatMul(x [R, 128], W1 [128, 96])), W2t [32, 96], transB); R dynamic.
std::string write_model(const std::string& tag, uint32_t seed = 3) {
  onnx::ModelProto m = make_model(13);
  auto* g = m.mutable_graph();
  const int f = onnx::TensorProto_DataType_FLOAT;
  add_input(g, "x", f, {std::string("rows"), kK});
  add_output(g, "y", f, {std::string("rows"), kN});
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 0.1f);
  std::vector<float> w1(kK * kH), w2t(kN * kH);
  for (float& v : w1) v = nd(rng);
  for (float& v : w2t) v = nd(rng);
  *g->add_initializer() = f32_raw("W1", {kK, kH}, w1);
  *g->add_initializer() = f32_raw("W2t", {kN, kH}, w2t);
  add_node(g, "MatMul", "mm", {"x", "W1"}, {"h"});
  add_node(g, "Relu", "relu", {"h"}, {"r"});
  auto* gemm = add_node(g, "Gemm", "gemm", {"r", "W2t"}, {"y"});
  auto* tb = gemm->add_attribute();
  tb->set_name("transB");
  tb->set_type(onnx::AttributeProto::INT);
  tb->set_i(1);
  const auto path = std::filesystem::temp_directory_path() / ("srt_cal_" + tag + "_" + std::to_string(getpid()) + ".onnx");
  write_file(path, serialize(m));
  return path.string();
}

// Inputs of one structure (a low-rank mix, some channels far larger), rows drawn by `seed`.
Tensor inputs(int64_t rows, uint32_t seed) {
  std::mt19937 mix_rng(11), rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  constexpr int64_t kRank = 12;
  std::vector<float> mix(kRank * kK), x(static_cast<size_t>(rows * kK));
  for (float& v : mix) v = nd(mix_rng);
  for (int64_t r = 0; r < rows; ++r) {
    float z[kRank];
    for (float& v : z) v = nd(rng);
    for (int64_t j = 0; j < kK; ++j) {
      float s = 0.05f * nd(rng);
      for (int64_t t = 0; t < kRank; ++t) s += z[t] * mix[t * kK + j];
      x[r * kK + j] = s * (j % 8 == 5 ? 6.f : 1.f);
    }
  }
  return Tensor::from_vector<float>(DataType::kFloat32, {rows, kK}, x);
}

BuilderConfig config(WeightQuantScheme scheme, bool calibrated) {
  BuilderConfig c;
  c.profiles["x"] = {{1, kK}, {64, kK}, {256, kK}};
  c.weight_quant.scheme = scheme;
  c.weight_quant.group = 32;
  if (calibrated)
    for (uint32_t s = 0; s < 4; ++s) c.weight_quant.calibration.push_back({{"x", inputs(64, 100 + s)}});
  return c;
}

std::vector<float> run(const std::vector<uint8_t>& plan, const Tensor& x) {
  auto e = Runtime::create({DeviceType::kCpu}).value()->load_engine_bytes(plan);
  EXPECT_TRUE(e.ok()) << e.status().to_string();
  auto out = run_once(**e, {{"x", x}});
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  const auto* p = reinterpret_cast<const float*>((*out)[0].data());
  return std::vector<float>(p, p + (*out)[0].size() / sizeof(float));
}

double squared_distance(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
  return d;
}

TEST(WeightQuantCalibration, GptqPlansAreCloserToFloatThanRoundedOnesOnInputsNeverSeen) {
  const std::string model = write_model("closer");
  auto fp = build_plan_from_onnx(model, config(WeightQuantScheme::kNone, false));
  ASSERT_TRUE(fp.ok()) << fp.status().to_string();
  const Tensor x = inputs(200, 7);  // rows none of the calibration samples held
  const std::vector<float> want = run(*fp, x);
  for (WeightQuantScheme scheme : {WeightQuantScheme::kInt8, WeightQuantScheme::kInt4}) {
    SCOPED_TRACE(scheme == WeightQuantScheme::kInt8 ? "int8" : "int4:32");
    BuildReport rounded_rep, gptq_rep;
    auto rounded = build_plan_from_onnx(model, config(scheme, false), &rounded_rep);
    auto gptq = build_plan_from_onnx(model, config(scheme, true), &gptq_rep);
    ASSERT_TRUE(rounded.ok() && gptq.ok()) << gptq.status().to_string();
    EXPECT_EQ(rounded_rep.steps_quantized, 2u);
    EXPECT_EQ(rounded_rep.steps_calibrated, 0u);
    EXPECT_EQ(gptq_rep.steps_quantized, 2u);
    EXPECT_EQ(gptq_rep.steps_calibrated, 2u);
    EXPECT_GT(gptq_rep.calibration_ms, 0.0);
    EXPECT_EQ(rounded_rep.weight_bytes, gptq_rep.weight_bytes);  // the same format, other codes
    const double e_rounded = squared_distance(run(*rounded, x), want);
    const double e_gptq = squared_distance(run(*gptq, x), want);
    EXPECT_LT(e_gptq, 0.7 * e_rounded) << "GPTQ " << e_gptq << " vs rounding " << e_rounded;
  }
  std::filesystem::remove(model);
}

// Refit has no calibration inputs: new values for a calibrated plan are rounded, as a plan built
// without calibration from the new model holds them.
TEST(WeightQuantCalibration, RefitOfACalibratedPlanRoundsTheNewWeights) {
  const std::string model = write_model("refit_old"), other = write_model("refit_new", 9);
  auto calibrated = build_plan_from_onnx(model, config(WeightQuantScheme::kInt4, true));
  auto rounded_new = build_plan_from_onnx(other, config(WeightQuantScheme::kInt4, false));
  ASSERT_TRUE(calibrated.ok() && rounded_new.ok()) << calibrated.status().to_string();
  auto e = Runtime::create({DeviceType::kCpu}).value()->load_engine_bytes(*calibrated);
  ASSERT_TRUE(e.ok()) << e.status().to_string();
  auto r = Refitter::create(*e).value();
  ASSERT_TRUE(r->set_weights_from_onnx(other).ok());
  ASSERT_TRUE(r->refit().ok());
  const Tensor x = inputs(50, 7);
  auto got = run_once(**e, {{"x", x}});
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  const auto* p = reinterpret_cast<const float*>((*got)[0].data());
  EXPECT_EQ(std::vector<float>(p, p + (*got)[0].size() / sizeof(float)), run(*rounded_new, x));
  std::filesystem::remove(model);
  std::filesystem::remove(other);
}

TEST(WeightQuantCalibration, SamplesThatDoNotFitTheModelAreRefusedByName) {
  const std::string model = write_model("refused");
  auto expect_error = [&](const BuilderConfig& c, StatusCode code, const std::string& part) {
    auto r = build_plan_from_onnx(model, c);
    ASSERT_FALSE(r.ok()) << part;
    EXPECT_EQ(r.status().code(), code) << r.status().to_string();
    EXPECT_NE(r.status().message().find(part), std::string::npos) << r.status().to_string();
  };
  BuilderConfig missing = config(WeightQuantScheme::kInt4, true);
  missing.weight_quant.calibration[1] = {{"other", inputs(4, 1)}};
  expect_error(missing, StatusCode::kInvalidArgument, "calibration sample 1 has no tensor for input 'x'");
  BuilderConfig extra = config(WeightQuantScheme::kInt4, true);
  extra.weight_quant.calibration[2]["mask"] = inputs(4, 1);
  expect_error(extra, StatusCode::kInvalidArgument, "calibration sample 2 names 'mask', which is not an input");
  BuilderConfig dtype = config(WeightQuantScheme::kInt8, true);
  dtype.weight_quant.calibration[0]["x"] = Tensor::from_vector<int64_t>(DataType::kInt64, {1, kK}, std::vector<int64_t>(kK));
  expect_error(dtype, StatusCode::kInvalidArgument, "input 'x' is float32, the sample holds int64");
  BuilderConfig shape = config(WeightQuantScheme::kInt8, true);
  shape.weight_quant.calibration[3]["x"] = inputs(300, 1);  // the profile's max is 256 rows
  expect_error(shape, StatusCode::kInvalidArgument, "calibration sample 3");
  BuilderConfig no_scheme = config(WeightQuantScheme::kNone, true);
  expect_error(no_scheme, StatusCode::kInvalidArgument, "calibration inputs were given without a quantization scheme");
  std::filesystem::remove(model);
}

}  // namespace
}  // namespace streamrt

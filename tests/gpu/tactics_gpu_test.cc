// GPU tests of tactics and TF32 (ctest label `gpu`; every test skips, saying why, without a CUDA
// device). Plans built for CUDA record a timed cuBLASLt algorithm per MatMul / Gemm; the engine
// uses it (or, for a malformed or foreign record, cuBLASLt's heuristic) and matches the CPU at
// float32 tolerance; with TF32 allowed, results stay within a TF32 tolerance (1e-2).
#include <gtest/gtest.h>

#include <cmath>

#include "../unit/tactics_test_util.h"
#include "builder/tactics.h"
#include "onnx/tensor_proto.h"

namespace streamrt {
namespace {

using builder::LtAlgoRecord;
using testing::TacticGemmModel;
using testing::TempDir;

// Largest |got - want| / (atol + rtol * |want|): at most 1 when every element is within tolerance.
double worst_ratio(const std::vector<float>& got, const std::vector<float>& want, double rtol, double atol,
                   size_t* where) {
  double worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double r = std::fabs(double(got[i]) - want[i]) / (atol + rtol * std::fabs(want[i]));
    if (!(r <= worst)) worst = r, *where = i;  // NaN counts as worst
  }
  return worst;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t at = 0;
  const double r = worst_ratio(got, want, rtol, atol, &at);
  EXPECT_LE(r, 1.0) << what << ": element " << at << " is " << got[at] << ", the CPU's " << want[at]
                    << " (rtol " << rtol << ", atol " << atol << ")";
}

class GpuTactics : public ::testing::Test {
 protected:
  void SetUp() override {
    RuntimeOptions ro;
    ro.device = DeviceType::kCuda;
    auto rt = Runtime::create(ro);
    if (!rt.ok()) GTEST_SKIP() << "GPU test skipped: no CUDA device here (" << rt.status().to_string() << ")";
  }

  BuilderConfig config(DeviceType device) const {
    BuilderConfig c;
    c.device = device;
    c.profiles["X"] = {{1, model.k}, {64, model.k}, {128, model.k}};
    return c;
  }

  std::vector<uint8_t> build(const BuilderConfig& c, BuildReport* rep = nullptr) {
    auto bytes = build_plan_from_onnx(model_path, c, rep);
    EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
    return bytes.ok() ? *bytes : std::vector<uint8_t>{};
  }

  std::vector<float> run(DeviceType device, const std::vector<uint8_t>& plan, const std::vector<float>& x,
                         int64_t batch) {
    auto y = testing::run_gemm_plan(device, plan, x, batch, model.k, model.n);
    EXPECT_TRUE(y.ok()) << device_type_name(device) << ": " << y.status().to_string();
    return y.ok() ? *y : std::vector<float>(static_cast<size_t>(batch * model.n), NAN);
  }

  // Runs `plan` on CUDA at the opt batch (64) and expects its MatMul and Gemm to have run the
  // recorded algorithms (cuBLASLt accepted them for the shapes they were timed at).
  void expect_recorded_algorithms_run(const std::vector<uint8_t>& plan) {
    builder::TacticCounters& n = builder::tactic_counters();
    const uint64_t used = n.recorded_runs.load(), fell_back = n.fallback_runs.load();
    const auto x = testing::random_floats(static_cast<size_t>(64 * model.k), 5);
    run(DeviceType::kCuda, plan, x, 64);
    EXPECT_GE(n.recorded_runs.load() - used, 2u)
        << "the recorded algorithms did not run at the shapes they were timed at (" << n.fallback_runs.load() - fell_back
        << " GEMM calls fell back to the heuristic; STREAMRT_LOG=verbose says why)";
  }

  // Runs `plan` on CUDA at the opt batch and at batches the tactics were not timed for, and
  // compares with the CPU plan at float32 tolerance.
  void expect_matches_cpu(const std::vector<uint8_t>& plan, const std::string& what) {
    const std::vector<uint8_t> cpu = build(config(DeviceType::kCpu));
    for (int64_t batch : {64, 37, 128, 1}) {
      const auto x = testing::random_floats(static_cast<size_t>(batch * model.k), 100 + static_cast<uint32_t>(batch));
      expect_close(run(DeviceType::kCuda, plan, x, batch), run(DeviceType::kCpu, cpu, x, batch), 1e-4, 1e-5,
                   what + ", batch " + std::to_string(batch));
    }
  }

  TempDir dir;
  TacticGemmModel model{256, 384, 192};
  std::string model_path = model.write(dir);
};

TEST_F(GpuTactics, BuildRecordsTimedAlgorithmsThatMatchTheCpu) {
  BuildReport rep;
  const std::vector<uint8_t> bytes = build(config(DeviceType::kCuda), &rep);
  EXPECT_EQ(rep.steps_tuned, 2u);
  EXPECT_GT(rep.tactic_ms, 0.0);
  plan::PlanData p = testing::read_back(bytes);
  struct Want {
    const char* op;
    int64_t m, n, k;
  };
  for (const Want& w : {Want{"MatMul", 64, 384, 256}, Want{"Gemm", 64, 192, 384}}) {
    const ir::Node* step = testing::find_step(p, w.op);
    ASSERT_NE(step, nullptr) << w.op;
    ASSERT_TRUE(step->has_attr(builder::kLtAlgoAttr)) << w.op << " has no tactic";
    auto r = builder::decode_lt_algo(step->attrs.at(builder::kLtAlgoAttr));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(r->m, w.m) << w.op;
    EXPECT_EQ(r->n, w.n) << w.op;
    EXPECT_EQ(r->k, w.k) << w.op;
    EXPECT_EQ(r->batch, 1) << w.op;
    EXPECT_GE(r->candidates, 1) << w.op;
    EXPECT_GT(r->best_ns, 0) << w.op;
    EXPECT_EQ(r->flags & builder::kLtAlgoTf32, 0u) << w.op;
    EXPECT_FALSE(builder::step_allows_tf32(*step)) << w.op;
    std::printf("  %s: %s\n", w.op, builder::describe_tactics(*step).c_str());
  }
  expect_recorded_algorithms_run(bytes);
  expect_matches_cpu(bytes, "tuned plan");
}

TEST_F(GpuTactics, NoTacticsBuildsRecordNothingAndMatchTheCpu) {
  BuilderConfig c = config(DeviceType::kCuda);
  c.tactics = false;
  BuildReport rep;
  const std::vector<uint8_t> bytes = build(c, &rep);
  EXPECT_EQ(rep.steps_tuned, 0u);
  plan::PlanData p = testing::read_back(bytes);
  for (const ir::Node& s : p.steps) EXPECT_FALSE(s.has_attr(builder::kLtAlgoAttr)) << s.describe();
  expect_matches_cpu(bytes, "--no-tactics plan");
}

TEST_F(GpuTactics, MalformedOrForeignRecordsFallBackToTheHeuristic) {
  plan::PlanData p = testing::read_back(build(config(DeviceType::kCuda)));
  ir::Node* mm = testing::find_step(p, "MatMul");
  ir::Node* fc = testing::find_step(p, "Gemm");
  ASSERT_TRUE(mm && fc && mm->has_attr(builder::kLtAlgoAttr) && fc->has_attr(builder::kLtAlgoAttr));
  auto mm_rec = builder::decode_lt_algo(mm->attrs.at(builder::kLtAlgoAttr));
  auto fc_rec = builder::decode_lt_algo(fc->attrs.at(builder::kLtAlgoAttr));
  ASSERT_TRUE(mm_rec.ok() && fc_rec.ok());
  auto variant = [&](const std::string& what, ir::Attribute mm_attr, ir::Attribute fc_attr) {
    mm->attrs[builder::kLtAlgoAttr] = std::move(mm_attr);
    fc->attrs[builder::kLtAlgoAttr] = std::move(fc_attr);
    auto bytes = plan::serialize_plan(p);
    ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
    expect_matches_cpu(*bytes, what);
  };
  LtAlgoRecord other_version = *fc_rec;
  other_version.library_version += 1;
  variant("malformed MatMul record, Gemm record of another cuBLASLt", ir::Attribute::make_ints({1, 2, 3}),
          builder::encode_lt_algo(other_version));
  LtAlgoRecord tf32_flag = *mm_rec;
  tf32_flag.flags |= builder::kLtAlgoTf32;  // timed for another compute type than the call's
  variant("record with other flags, string attribute", builder::encode_lt_algo(tf32_flag),
          ir::Attribute::make_string("fast"));
  // The Gemm's algorithm on the MatMul's call (same version and flags): cuBLASLt's own check
  // decides whether it runs; either way the result must be right.
  LtAlgoRecord swapped = *mm_rec;
  swapped.algo = fc_rec->algo;
  LtAlgoRecord swapped_back = *fc_rec;
  swapped_back.algo = mm_rec->algo;
  variant("algorithms swapped between the steps", builder::encode_lt_algo(swapped),
          builder::encode_lt_algo(swapped_back));
}

TEST_F(GpuTactics, Tf32StaysWithinTf32ToleranceAndIsUsed) {
  BuilderConfig c = config(DeviceType::kCuda);
  c.allow_tf32 = true;
  BuildReport rep;
  const std::vector<uint8_t> tf32 = build(c, &rep);
  EXPECT_EQ(rep.steps_tuned, 2u);
  plan::PlanData p = testing::read_back(tf32);
  for (const char* op : {"MatMul", "Gemm"}) {
    const ir::Node* step = testing::find_step(p, op);
    ASSERT_NE(step, nullptr);
    EXPECT_TRUE(builder::step_allows_tf32(*step)) << op;
    auto r = builder::decode_lt_algo(step->attrs.at(builder::kLtAlgoAttr));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_NE(r->flags & builder::kLtAlgoTf32, 0u) << op << ": timed without TF32";
  }
  expect_recorded_algorithms_run(tf32);
  const std::vector<uint8_t> strict = build(config(DeviceType::kCuda));
  const std::vector<uint8_t> cpu = build(config(DeviceType::kCpu));
  const int64_t batch = 64;
  const auto x = testing::random_floats(static_cast<size_t>(batch * model.k), 7);
  const std::vector<float> want = run(DeviceType::kCpu, cpu, x, batch);
  const std::vector<float> got = run(DeviceType::kCuda, tf32, x, batch);
  const std::vector<float> got_strict = run(DeviceType::kCuda, strict, x, batch);
  expect_close(got, want, 1e-2, 1e-3, "TF32");
  // TF32 rounds inputs to a 10-bit mantissa: its error is far above strict float32's.
  const double d_tf32 = max_abs_diff(got, want), d_strict = max_abs_diff(got_strict, want);
  std::printf("  max |GPU - CPU|: TF32 %.3g, float32 %.3g\n", d_tf32, d_strict);
  EXPECT_GT(d_tf32, 1e-5) << "TF32 results equal float32's: the TF32 compute type was not used";
  EXPECT_GT(d_tf32, 20 * d_strict) << "TF32 results are as close as float32's: the TF32 compute type was not used";
}

// A Conv network (LeNet with batch norm, the fixture) with TF32: cuDNN's tensor-op math.
TEST_F(GpuTactics, Tf32ConvNetworkWithinTf32Tolerance) {
  const std::string dir_path = std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/models/lenet_bn";
  auto input = onnx_import::load_tensor_pb(dir_path + "/test_data_set_0/input_0.pb");
  auto output = onnx_import::load_tensor_pb(dir_path + "/test_data_set_0/output_0.pb");
  ASSERT_TRUE(input.ok() && output.ok());
  BuilderConfig c;
  c.device = DeviceType::kCuda;
  c.allow_tf32 = true;
  c.shapes["input"] = input->dims();
  auto bytes = build_plan_from_onnx(dir_path + "/model.onnx", c);
  ASSERT_TRUE(bytes.ok()) << bytes.status().to_string();
  plan::PlanData p = testing::read_back(*bytes);
  size_t convs = 0;
  for (const ir::Node& s : p.steps)
    if (s.op_type == "Conv") convs += builder::step_allows_tf32(s) ? 1 : 0;
  EXPECT_EQ(convs, 2u);
  RuntimeOptions ro;
  ro.device = DeviceType::kCuda;
  auto rt = Runtime::create(ro);
  ASSERT_TRUE(rt.ok());
  auto engine = (*rt)->load_engine_bytes(std::move(bytes).value());
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  auto ctx = (*engine)->create_execution_context();
  ASSERT_TRUE(ctx.ok());
  const std::vector<TensorDesc> io = (*engine)->io_tensors();
  ASSERT_EQ(io.size(), 2u);
  auto xb = DeviceBuffer::allocate(DeviceType::kCuda, input->nbytes());
  auto yb = DeviceBuffer::allocate(DeviceType::kCuda, output->nbytes());
  ASSERT_TRUE(xb.ok() && yb.ok());
  ASSERT_TRUE(xb->copy_from_host(input->data(), input->nbytes()).ok());
  ASSERT_TRUE((*ctx)->set_tensor_address(io[0].name, xb->data(), input->nbytes()).ok());
  ASSERT_TRUE((*ctx)->set_tensor_address(io[1].name, yb->data(), output->nbytes()).ok());
  Status st = (*ctx)->execute();
  ASSERT_TRUE(st.ok()) << st.to_string();
  std::vector<float> got(static_cast<size_t>(output->numel()));
  ASSERT_TRUE(yb->copy_to_host(got.data(), output->nbytes()).ok());
  const float* w = static_cast<const float*>(output->data());
  expect_close(got, std::vector<float>(w, w + output->numel()), 1e-2, 1e-2, "LeNet with TF32");
}

}  // namespace
}  // namespace streamrt

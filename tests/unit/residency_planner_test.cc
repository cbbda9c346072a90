// The residency planner on synthetic step lists: budget respected, clamping, and streamed weights
// placed so that copies overlap compute.
#include <gtest/gtest.h>

#include "runtime/residency_planner.h"
#include "plan/plan.h"

namespace streamrt {
namespace {

// `n` steps each reading one weight of `bytes`, computing `seconds` (max shapes) and
// `small_seconds` (one token).
ResidencyInput chain(int n, uint64_t bytes, double seconds, double small_seconds) {
  ResidencyInput in;
  in.device.stream_bandwidth = 1e9;  // 1 byte per ns
  in.device.copy_latency_s = 0;
  in.slots = 3;
  for (int i = 0; i < n; ++i) {
    in.step_seconds.push_back(seconds);
    in.step_seconds_small.push_back(small_seconds);
    in.step_weights.push_back({i});
    in.weight_bytes.push_back(bytes);
  }
  return in;
}

TEST(ResidencyPlanner, SimulationMatchesHandComputedPipelines) {
  ResidencyInput in = chain(4, 1000, 2e-6, 2e-6);  // copy 1 us, compute 2 us
  std::vector<uint8_t> none(4, 0), all(4, 1);
  EXPECT_NEAR(simulate_run(in, all), 8e-6, 1e-12);
  // Compute-bound: only the first copy is exposed.
  EXPECT_NEAR(simulate_run(in, none), 1e-6 + 8e-6, 1e-12);
  in = chain(4, 1000, 0.5e-6, 0.5e-6);  // copy-bound: copies back to back, then the last step
  EXPECT_NEAR(simulate_run(in, none), 4e-6 + 0.5e-6, 1e-12);
}

TEST(ResidencyPlanner, BudgetIsRespectedAndClamped) {
  ResidencyInput in = chain(10, 1000, 1e-6, 1e-7);
  for (uint64_t budget : {0ull, 999ull, 1000ull, 4500ull, 9999ull}) {
    ResidencyPlan p = plan_residency(in, budget);
    EXPECT_LE(p.resident_bytes, budget);
    EXPECT_EQ(p.resident_bytes, budget / 1000 * 1000);  // equal weights: as many as fit
    EXPECT_EQ(p.resident_bytes + p.streamed_bytes, 10000u);
    EXPECT_EQ(p.slot_bytes, p.streamed_bytes ? stream_align(1000) : 0u);
  }
  ResidencyPlan full = plan_residency(in, 1u << 30);
  EXPECT_EQ(full.resident_bytes, 10000u);
  EXPECT_EQ(full.streamed_bytes, 0u);
  EXPECT_EQ(full.slot_bytes, 0u);
}

TEST(ResidencyPlanner, CopyBoundRunsInterleaveStreamedWeights) {
  // One-token decode: compute is short next to copies, so the run is copy-bound. Keeping the first
  // 80 % resident would leave the copy stream idle while they compute (only 3 slots may be filled
  // ahead); spreading the streamed 20 % lets copies run back to back behind resident compute.
  ResidencyInput in = chain(100, 100000, 400e-6, 15e-6);
  ResidencyPlan p = plan_residency(in, 80 * 100000);
  std::vector<uint8_t> first_80(100, 0);
  for (int i = 0; i < 80; ++i) first_80[i] = 1;
  const double streamed_copy = 20 * 100e-6;
  EXPECT_LT(simulate_run(in, p.resident, true), 1.1 * streamed_copy);
  EXPECT_GT(simulate_run(in, first_80, true), 1.3 * streamed_copy);
  int switches = 0;
  for (int i = 1; i < 100; ++i) switches += p.resident[i] != p.resident[i - 1];
  EXPECT_GT(switches, 20);
}

TEST(ResidencyPlanner, ComputeBoundRunsHideCopiesBehindResidentCompute) {
  // Prefill: each step computes 4x longer than its copy; with a third resident, copies hide.
  ResidencyInput in = chain(30, 100000, 400e-6, 1e-6);
  ResidencyPlan p = plan_residency(in, 10 * 100000);
  EXPECT_LT(simulate_run(in, p.resident), 30 * 400e-6 * 1.02);
}

// A backend that can split a weight gets all of its budget used: what whole weights leave (rounded
// down to the alignment) stays resident as the prefix of one streamed weight, and only the rest of
// that weight is copied.
TEST(ResidencyPlanner, SplitKeepsWhatWholeWeightsLeaveAsAResidentPrefix) {
  ResidencyInput in = chain(10, 4096, 1e-6, 1e-7);
  in.split = true;
  ResidencyPlan p = plan_residency(in, 2 * 4096 + 1808);
  ASSERT_EQ(p.resident_prefix.size(), 10u);
  int split = -1;
  for (int w = 0; w < 10; ++w)
    if (p.resident_prefix[w]) {
      EXPECT_EQ(split, -1) << "one weight at most";
      split = w;
    }
  ASSERT_GE(split, 0);
  EXPECT_EQ(p.resident[split], 0);  // it still streams, from its prefix on
  EXPECT_EQ(p.resident_prefix[split], 1792u);
  EXPECT_EQ(p.resident_bytes, 2 * 4096u + 1792u);
  EXPECT_EQ(p.streamed_bytes, 10 * 4096u - p.resident_bytes);
  EXPECT_EQ(p.slot_bytes, 4096u);  // the slot still holds the whole weight
  // The copy-bound run is shorter by the prefix's copy.
  EXPECT_NEAR(simulate_run(in, p.resident, true) - simulate_plan(in, p, true), 1792e-9, 1e-12);
  // Nothing to split: no budget, a budget of whole weights, the full budget.
  for (uint64_t budget : {0ull, 255ull, 3 * 4096ull, 10 * 4096ull}) {
    ResidencyPlan q = plan_residency(in, budget);
    for (uint64_t b : q.resident_prefix) EXPECT_EQ(b, 0u) << budget;
    EXPECT_EQ(q.resident_bytes, budget / 4096 * 4096) << budget;
  }
  // A backend that cannot split (the CPU) keeps whole weights only.
  in.split = false;
  ResidencyPlan whole = plan_residency(in, 2 * 4096 + 1808);
  for (uint64_t b : whole.resident_prefix) EXPECT_EQ(b, 0u);
  EXPECT_EQ(whole.resident_bytes, 2 * 4096u);
}

// A gather table read in place (zero-copy) never streams: it costs no copy and no slot below the
// full budget, the streamed weights are planned as if it were not there, and it takes what budget
// they leave, largest first.
TEST(ResidencyPlanner, ZeroCopyWeightsNeverStreamAndTakeTheLeftoverBudget) {
  ResidencyInput in = chain(6, 1000, 1e-6, 1e-7);
  in.step_weights[0].push_back(6);  // step 0 gathers from a 5000-byte table (weight 6)
  in.weight_bytes.push_back(5000);
  in.zero_copy.assign(7, 0);
  in.zero_copy[6] = 1;
  for (uint64_t budget : {0ull, 2000ull, 5999ull}) {
    ResidencyPlan p = plan_residency(in, budget);
    EXPECT_EQ(p.resident[6], 0) << budget;
    EXPECT_EQ(p.read_in_place[6], 1) << budget;
    EXPECT_EQ(p.read_in_place[0], 0) << budget;  // a copied weight is never read in place
    EXPECT_EQ(p.zero_copy_bytes, 5000u) << budget;
    EXPECT_EQ(p.resident_bytes, budget / 1000 * 1000) << budget;  // the budget goes to the copied weights
    EXPECT_EQ(p.resident_bytes + p.streamed_bytes, 6000u) << budget;
    EXPECT_EQ(p.slot_bytes, p.streamed_bytes ? stream_align(1000) : 0u) << budget;  // the table never takes a slot
  }
  ResidencyPlan p = plan_residency(in, 6000 + 4999);  // every copied weight resident, the table does not fit
  EXPECT_EQ(p.resident_bytes, 6000u);
  EXPECT_EQ(p.zero_copy_bytes, 5000u);
  EXPECT_EQ(p.streamed_bytes, 0u);
  p = plan_residency(in, 11000);  // all of it fits
  EXPECT_EQ(p.resident[6], 1);
  EXPECT_EQ(p.read_in_place[6], 0);
  EXPECT_EQ(p.resident_bytes, 11000u);
  EXPECT_EQ(p.zero_copy_bytes, 0u);
  // Split: a copied weight takes what is left, never the table read in place.
  in.split = true;
  p = plan_residency(in, 5999);
  EXPECT_EQ(p.read_in_place[6], 1);
  EXPECT_EQ(p.resident_prefix[6], 0u);
  uint64_t prefixes = 0;
  for (uint64_t b : p.resident_prefix) prefixes += b;
  EXPECT_EQ(prefixes, 768u);  // 5999 - 5 x 1024 (whole weights, aligned) = 879, aligned down
  in.split = false;
  // Without the flag the same table is an ordinary streamed weight.
  in.zero_copy.clear();
  p = plan_residency(in, 0);
  EXPECT_EQ(p.streamed_bytes, 11000u);
  EXPECT_EQ(p.slot_bytes, stream_align(1000) + stream_align(5000));
}

// A plan of `n` MatMuls x[1,64] @ W_i[64,64] (float32, each weight streamable) for residency_input.
plan::PlanData matmul_plan(int n) {
  plan::PlanData p;
  auto value = [&](const std::string& name, plan::ValueEntry::Kind kind, Dims dims, int32_t weight = -1) {
    plan::ValueEntry v;
    v.name = name;
    v.dtype = DataType::kFloat32;
    v.dims = std::move(dims);
    v.kind = kind;
    v.weight_index = weight;
    p.values.push_back(v);
    return static_cast<int32_t>(p.values.size() - 1);
  };
  int32_t x = value("x", plan::ValueEntry::Kind::kInput, {1, 64});
  for (int i = 0; i < n; ++i) {
    p.weights.push_back({"w" + std::to_string(i), DataType::kFloat32, {64, 64}, 0, 64 * 64 * 4, true});
    int32_t w = value("w" + std::to_string(i), plan::ValueEntry::Kind::kWeight, {64, 64}, i);
    int32_t y = value("y" + std::to_string(i), plan::ValueEntry::Kind::kActivation, {1, 64});
    ir::Node mm;
    mm.op_type = "MatMul";
    mm.inputs = {x, w};
    mm.outputs = {y};
    p.steps.push_back(mm);
    x = y;
  }
  return p;
}

TEST(ResidencyPlanner, MeasuredStepTimesReplaceTheEstimates) {
  plan::PlanData p = matmul_plan(3);
  DeviceProfile device;
  ResidencyInput est = residency_input(p, device);
  ASSERT_EQ(est.step_seconds.size(), 3u);
  EXPECT_DOUBLE_EQ(est.step_seconds[0], estimate_step_seconds(p, 0, device));
  EXPECT_DOUBLE_EQ(est.step_seconds_small[0], estimate_step_seconds(p, 0, device, true));
  EXPECT_EQ(est.step_weights[1], std::vector<int32_t>{1});
  // Measured at build: they win at the max shapes; a step the builder did not time (0) keeps its
  // estimate; one-token times stay estimates.
  p.step_ms = {2.0f, 0.f, 0.5f};
  ResidencyInput in = residency_input(p, device);
  EXPECT_DOUBLE_EQ(in.step_seconds[0], 2e-3);
  EXPECT_DOUBLE_EQ(in.step_seconds[1], est.step_seconds[1]);
  EXPECT_DOUBLE_EQ(in.step_seconds[2], 0.5e-3);
  EXPECT_EQ(in.step_seconds_small, est.step_seconds_small);
  // Times of another plan's length are ignored (a plan failing verification never gets here).
  p.step_ms = {1.f};
  EXPECT_DOUBLE_EQ(residency_input(p, device).step_seconds[0], est.step_seconds[0]);
  // A measured run at the min shapes scales the one-token estimates to its total.
  double small_total = 0;
  for (double t : est.step_seconds_small) small_total += t;
  p.min_run_ms = static_cast<float>(3e3 * small_total);
  ResidencyInput scaled = residency_input(p, device);
  for (size_t s = 0; s < 3; ++s) EXPECT_NEAR(scaled.step_seconds_small[s], 3 * est.step_seconds_small[s], 1e-12) << s;
  EXPECT_DOUBLE_EQ(scaled.step_seconds[0], est.step_seconds[0]);  // the max shapes keep theirs
}

// A copy-bound one-token run whose steps take 3x their estimates: planned on the estimates, the
// streamed weights sit late in the run and the copy stream idles while compute catches up with
// them (only 3 slots fill ahead); scaled to the measured run, the plan keeps the copy stream busy.
TEST(ResidencyPlanner, AMeasuredMinShapeRunGivesAFasterOneTokenPlan) {
  plan::PlanData p = matmul_plan(40);
  DeviceProfile device;
  device.copy_latency_s = 0;
  plan::PlanData measured = p;
  double small_total = 0;
  for (size_t s = 0; s < p.steps.size(); ++s) small_total += estimate_step_seconds(p, s, device, true);
  measured.min_run_ms = static_cast<float>(3e3 * small_total);
  // A weight copies in 2/9 of the run's measured compute (2/3 of its estimate): 4 streamed weights
  // take twice as long as the whole run computes, and 3 slots hold less than its compute time.
  device.stream_bandwidth = 16384.0 / (2.0 / 3.0 * small_total);
  const ResidencyInput truth = residency_input(measured, device), estimated = residency_input(p, device);
  const uint64_t budget = 36 * 16384;
  const double with_measured = simulate_plan(truth, plan_residency(truth, budget), true);
  const double with_estimates = simulate_plan(truth, plan_residency(estimated, budget), true);
  EXPECT_LT(with_measured, with_estimates * 0.95);
}

// With a long weight-less step measured in the middle of a copy-bound chain, the measured times let
// the planner hide more of the copies than the (too small) estimates do (12.2 -> 11.6 ms,
// 10.2 -> 9.6 ms, 10.8 -> 8.2 ms at the three budgets).
TEST(ResidencyPlanner, MeasuredTimesGiveAFasterPlanOnTheMeasuredRun) {
  plan::PlanData p = matmul_plan(12);
  DeviceProfile device;
  device.stream_bandwidth = 16384.0 / 1e-3;  // one 16 KiB weight per ms
  device.copy_latency_s = 0;
  p.step_ms.assign(12, 0.2f);
  p.step_ms[6] = 6.f;  // an attention-like step, far slower than its FLOPs suggest
  plan::PlanData unmeasured = p;
  unmeasured.step_ms.clear();
  const ResidencyInput measured = residency_input(p, device), estimated = residency_input(unmeasured, device);
  for (uint64_t budget : {4u * 16384u, 6u * 16384u, 8u * 16384u}) {
    const double with_measured = simulate_run(measured, plan_residency(measured, budget).resident);
    const double with_estimates = simulate_run(measured, plan_residency(estimated, budget).resident);
    EXPECT_LT(with_measured, with_estimates) << "budget " << budget;
  }
}

}  // namespace
}  // namespace streamrt

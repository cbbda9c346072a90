// streamrt_residency_replay: the residency planner replayed on per-step times measured on a GPU
// (the JSON lines `streamrt run --step-times` writes; see docs/weight-streaming.md). For each budget it
// plans from the planner's estimates (E, what an engine without measured times does), from the
// measured times (M), from measured prefill and estimated one-token times (H) and from H with the
// one-token times scaled to a graph-replayed total (C, what PlanData::min_run_ms does), and
// simulates each plan on the measured times, so a planner change can be judged on this machine,
// without the GPU:
//   streamrt_residency_replay steps.jsonl [--budgets 0,10,...,100] [--slots 3] [--bandwidth B]
//       [--token-ms T] [--plan-token-ms T] [--show PCT] [--no-split]
// The largest all-resident context is taken as the prefill shapes, the smallest as the one-token
// shapes. Output: one table row per budget: the bounds (ms) and each plan's simulated time / bound.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "runtime/residency_planner.h"

using namespace streamrt;

namespace {

struct Context {
  double budget = 0, bandwidth = 0;
  uint64_t streamed = 0;
  std::vector<nlohmann::json> steps;
  double total_ms() const {
    double t = 0;
    for (const auto& s : steps) t += s.value("ms", 0.0);
    return t;
  }
};

std::vector<Context> read_contexts(const std::string& path) {
  std::ifstream in(path);
  std::vector<Context> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    if (j.contains("engine")) {
      out.push_back({});
      out.back().budget = j.value("budget", 0.0);
      out.back().bandwidth = j.value("bandwidth", 0.0);
      out.back().streamed = j.value("streamed_bytes", uint64_t{0});
    } else if (!out.empty()) {
      out.back().steps.push_back(std::move(j));
    }
  }
  return out;
}

// The planner's input for the engine the contexts ran: weights and per-step times (`measured`:
// from the contexts, else the estimates recorded next to them).
ResidencyInput make_input(const Context& large, const Context& small, bool measured, bool measured_small, int slots,
                          double bandwidth, bool split) {
  ResidencyInput in;
  in.slots = slots;
  in.split = split;
  in.device.stream_bandwidth = bandwidth;
  in.device.copy_latency_s = 8e-6;
  const size_t n = large.steps.size();
  in.step_seconds.resize(n);
  in.step_seconds_small.resize(n);
  in.step_weights.resize(n);
  for (size_t s = 0; s < n; ++s) {
    const auto& a = large.steps[s];
    const auto& b = s < small.steps.size() ? small.steps[s] : a;
    const bool device = a.value("device", 1) == 1;
    in.step_seconds[s] = 1e-3 * (measured ? a.value("ms", 0.0) : (device ? a.value("est_ms", 0.0) : 0.0));
    in.step_seconds_small[s] = 1e-3 * (measured_small ? b.value("ms", 0.0) : (device ? b.value("est_small_ms", 0.0) : 0.0));
    for (const auto& w : a.value("weights", nlohmann::json::array())) {
      const int32_t id = w[0].get<int32_t>();
      if (in.weight_bytes.size() <= static_cast<size_t>(id)) in.weight_bytes.resize(id + 1, 0);
      in.weight_bytes[id] = w[1].get<uint64_t>();
      in.step_weights[s].push_back(id);
    }
  }
  return in;
}

// The streamed steps of `plan` in run order: bytes, and the compute (ms) from the step to the end
// of the run at both shapes — what is left after the last copy decides a copy-bound run's tail.
void show_plan(const ResidencyInput& in, const ResidencyPlan& plan) {
  const size_t n = in.step_seconds.size();
  std::vector<double> after(n + 1, 0), after_small(n + 1, 0);
  for (size_t s = n; s-- > 0;) {
    after[s] = after[s + 1] + in.step_seconds[s];
    after_small[s] = after_small[s + 1] + in.step_seconds_small[s];
  }
  std::printf("\nstreamed steps: step | MB | prefill ms from here | token ms from here\n");
  for (size_t s = 0; s < n; ++s) {
    uint64_t bytes = 0;
    for (int32_t w : in.step_weights[s])
      if (!plan.resident[w]) bytes += in.weight_bytes[w] - plan.resident_prefix[w];
    if (bytes) std::printf("%zu | %.1f | %.3f | %.3f\n", s, bytes / 1e6, 1e3 * after[s], 1e3 * after_small[s]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"the residency planner replayed on measured per-step times"};
  std::string path;
  std::vector<int> budgets{0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  int slots = 3;
  double bandwidth = 0;
  int show = -1;
  double token_ms = 0, plan_token_ms = 0;
  bool no_split = false;
  app.add_option("steps", path, "JSON lines written by streamrt run --step-times FILE (or STREAMRT_STEP_TIMES=FILE)")->required()->check(CLI::ExistingFile);
  app.add_option("--budgets", budgets, "budgets in percent")->delimiter(',')->check(CLI::Range(0, 100));
  app.add_option("--slots", slots, "ring slots")->check(CLI::Range(1, 64));
  app.add_option("--bandwidth", bandwidth, "host-to-device bytes/s (default: the one recorded)");
  app.add_option("--show", show, "also list the streamed steps of the plan C (H without --token-ms) at this budget %")
      ->check(CLI::Range(0, 100));
  app.add_option("--token-ms", token_ms,
                 "one-token run time replayed as a CUDA graph (ms): the one-token times are scaled to sum to it")
      ->check(CLI::PositiveNumber);
  app.add_option("--plan-token-ms", plan_token_ms, "plan C with the one-token times scaled to this instead")
      ->check(CLI::PositiveNumber);
  app.add_flag("--no-split", no_split, "plan whole weights only (as the CPU backend does)");
  CLI11_PARSE(app, argc, argv);
  std::vector<Context> all = read_contexts(path);
  std::vector<const Context*> resident;
  for (const Context& c : all)
    if (c.streamed == 0 && !c.steps.empty() && c.total_ms() > 0) resident.push_back(&c);
  if (resident.empty()) return std::fprintf(stderr, "error: %s has no all-resident context with times\n", path.c_str()), 1;
  auto by_time = [](const Context* a, const Context* b) { return a->total_ms() < b->total_ms(); };
  const Context& large = **std::max_element(resident.begin(), resident.end(), by_time);
  const Context& small = **std::min_element(resident.begin(), resident.end(), by_time);
  if (bandwidth <= 0) bandwidth = large.bandwidth;
  // Plans from: the estimates alone (E), measured times at both shapes (M), measured prefill times
  // with estimated one-token times (H). Judged on measured prefill times and, for one token, on the
  // estimates: eager per-step times of one token are mostly launch gaps, which a CUDA graph replay
  // (as deployed) does not have, and the estimates match replayed totals closely.
  const ResidencyInput est = make_input(large, small, false, false, slots, bandwidth, !no_split);
  const ResidencyInput meas = make_input(large, small, true, true, slots, bandwidth, !no_split);
  const ResidencyInput hybrid = make_input(large, small, true, false, slots, bandwidth, !no_split);
  auto scaled = [&](double ms) {  // the one-token times scaled to sum to `ms` (as min_run_ms does)
    ResidencyInput in = hybrid;
    double sum = 0;
    for (double t : in.step_seconds_small) sum += t;
    if (ms > 0 && sum > 0)
      for (double& t : in.step_seconds_small) t *= 1e-3 * ms / sum;
    return in;
  };
  const ResidencyInput truth = scaled(token_ms), calibrated = scaled(plan_token_ms > 0 ? plan_token_ms : token_ms);
  uint64_t total = 0;
  for (uint64_t b : meas.weight_bytes) total += b;
  std::vector<uint8_t> all_resident(meas.weight_bytes.size(), 1);
  const double resident_ms = 1e3 * simulate_run(truth, all_resident);
  const double resident_small_ms = 1e3 * simulate_run(truth, all_resident, true);
  std::printf("prefill: %zu steps, %.2f ms measured all-resident (estimates: %.2f ms); one token: %.2f ms estimated "
              "(%.2f ms measured eagerly); %.2f GB streamable at %.1f GB/s, %d slots\n",
              large.steps.size(), resident_ms, 1e3 * simulate_run(est, all_resident), resident_small_ms,
              1e3 * simulate_run(meas, all_resident, true), total / 1e9, bandwidth / 1e9, slots);
  std::printf("simulated ms / bound, plans from E = estimates, M = measured, H = measured prefill + estimated token, C = H with the one-token times scaled to --plan-token-ms (default --token-ms)\n");
  std::printf("| budget %% | prefill bound ms | E | M | H | C | token bound ms | E | M | H | C |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int pct : budgets) {
    const uint64_t budget = static_cast<uint64_t>(static_cast<double>(total) * pct / 100.0);
    const double streamed_ms = 1e3 * static_cast<double>(total - std::min(total, budget)) / bandwidth;
    const double bound = std::max(resident_ms, streamed_ms), bound_small = std::max(resident_small_ms, streamed_ms);
    std::printf("| %d | %.2f", pct, bound);
    const ResidencyPlan plans[] = {plan_residency(est, budget), plan_residency(meas, budget), plan_residency(hybrid, budget),
                                   plan_residency(calibrated, budget)};
    for (const ResidencyPlan& p : plans) std::printf(" | %.3f", 1e3 * simulate_plan(truth, p) / bound);
    std::printf(" | %.2f", bound_small);
    for (const ResidencyPlan& p : plans) std::printf(" | %.3f", 1e3 * simulate_plan(truth, p, true) / bound_small);
    std::printf(" |\n");
  }
  if (show >= 0) show_plan(truth, plan_residency(calibrated, static_cast<uint64_t>(static_cast<double>(total) * show / 100.0)));
  return 0;
}

#include "runtime/residency_planner.h"

#include <algorithm>
#include <cmath>
#include <queue>

#include "ir/shape_inference.h"
#include "ops/op.h"

namespace streamrt {
namespace {

using plan::ValueEntry;

const Dims& planned_dims(const ValueEntry& v, bool smallest) {
  return smallest || v.max_dims.empty() ? v.dims : v.max_dims;  // dims: -1 counts as 1
}

using ops::estimate_numel;

bool is_half(DataType t) { return t == DataType::kFloat16 || t == DataType::kBFloat16; }

// Per-step streamed bytes with the given resident set (less resident prefixes, when given);
// `aligned` packs the whole weights as a slot does.
uint64_t step_stream_bytes(const ResidencyInput& in, size_t s, const std::vector<uint8_t>& resident,
                           bool aligned = false, const std::vector<uint64_t>* prefix = nullptr) {
  uint64_t b = 0;
  for (int32_t w : in.step_weights[s]) {
    if (resident[w]) continue;
    b += aligned ? stream_align(in.weight_bytes[w]) : in.weight_bytes[w];
    if (prefix && !aligned && static_cast<size_t>(w) < prefix->size()) b -= (*prefix)[w];
  }
  return b;
}

double simulate(const ResidencyInput& in, const std::vector<uint8_t>& resident, bool small,
                const std::vector<uint64_t>* prefix) {
  const std::vector<double>& seconds = small && !in.step_seconds_small.empty() ? in.step_seconds_small : in.step_seconds;
  const int k = std::max(1, in.slots);
  std::vector<double> slot_free(k, 0.0);
  double compute_end = 0, copy_end = 0;
  size_t streamed = 0;
  for (size_t s = 0; s < in.step_seconds.size(); ++s) {
    // A step with a streamed weight takes a slot even if a resident prefix leaves nothing to copy.
    const bool takes_slot = step_stream_bytes(in, s, resident, true) > 0;
    double start = compute_end;
    if (takes_slot) {
      const uint64_t bytes = step_stream_bytes(in, s, resident, false, prefix);
      double& slot = slot_free[streamed % k];
      double copy_start = std::max(copy_end, slot);
      copy_end = copy_start + in.device.copy_latency_s + static_cast<double>(bytes) / in.device.stream_bandwidth;
      start = std::max(start, copy_end);
      compute_end = start + seconds[s];
      slot = compute_end;
      ++streamed;
    } else {
      compute_end = start + seconds[s];
    }
  }
  return compute_end;
}

}  // namespace

double estimate_step_seconds(const plan::PlanData& plan, size_t index, const DeviceProfile& device,
                             bool smallest, const std::vector<Dims>* dims) {
  auto planned = [&](int32_t v) -> const Dims& {
    return dims && static_cast<size_t>(v) < dims->size() ? (*dims)[v] : planned_dims(plan.values[v], smallest);
  };
  const ir::Node& step = plan.steps[index];
  double bytes = 0, flops = 0;
  bool half = false;
  for (int32_t v : step.inputs)
    if (v >= 0) bytes += estimate_numel(planned(v)) * dtype_size(plan.values[v].dtype);
  for (int32_t v : step.outputs)
    if (v >= 0) {
      const ValueEntry& e = plan.values[v];
      bytes += estimate_numel(planned(v)) * dtype_size(e.dtype);
      half = half || is_half(e.dtype);
    }
  const Dims* out = step.outputs.empty() || step.outputs[0] < 0 ? nullptr : &planned(step.outputs[0]);
  const ops::OpSchema* schema = ops::schema_of(step);
  if (out && schema && schema->flops) {  // the op's own rule (MatMul, Gemm, Conv, Attention, ...)
    std::vector<const Dims*> in(step.inputs.size(), nullptr);
    for (size_t k = 0; k < in.size(); ++k)
      if (step.inputs[k] >= 0) in[k] = &planned(step.inputs[k]);
    flops = schema->flops(step, in, *out);
  }
  double t_flops = flops / (half ? device.flops_half : device.flops_fp32);
  double t_bytes = bytes / device.memory_bandwidth;
  return device.step_overhead_s + std::max(t_flops, t_bytes);
}

namespace {

// Every value's dims at the profile's opt shapes, for a decode build (an input stored as a KV
// cache with capacity); empty otherwise, or when the shapes cannot be inferred there.
std::vector<Dims> decode_dims(const plan::PlanData& plan) {
  bool decode = false;
  for (const plan::IoTensor& io : plan.inputs) decode |= io.seq_capacity > 0;
  if (!decode || plan.weights_stripped) return {};
  ir::InferOptions opts;
  for (const plan::IoTensor& io : plan.inputs) opts.input_dims[io.value] = io.opt.empty() ? io.dims : io.opt;
  auto r = ir::infer_shapes_readonly(plan::step_graph(plan), opts);
  if (!r.ok()) return {};
  std::vector<Dims> dims(plan.values.size());
  for (size_t v = 0; v < dims.size(); ++v) dims[v] = r->infos[v].has_shape ? r->infos[v].dims : plan.values[v].dims;
  return dims;
}

}  // namespace

ResidencyInput residency_input(const plan::PlanData& plan, const DeviceProfile& device,
                               const std::vector<uint8_t>& device_step) {
  ResidencyInput in;
  const std::vector<Dims> decode = decode_dims(plan);
  in.device = device;
  const size_t ns = plan.steps.size();
  in.step_seconds.resize(ns);
  in.step_seconds_small.resize(ns);
  in.step_weights.resize(ns);
  for (const auto& w : plan.weights) in.weight_bytes.push_back(w.size);
  // Times measured at build (plan.step_ms) win over estimates at the max shapes; steps not timed
  // (host steps) keep theirs. The smallest shapes are estimated per step, then scaled (below).
  const bool measured = plan.step_ms.size() == ns;
  for (size_t s = 0; s < ns; ++s) {
    in.step_seconds[s] = measured && plan.step_ms[s] > 0 ? 1e-3 * plan.step_ms[s] : estimate_step_seconds(plan, s, device);
    in.step_seconds_small[s] = estimate_step_seconds(plan, s, device, true, decode.empty() ? nullptr : &decode);
    if (!device_step.empty() && !device_step[s]) continue;
    for (int32_t v : plan.steps[s].inputs) {
      if (v < 0 || plan.values[v].kind != ValueEntry::Kind::kWeight) continue;
      int32_t w = plan.values[v].weight_index;
      auto& list = in.step_weights[s];
      if (plan.weights[w].streamable && std::find(list.begin(), list.end(), w) == list.end()) list.push_back(w);
    }
  }
  // A measured one-token run (replayed as a graph) scales the one-token estimates to its total:
  // they are low by about a third on an H100, mostly per-kernel time the estimates do not see, and
  // a copy-bound run's plan depends on when compute reaches each streamed step.
  double estimated_small = 0;
  for (double t : in.step_seconds_small) estimated_small += t;
  if (plan.min_run_ms > 0 && estimated_small > 0)
    for (double& t : in.step_seconds_small) t *= 1e-3 * plan.min_run_ms / estimated_small;
  return in;
}

std::vector<uint8_t> gather_table_weights(const plan::PlanData& plan, const std::vector<uint8_t>& device_step) {
  std::vector<uint8_t> table(plan.weights.size(), 0), other(plan.weights.size(), 0);
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    if (!device_step.empty() && !device_step[s]) continue;
    const ir::Node& step = plan.steps[s];
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      const int32_t v = step.inputs[k];
      if (v < 0 || plan.values[v].kind != ValueEntry::Kind::kWeight) continue;
      const int32_t w = plan.values[v].weight_index;
      const ops::OpSchema* schema = ops::schema_of(step);
      if (schema && ops::lists_input(schema->table_inputs, k)) table[w] = 1;
      else other[w] = 1;
    }
  }
  for (size_t w = 0; w < table.size(); ++w) table[w] = table[w] && !other[w] && plan.weights[w].streamable;
  return table;
}

double simulate_run(const ResidencyInput& in, const std::vector<uint8_t>& resident, bool small) {
  return simulate(in, resident, small, nullptr);
}

double simulate_plan(const ResidencyInput& in, const ResidencyPlan& plan, bool small) {
  return simulate(in, plan.resident, small, plan.resident_prefix.empty() ? nullptr : &plan.resident_prefix);
}

namespace {

void first_uses(const ResidencyInput& in, std::vector<uint8_t>& candidate, std::vector<size_t>& first_use) {
  for (size_t s = 0; s < in.step_weights.size(); ++s)
    for (int32_t w : in.step_weights[s]) {
      candidate[w] = 1;
      first_use[w] = std::min(first_use[w], s);
    }
}

std::vector<uint8_t> greedy_resident(const ResidencyInput& in, uint64_t budget) {
  const size_t nw = in.weight_bytes.size();
  std::vector<uint8_t> candidate(nw, 0);
  std::vector<size_t> first_use(nw, SIZE_MAX);
  first_uses(in, candidate, first_use);
  std::vector<uint8_t> resident(nw, 0);
  uint64_t left = budget;
  double current = simulate_run(in, resident);
  // Lazy greedy: gains only shrink as more weights become resident, so a stale gain is an
  // upper bound; re-evaluate the top entry until it is fresh.
  using Entry = std::pair<double, int32_t>;  // gain per byte, weight
  std::priority_queue<Entry> heap;
  auto gain_of = [&](int32_t w) {
    resident[w] = 1;
    double t = simulate_run(in, resident);
    resident[w] = 0;
    return (current - t) / static_cast<double>(in.weight_bytes[w]);
  };
  for (size_t w = 0; w < nw; ++w)
    if (candidate[w] && in.weight_bytes[w] <= left) heap.push({gain_of(static_cast<int32_t>(w)), static_cast<int32_t>(w)});
  while (!heap.empty()) {
    auto [gain, w] = heap.top();
    heap.pop();
    if (in.weight_bytes[w] > left) continue;
    double fresh = gain_of(w);
    if (!heap.empty() && fresh < heap.top().first - 1e-18) {
      heap.push({fresh, w});
      continue;
    }
    if (fresh <= 0) break;
    resident[w] = 1;
    left -= in.weight_bytes[w];
    current = simulate_run(in, resident);
  }
  // What is left of the budget: earliest-used weights first.
  std::vector<int32_t> order;
  for (size_t w = 0; w < nw; ++w)
    if (candidate[w] && !resident[w]) order.push_back(static_cast<int32_t>(w));
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return first_use[a] < first_use[b]; });
  for (int32_t w : order)
    if (in.weight_bytes[w] <= left) {
      resident[w] = 1;
      left -= in.weight_bytes[w];
    }

  return resident;
}

// Streamed bytes spread evenly along the run: walking the weights in order of first use, a weight
// streams when the bytes streamed so far fall behind the streamed fraction of the bytes seen.
std::vector<uint8_t> interleaved_resident(const ResidencyInput& in, uint64_t budget) {
  const size_t nw = in.weight_bytes.size();
  std::vector<uint8_t> candidate(nw, 0), resident(nw, 0);
  std::vector<size_t> first_use(nw, SIZE_MAX);
  first_uses(in, candidate, first_use);
  std::vector<int32_t> order;
  uint64_t total = 0;
  for (size_t w = 0; w < nw; ++w)
    if (candidate[w]) {
      order.push_back(static_cast<int32_t>(w));
      total += in.weight_bytes[w];
    }
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return first_use[a] < first_use[b]; });
  if (total == 0) return resident;
  const double keep = std::min(1.0, static_cast<double>(budget) / static_cast<double>(total));
  uint64_t left = budget;
  double seen = 0, kept = 0;
  for (int32_t w : order) {
    double b = static_cast<double>(in.weight_bytes[w]);
    // Keep this one resident when that leaves the kept share closest to `keep` so far.
    bool want = std::abs(kept + b - keep * (seen + b)) <= std::abs(kept - keep * (seen + b));
    if (want && in.weight_bytes[w] <= left) {
      resident[w] = 1;
      left -= in.weight_bytes[w];
      kept += b;
    }
    seen += b;
  }
  for (int32_t w : order)  // what rounding left of the budget
    if (!resident[w] && in.weight_bytes[w] <= left) {
      resident[w] = 1;
      left -= in.weight_bytes[w];
    }
  return resident;
}

}  // namespace

namespace {

bool is_zero_copy(const ResidencyInput& in, size_t w) { return w < in.zero_copy.size() && in.zero_copy[w]; }

// The input without its zero-copy weights: they cost the simulated run nothing.
ResidencyInput without_zero_copy(const ResidencyInput& in) {
  ResidencyInput out = in;
  for (auto& list : out.step_weights)
    list.erase(std::remove_if(list.begin(), list.end(), [&](int32_t w) { return is_zero_copy(in, w); }), list.end());
  out.zero_copy.clear();
  return out;
}

// The budget whole weights leave (their device copies are aligned) as a resident prefix of the
// streamed weight whose prefix shortens the simulated runs the most; the earliest used on ties.
template <typename Score>
void split_leftover(const ResidencyInput& in, uint64_t budget, const Score& score, ResidencyPlan& out) {
  const size_t nw = in.weight_bytes.size();
  uint64_t used = 0;
  for (size_t w = 0; w < nw; ++w)
    if (out.resident[w]) used += stream_align(in.weight_bytes[w]);
  const uint64_t prefix = budget > used ? (budget - used) / kStreamAlignment * kStreamAlignment : 0;
  if (prefix == 0) return;
  std::vector<uint8_t> candidate(nw, 0);
  std::vector<size_t> first_use(nw, SIZE_MAX);
  first_uses(in, candidate, first_use);
  std::vector<int32_t> order;
  for (size_t w = 0; w < nw; ++w)
    if (candidate[w] && !out.resident[w] && !out.read_in_place[w] && in.weight_bytes[w] > prefix)
      order.push_back(static_cast<int32_t>(w));
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return first_use[a] < first_use[b]; });
  int32_t best = -1;
  double best_score = 0;
  for (int32_t w : order) {
    out.resident_prefix[w] = prefix;
    const double sc = score(out);
    out.resident_prefix[w] = 0;
    if (best < 0 || sc < best_score) best = w, best_score = sc;
  }
  if (best < 0) return;
  out.resident_prefix[best] = prefix;
  out.resident_bytes += prefix;
}

}  // namespace

ResidencyPlan plan_residency(const ResidencyInput& in_all, uint64_t budget) {
  const bool any_zero_copy = std::any_of(in_all.zero_copy.begin(), in_all.zero_copy.end(), [](uint8_t z) { return z; });
  const ResidencyInput stripped = any_zero_copy ? without_zero_copy(in_all) : ResidencyInput{};
  const ResidencyInput& in = any_zero_copy ? stripped : in_all;
  const size_t nw = in.weight_bytes.size();
  std::vector<uint8_t> all(nw, 1);
  const double base_max = std::max(simulate_run(in, all), 1e-12);
  const double base_small = std::max(simulate_run(in, all, true), 1e-12);
  auto score = [&](const std::vector<uint8_t>& r) {
    return simulate_run(in, r) / base_max + simulate_run(in, r, true) / base_small;
  };
  std::vector<uint8_t> greedy = greedy_resident(in, budget), interleaved = interleaved_resident(in, budget);
  std::vector<uint8_t> resident = score(interleaved) <= score(greedy) ? interleaved : greedy;

  ResidencyPlan out;
  out.read_in_place.assign(nw, 0);
  for (size_t w = 0; w < nw; ++w)
    if (resident[w]) out.resident_bytes += in.weight_bytes[w];
  if (any_zero_copy) {  // what the budget leaves, largest first
    std::vector<int32_t> order;
    for (size_t w = 0; w < nw; ++w)
      if (is_zero_copy(in_all, w)) order.push_back(static_cast<int32_t>(w));
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return in.weight_bytes[a] > in.weight_bytes[b]; });
    for (int32_t w : order) {
      if (out.resident_bytes + in.weight_bytes[w] <= budget) {
        resident[w] = 1;
        out.resident_bytes += in.weight_bytes[w];
      } else {
        out.read_in_place[w] = 1;
        out.zero_copy_bytes += in.weight_bytes[w];
      }
    }
  }
  out.resident = resident;
  out.resident_prefix.assign(nw, 0);
  if (in.split) {
    auto plan_score = [&](const ResidencyPlan& p) {
      return simulate_plan(in, p) / base_max + simulate_plan(in, p, true) / base_small;
    };
    split_leftover(in, budget, plan_score, out);
  }
  for (size_t s = 0; s < in.step_weights.size(); ++s) {
    out.streamed_bytes += step_stream_bytes(in, s, resident, false, &out.resident_prefix);
    out.slot_bytes = std::max(out.slot_bytes, step_stream_bytes(in, s, resident, true));
  }
  out.estimated_seconds = simulate_plan(in, out);
  return out;
}

}  // namespace streamrt

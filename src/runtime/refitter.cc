// Refitter (streamrt/refit.h): weights staged by name, checked, then applied all at once to a
// loaded engine (through DeviceBackend::refit_weights) or to a plan read from a file.
#include "streamrt/refit.h"

#include <cstring>
#include <map>
#include <unordered_map>

#include "core/guard.h"
#include "plan/plan.h"
#include "runtime/device_backend.h"
#include "runtime/engine_state.h"
#include "runtime/refit_core.h"

namespace streamrt {

struct Refitter::Impl {
  std::shared_ptr<Engine> engine;  // engine refitter
  plan::LoadedPlan loaded;         // plan refitter
  std::string plan_path;
  std::unordered_map<std::string, int32_t> index;  // weight name -> plan weight index
  std::vector<bool> shape_weight;
  std::map<int32_t, Tensor> staged;

  // The engine's state is const to everyone but its owner; a refit is the one change allowed
  // after load, made under the engine's mutex with no context alive (checked in refit()).
  EngineState* state() { return engine ? &const_cast<EngineState&>(engine->state()) : nullptr; }
  plan::PlanData& data() { return engine ? state()->plan.data : loaded.data; }
  const plan::PlanData& data() const { return const_cast<Impl*>(this)->data(); }
  std::string what() const { return engine ? "engine '" + data().name + "'" : "plan '" + plan_path + "'"; }

  void init() {
    const plan::PlanData& d = data();
    for (size_t i = 0; i < d.weights.size(); ++i) index[d.weights[i].name] = static_cast<int32_t>(i);
    shape_weight = refit::shape_weights(d);
  }
  bool present(int32_t i) const {
    const plan::PlanData& d = data();
    return static_cast<size_t>(i) < d.weight_data.size() && !d.weight_data[i].empty();
  }
  Result<int32_t> find(const std::string& name) const {
    auto it = index.find(name);
    if (it == index.end()) return not_found(what() + " has no weight '" + name + "'");
    return it->second;
  }
  // A weight the plan stores quantized (refit::quantize_source_weight): its value quantized into
  // the plan weights made from it, each staged (all or none). `not_weight` when no step reads it.
  Status stage_quantized(const std::string& name, DataType dtype, const Dims& dims, const void* values, size_t bytes,
                         Status not_weight) {
    const int64_t n = dims_numel(dims);
    if (n < 0 || bytes != static_cast<uint64_t>(n) * dtype_size(dtype) || (!values && bytes))
      return invalid_argument(what() + ": weight '" + name + "' of " + dtype_name(dtype) + " " + dims_to_string(dims) +
                              " needs " + std::to_string(n * static_cast<int64_t>(dtype_size(dtype))) + " bytes, got " +
                              std::to_string(bytes));
    SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::from_bytes(dtype, dims, values, bytes));
    auto q = refit::quantize_source_weight(data(), name, t);
    if (!q.ok()) return q.status().code() == StatusCode::kNotFound ? not_weight : q.status().with_context(what());
    for (const auto& [i, v] : *q) SRT_RETURN_IF_ERROR(check(i, v));
    for (auto& [i, v] : *q) staged[i] = std::move(v);
    return ok_status();
  }
  // Checks `t` as the new value of weight i (dtype, dims, shape weights keep their value).
  Status check(int32_t i, const Tensor& t) const {
    const plan::WeightEntry& w = data().weights[i];
    const std::string where = what() + ": weight '" + w.name + "'";
    if (t.dtype() != w.dtype || t.dims() != w.dims)
      return invalid_argument(where + " is " + dtype_name(w.dtype) + " " + dims_to_string(w.dims) + ", got " +
                              dtype_name(t.dtype()) + " " + dims_to_string(t.dims()));
    if (shape_weight[i] && present(i)) {
      const Tensor& cur = data().weight_data[i];
      if (cur.nbytes() && std::memcmp(cur.data(), t.data(), cur.nbytes()) != 0)
        return invalid_argument(where + " is read as a shape: its value is part of the engine's structure and "
                                "cannot change (rebuild the engine instead)");
    }
    return ok_status();
  }
};

Refitter::Refitter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Refitter::~Refitter() = default;

Result<std::unique_ptr<Refitter>> Refitter::create(std::shared_ptr<Engine> engine) {
  return guard("Refitter::create", [&]() -> Result<std::unique_ptr<Refitter>> {
    if (!engine) return invalid_argument("Refitter::create: no engine");
    auto impl = std::make_unique<Impl>();
    impl->engine = std::move(engine);
    impl->init();
    return std::unique_ptr<Refitter>(new Refitter(std::move(impl)));
  });
}

Result<std::unique_ptr<Refitter>> Refitter::open_plan(const std::string& plan_path) {
  const auto where = [&] { return "Refitter::open_plan '" + plan_path + "'"; };
  return guard(where, [&]() -> Result<std::unique_ptr<Refitter>> {
    auto impl = std::make_unique<Impl>();
    SRT_ASSIGN_OR_RETURN(impl->loaded, plan::read_plan(plan_path));
    impl->plan_path = plan_path;
    impl->init();
    return std::unique_ptr<Refitter>(new Refitter(std::move(impl)));
  });
}

std::vector<WeightDesc> Refitter::weights() const {
  std::vector<WeightDesc> out;
  const plan::PlanData& d = impl_->data();
  for (size_t i = 0; i < d.weights.size(); ++i) {
    const plan::WeightEntry& w = d.weights[i];
    out.push_back({w.name, w.dtype, w.dims, impl_->present(static_cast<int32_t>(i)), impl_->shape_weight[i]});
  }
  return out;
}

std::vector<std::string> Refitter::missing_weights() const {
  std::vector<std::string> out;
  const plan::PlanData& d = impl_->data();
  for (size_t i = 0; i < d.weights.size(); ++i)
    if (!impl_->present(static_cast<int32_t>(i)) && !impl_->staged.count(static_cast<int32_t>(i)))
      out.push_back(d.weights[i].name);
  return out;
}

size_t Refitter::num_staged() const { return impl_->staged.size(); }

Status Refitter::set_weights(const std::string& name, DataType dtype, const Dims& dims, const void* data,
                             size_t bytes) {
  return guard([&] { return "Refitter::set_weights '" + name + "'"; }, [&]() -> Status {
    auto found = impl_->find(name);
    if (!found.ok()) return impl_->stage_quantized(name, dtype, dims, data, bytes, found.status());
    const int32_t i = *found;
    const plan::WeightEntry& w = impl_->data().weights[i];
    if (dtype != w.dtype || dims != w.dims)
      return invalid_argument(impl_->what() + ": weight '" + name + "' is " + dtype_name(w.dtype) + " " +
                              dims_to_string(w.dims) + ", got " + dtype_name(dtype) + " " + dims_to_string(dims));
    if (bytes != w.size || (!data && bytes))
      return invalid_argument(impl_->what() + ": weight '" + name + "' needs " + std::to_string(w.size) +
                              " bytes, got " + std::to_string(bytes));
    SRT_ASSIGN_OR_RETURN(Tensor t, Tensor::from_bytes(dtype, dims, data, bytes));
    SRT_RETURN_IF_ERROR(impl_->check(i, t));
    impl_->staged[i] = std::move(t);
    return ok_status();
  });
}

Status Refitter::set_weights_from_onnx(const std::string& onnx_path) {
  return guard([&] { return "Refitter::set_weights_from_onnx '" + onnx_path + "'"; }, [&]() -> Status {
    auto weights = refit::weights_from_onnx(impl_->data(), onnx_path);
    if (!weights.ok()) return weights.status().with_context(impl_->what());
    // All or nothing: check every weight before staging any.
    for (size_t i = 0; i < weights->size(); ++i)
      SRT_RETURN_IF_ERROR(impl_->check(static_cast<int32_t>(i), (*weights)[i]));
    for (size_t i = 0; i < weights->size(); ++i) impl_->staged[static_cast<int32_t>(i)] = std::move((*weights)[i]);
    return ok_status();
  });
}

Status Refitter::refit() {
  return guard("Refitter::refit", [&]() -> Status {
    Impl& m = *impl_;
    if (!m.engine) {
      SRT_RETURN_IF_ERROR(refit::apply_weights(m.loaded.data, nullptr, m.staged, nullptr));
      m.staged.clear();
      return ok_status();
    }
    EngineState& es = *m.state();
    std::lock_guard<std::mutex> lock(es.mutex);
    if (es.live_contexts.load() != 0)
      return invalid_state(m.what() + ": refit needs that no execution context exists (" +
                           std::to_string(es.live_contexts.load()) + " alive)");
    DeviceBackend* backend = find_device_backend(es.device);
    auto hook = [&](const std::vector<int32_t>& changed) { return backend->refit_weights(es, changed); };
    SRT_RETURN_IF_ERROR(refit::apply_weights(es.plan.data, &es.graph, m.staged, hook));
    m.staged.clear();
    return ok_status();
  });
}

Status Refitter::write_plan(const std::string& path) {
  return guard([&] { return "Refitter::write_plan '" + path + "'"; }, [&]() -> Status {
    Impl& m = *impl_;
    if (m.engine) return invalid_state(m.what() + ": write_plan is for refitters opened on a plan file");
    if (!m.staged.empty())
      return invalid_state(m.what() + ": " + std::to_string(m.staged.size()) +
                           " staged weights were not applied (call refit())");
    std::vector<std::string> missing = missing_weights();
    if (!missing.empty())
      return invalid_state(m.what() + ": " + std::to_string(missing.size()) + " weights have no value (first: '" +
                           missing.front() + "'); supply them before writing");
    plan::PlanData copy = m.loaded.data;  // write_plan recomputes offsets; keep ours untouched
    copy.weights_stripped = false;
    return plan::write_plan(copy, path);
  });
}

}  // namespace streamrt

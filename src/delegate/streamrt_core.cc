// StreamRTBackend's core: records -> engines, groups and their budgets, execution, live change.
#include "delegate/streamrt_core.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <optional>

#include "core/logging.h"
#include "runtime/device_backend.h"

namespace streamrt::delegate {

// A program instance's engines; members by engine index (null until inited, after destroy).
struct EngineGroup {
  std::mutex mu;  // guards everything below but `ready`
  uint32_t count = 0;
  std::vector<EngineHandle*> members;
  BudgetLevel compile_time;
  BudgetRequest request;  // in force
  std::atomic<bool> ready{false};
};

class EngineHandle {
 public:
  EngineRecord record;
  std::shared_ptr<Engine> engine;
  std::vector<TensorDesc> io;  // inputs then outputs, as the record names them
  std::shared_ptr<EngineGroup> group;
  uint32_t index = 0;
  std::mutex exec_mu;  // one execution at a time on `context`; budget changes wait on it
  std::unique_ptr<ExecutionContext> context;
  std::vector<DeviceBuffer> staging;  // per binding, on devices whose memory is not the host's

  std::string where() const { return "engine '" + record.engine_name + "'"; }
};

namespace {

// Free memory the automatic budget leaves alone (allocator slack, library workspaces).
constexpr uint64_t kAutomaticMargin = 256ull << 20;

bool same_level(const BudgetLevel& a, const BudgetLevel& b) {
  return a.total == b.total && a.per_engine == b.per_engine;
}

// Checks the engine's bindings against the record's names, in order.
Status check_bindings(const EngineRecord& rec, const Engine& engine, std::vector<TensorDesc>* io) {
  std::vector<TensorDesc> ins, outs;
  for (TensorDesc& d : engine.io_tensors()) (d.is_input ? ins : outs).push_back(std::move(d));
  auto names = [](const std::vector<TensorDesc>& v) {
    std::string s;
    for (const auto& d : v) s += (s.empty() ? "'" : ", '") + d.name + "'";
    return "[" + s + "]";
  };
  auto same = [](const std::vector<TensorDesc>& v, const std::vector<std::string>& want) {
    return v.size() == want.size() && std::equal(v.begin(), v.end(), want.begin(), [](const TensorDesc& d, const std::string& n) {
             return d.name == n;
           });
  };
  if (!same(ins, rec.inputs) || !same(outs, rec.outputs))
    return invalid_program("engine '" + rec.engine_name + "': the record names bindings that the plan does not have "
                           "(plan inputs " + names(ins) + ", outputs " + names(outs) + ")");
  if (engine.streamable_weights_size() != rec.streamable_size)
    return invalid_program("engine '" + rec.engine_name + "': the record says " + std::to_string(rec.streamable_size) +
                           " streamable bytes, the plan has " + std::to_string(engine.streamable_weights_size()));
  *io = std::move(ins);
  io->insert(io->end(), outs.begin(), outs.end());
  return ok_status();
}

std::vector<EngineHandle*> live_members(const EngineGroup& g) {
  std::vector<EngineHandle*> out;
  for (EngineHandle* m : g.members)
    if (m) out.push_back(m);
  return out;
}

Status create_contexts(EngineGroup& g) {
  for (EngineHandle* m : live_members(g)) {
    auto ctx = m->engine->create_execution_context();
    if (!ctx.ok()) {
      for (EngineHandle* other : live_members(g)) other->context.reset();
      return ctx.status().with_context(m->where());
    }
    m->context = std::move(ctx).value();
  }
  return ok_status();
}

// Puts back budgets saved before a failed change (no context exists); failures are logged.
void restore_budgets(EngineGroup& g, const std::vector<uint64_t>& budgets) {
  std::vector<EngineHandle*> members = live_members(g);
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i]->engine->streamable_weights_size() == 0) continue;
    Status st = members[i]->engine->set_weight_streaming_budget(budgets[i]);
    if (!st.ok()) log_error(members[i]->where() + ": restoring the previous budget failed: " + st.message());
  }
  if (Status st = create_contexts(g); !st.ok()) log_error("recreating execution contexts failed: " + st.message());
}

// Binds `bytes` of host memory for binding `k`: in place on the CPU, else through a device
// buffer (copied in when `upload`).
Result<void*> device_address(EngineHandle& h, size_t k, void* host, size_t bytes, bool upload) {
  if (h.engine->device() == DeviceType::kCpu) return host;
  DeviceBuffer& buf = h.staging[k];
  if (buf.size() < bytes || !buf.data()) {
    SRT_ASSIGN_OR_RETURN(buf, DeviceBuffer::allocate(h.engine->device(), std::max<size_t>(bytes, 1)));
  }
  if (upload) SRT_RETURN_IF_ERROR(buf.copy_from_host(host, bytes));
  return buf.data();
}

// The weights section of a record that holds it apart, from the host's named data.
Result<std::optional<ExternalWeights>> weights_apart(const InitRequest& req, const EngineRecord& rec) {
  if (rec.weights_key.empty()) return std::optional<ExternalWeights>();
  const std::string where = "engine '" + rec.engine_name + "': its weights are named data '" + rec.weights_key + "'";
  if (!req.named_data) return invalid_program(where + ", and this runtime passes no named data");
  auto w = req.named_data(rec.weights_key);
  if (!w.ok()) return w.status().with_context(where);
  return std::optional<ExternalWeights>(std::move(w).value());
}

}  // namespace

StreamRtCore::StreamRtCore(CoreOptions options) : options_(std::move(options)) {}
StreamRtCore::~StreamRtCore() = default;

Result<Runtime*> StreamRtCore::runtime_for(DeviceType device, const EngineRecord& rec) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& rt = runtimes_[device];
  if (!rt) {
    RuntimeOptions ro;
    ro.device = device;
    auto created = Runtime::create(ro);
    if (!created.ok())
      return incompatible("engine '" + rec.engine_name + "' was built for " + describe_device(rec.device) +
                          ", which this machine cannot run: " + created.status().message());
    rt = std::move(created).value();
  }
  return rt.get();
}

uint64_t StreamRtCore::automatic_budget(std::span<Engine* const> engines) const {
  if (options_.automatic_budget) return options_.automatic_budget(engines);
  if (engines.empty()) return 0;
  const DeviceBackend* b = find_device_backend(engines[0]->device());
  const uint64_t free = b ? b->free_memory() : 0;
  uint64_t need = kAutomaticMargin, total = 0;
  for (const Engine* e : engines) {
    need += e->device_memory_size();  // activations + scratch at budget 0
    total += e->streamable_weights_size();
  }
  return free > need ? std::min(free - need, total) : 0;
}

Result<EngineHandle*> StreamRtCore::init(InitRequest req) {
  auto release = [&req] {
    if (auto f = std::exchange(req.release_record, nullptr)) f();
  };
  struct Guard {
    decltype(release)& r;
    ~Guard() { r(); }
  } guard{release};
  if (req.engine_count == 0 || req.engine_count > kMaxEnginesPerProgram || req.engine_index >= req.engine_count)
    return invalid_program("engine index " + std::to_string(req.engine_index) + " of " +
                           std::to_string(req.engine_count) + " engines is out of range");
  SRT_ASSIGN_OR_RETURN(RecordView view, read_engine_record(req.record));
  std::vector<uint8_t> plan(view.plan.begin(), view.plan.end());
  release();  // the engine is built from the copy
  auto h = std::make_unique<EngineHandle>();
  h->record = std::move(view.meta);
  h->index = req.engine_index;
  const DeviceType device = h->record.device.kind == plan::DeviceKind::kCuda ? DeviceType::kCuda : DeviceType::kCpu;
  SRT_ASSIGN_OR_RETURN(Runtime * rt, runtime_for(device, h->record));
  SRT_ASSIGN_OR_RETURN(std::optional<ExternalWeights> apart, weights_apart(req, h->record));
  auto engine = apart ? rt->load_engine_bytes(std::move(plan), std::move(*apart)) : rt->load_engine_bytes(std::move(plan));
  if (!engine.ok()) {
    const Status& st = engine.status();
    if (st.code() == StatusCode::kInvalidPlan) return invalid_program(h->where() + ": " + st.message());
    return st.with_context(h->where());
  }
  h->engine = std::move(engine).value();
  SRT_RETURN_IF_ERROR(check_bindings(h->record, *h->engine, &h->io));
  h->staging.resize(h->io.size());

  std::shared_ptr<EngineGroup> g;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(groups_, [](const auto& kv) { return kv.second.expired(); });
    std::weak_ptr<EngineGroup>& slot = groups_[req.group];
    g = slot.lock();
    if (!g) {
      g = std::make_shared<EngineGroup>();
      g->count = req.engine_count;
      g->members.assign(req.engine_count, nullptr);
      g->compile_time = req.compile_time;
      // Validated once, for the whole program: a malformed value fails the first engine.
      SRT_ASSIGN_OR_RETURN(g->request, resolve_budget_request(req.load_time, req.compile_time, "StreamRTBackend"));
      slot = g;
    } else if (g->count != req.engine_count || !same_level(g->compile_time, req.compile_time)) {
      return invalid_program(h->where() + ": its compile specs (engine_count, weight-streaming budget) differ from "
                             "those of the program's other engines");
    }
  }
  std::lock_guard<std::mutex> lock(g->mu);
  if (g->members[h->index])
    return invalid_program(h->where() + ": engine index " + std::to_string(h->index) + " is taken by engine '" +
                           g->members[h->index]->record.engine_name + "'");
  g->members[h->index] = h.get();
  h->group = g;
  if (std::count(g->members.begin(), g->members.end(), nullptr) == 0) {
    if (Status st = complete_group(*g); !st.ok()) {
      g->members[h->index] = nullptr;
      return st;
    }
  }
  return h.release();
}

Status StreamRtCore::complete_group(EngineGroup& g) {
  SRT_RETURN_IF_ERROR(apply(g, g.request));
  SRT_RETURN_IF_ERROR(create_contexts(g));
  g.ready = true;
  return ok_status();
}

Status StreamRtCore::apply(EngineGroup& g, const BudgetRequest& request) {
  const std::vector<EngineHandle*> members = live_members(g);
  std::vector<uint64_t> sizes;
  std::vector<Engine*> streamable;
  for (EngineHandle* m : members) {
    sizes.push_back(m->engine->streamable_weights_size());
    if (sizes.back() > 0) streamable.push_back(m->engine.get());
  }
  Status st;
  auto automatic = [&]() -> uint64_t {
    // Computed once for the group, from a state where no engine holds streamable weights.
    for (Engine* e : streamable)
      if (Status s = e->set_weight_streaming_budget(0); !s.ok() && st.ok()) st = s;
    return automatic_budget(streamable);
  };
  const std::vector<uint64_t> budgets = engine_budgets(request, sizes, automatic);
  SRT_RETURN_IF_ERROR(st);
  for (size_t i = 0; i < members.size(); ++i) {
    EngineHandle& m = *members[i];
    if (sizes[i] == 0) {
      if (request.is_explicit())
        log_warning(m.where() + " has no streamable weights (built without --weight-streaming): " + describe(request) +
                    " ignored");
      continue;
    }
    if (request.scope == BudgetRequest::Scope::kPerEngine && request.spec.kind == BudgetSpec::Kind::kBytes &&
        request.spec.bytes > sizes[i])
      log_info(m.where() + ": budget " + format_bytes(request.spec.bytes) + " clamped to its streamable size " +
               format_bytes(sizes[i]));
    st = m.engine->set_weight_streaming_budget(budgets[i]);
    if (!st.ok() && st.code() == StatusCode::kOutOfMemory && !request.is_explicit()) {
      log_warning("the automatic weight-streaming budget did not fit (" + st.message() +
                  "); streaming every streamable weight");
      for (Engine* e : streamable) SRT_RETURN_IF_ERROR(e->set_weight_streaming_budget(0));
      return ok_status();
    }
    if (!st.ok()) return st;
    log_info(m.where() + ": weight-streaming budget " + format_bytes(budgets[i]) + " of " + format_bytes(sizes[i]) +
             " streamable (" + describe(request) + ")");
  }
  return ok_status();
}

const EngineRecord& StreamRtCore::record(const EngineHandle* h) const { return h->record; }

Status StreamRtCore::execute(EngineHandle* h, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  EngineGroup& g = *h->group;
  if (!g.ready.load()) {
    std::lock_guard<std::mutex> lock(g.mu);
    return invalid_state(h->where() + ": not every engine of its program is initialized (" +
                         std::to_string(live_members(g).size()) + " of " + std::to_string(g.count) + ")");
  }
  const size_t n_in = h->record.inputs.size(), n_out = h->record.outputs.size();
  if (inputs.size() != n_in || outputs.size() != n_out)
    return invalid_argument(h->where() + " takes " + std::to_string(n_in) + " inputs and " + std::to_string(n_out) +
                            " outputs, got " + std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  std::lock_guard<std::mutex> lock(h->exec_mu);
  ExecutionContext* ctx = h->context.get();
  if (!ctx) return invalid_state(h->where() + " has no execution context (a budget change could not recreate it)");
  for (size_t i = 0; i < n_in; ++i) {
    const TensorDesc& d = h->io[i];
    const Tensor& t = inputs[i];
    if (t.dtype() != d.dtype)
      return invalid_argument(h->where() + " input '" + d.name + "' is " + dtype_name(t.dtype()) + ", expected " +
                              dtype_name(d.dtype));
    SRT_RETURN_IF_ERROR(ctx->set_input_shape(d.name, t.dims()).with_context(h->where()));
    SRT_ASSIGN_OR_RETURN(void* p, device_address(*h, i, const_cast<void*>(t.data()), t.nbytes(), true));
    SRT_RETURN_IF_ERROR(ctx->set_tensor_address(d.name, p, t.nbytes()));
  }
  for (size_t j = 0; j < n_out; ++j) {
    const TensorDesc& d = h->io[n_in + j];
    SRT_ASSIGN_OR_RETURN(Dims dims, ctx->tensor_shape(d.name));
    Tensor& o = outputs[j];
    if (o.dtype() != d.dtype || o.dims() != dims || !o.writable()) {
      SRT_ASSIGN_OR_RETURN(o, Tensor::allocate(d.dtype, dims));
    }
    SRT_ASSIGN_OR_RETURN(void* p, device_address(*h, n_in + j, o.mutable_data(), o.nbytes(), false));
    SRT_RETURN_IF_ERROR(ctx->set_tensor_address(d.name, p, o.nbytes()));
  }
  SRT_RETURN_IF_ERROR(ctx->execute().with_context(h->where()));
  for (size_t j = 0; j < n_out && h->engine->device() != DeviceType::kCpu; ++j)
    SRT_RETURN_IF_ERROR(h->staging[n_in + j].copy_to_host(outputs[j].mutable_data(), outputs[j].nbytes()));
  return ok_status();
}

void StreamRtCore::destroy(EngineHandle* h) {
  if (!h) return;
  std::shared_ptr<EngineGroup> g = h->group;
  if (g) {
    std::lock_guard<std::mutex> lock(g->mu);
    if (h->index < g->members.size() && g->members[h->index] == h) g->members[h->index] = nullptr;
  }
  delete h;  // its context first (a member declared after the engine), then the engine
}

Status StreamRtCore::set_budget(std::span<EngineHandle* const> handles, const BudgetLevel& level) {
  std::vector<std::shared_ptr<EngineGroup>> groups;
  for (EngineHandle* h : handles) {
    if (!h->group->ready.load()) return invalid_state(h->where() + ": its program is not fully initialized");
    if (std::find(groups.begin(), groups.end(), h->group) == groups.end()) groups.push_back(h->group);
  }
  // Every group's new request is valid before any group changes.
  std::vector<BudgetRequest> requests;
  for (const auto& g : groups) {
    SRT_ASSIGN_OR_RETURN(BudgetRequest r, resolve_budget_request(level, g->compile_time, "StreamRTBackend"));
    requests.push_back(r);
  }
  struct Changed {
    EngineGroup* group;
    BudgetRequest request;
    std::vector<uint64_t> budgets;
  };
  std::vector<Changed> changed;
  // Changes group `g` to `request` with its executions drained; `before` receives what it had.
  auto change = [this](EngineGroup& g, const BudgetRequest& request, Changed* before) -> Status {
    std::lock_guard<std::mutex> lock(g.mu);
    std::vector<EngineHandle*> members = live_members(g);
    std::vector<std::unique_lock<std::mutex>> drained;
    for (EngineHandle* m : members) drained.emplace_back(m->exec_mu);  // executions in flight finish
    before->group = &g;
    before->request = g.request;
    for (EngineHandle* m : members) before->budgets.push_back(m->engine->weight_streaming_budget());
    for (EngineHandle* m : members) m->context.reset();
    Status st = apply(g, request);
    if (st.ok()) st = create_contexts(g);
    if (!st.ok()) {
      restore_budgets(g, before->budgets);
      return st;
    }
    g.request = request;
    return ok_status();
  };
  for (size_t i = 0; i < groups.size(); ++i) {
    Changed before;
    Status st = change(*groups[i], requests[i], &before);
    if (!st.ok()) {
      for (auto it = changed.rbegin(); it != changed.rend(); ++it) {  // undo the groups already changed
        std::lock_guard<std::mutex> lock(it->group->mu);
        std::vector<std::unique_lock<std::mutex>> drained;
        for (EngineHandle* m : live_members(*it->group)) {
          drained.emplace_back(m->exec_mu);
          m->context.reset();
        }
        restore_budgets(*it->group, it->budgets);
        it->group->request = it->request;
      }
      return st.with_context("changing the weight-streaming budget (the previous budgets stay in force)");
    }
    changed.push_back(std::move(before));
  }
  return ok_status();
}

std::vector<EngineBudgetStatus> StreamRtCore::budgets(std::span<EngineHandle* const> handles) const {
  std::vector<EngineBudgetStatus> out;
  for (EngineHandle* h : handles) {
    std::lock_guard<std::mutex> lock(h->group->mu);
    const uint64_t size = h->engine->streamable_weights_size();
    out.push_back({h->record.engine_name, h->index, size, size ? h->engine->weight_streaming_budget() : 0});
  }
  return out;
}

}  // namespace streamrt::delegate

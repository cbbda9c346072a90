// ONNX -> program: partition, preprocess each partition into an engine record, and lay out
// the method (values, delegate calls, portable kernel calls). See compile.h.
#include "delegate/compile.h"

#include <filesystem>
#include <unordered_map>
#include <unordered_set>

#include "builder/build_graph.h"
#include "builder/passes.h"
#include "core/guard.h"
#include "core/logging.h"
#include "delegate/budget.h"
#include "delegate/partitioner.h"
#include "delegate/preprocess.h"
#include "delegate/streamrt_backend.h"
#include "ir/shape_inference.h"
#include "onnx/importer.h"
#include "ops/op.h"

namespace streamrt::delegate {
namespace {

using program::Instruction;
using program::ValueData;

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

// Builds the method's value table from the graph's values, on demand.
class ValueTable {
 public:
  ValueTable(const ir::Graph& g, CompiledProgram& out) : g_(g), out_(out) {}

  Result<int32_t> operator()(ir::ValueId id) {
    if (id == ir::kNoValue) return -1;
    if (auto it = index_.find(id); it != index_.end()) return it->second;
    const ir::Value& v = g_.value(id);
    ValueData vd;
    vd.tag = EValue::Tag::kTensor;
    vd.name = v.name;
    vd.dtype = v.dtype;
    vd.dims = v.dims;
    if (const Tensor* c = g_.constant(id)) {
      const auto* p = static_cast<const uint8_t*>(c->data());
      vd.dims = c->dims();
      vd.constant_segment = static_cast<int32_t>(out_.segments.size());
      out_.segments.emplace_back(p, p + c->nbytes());
      out_.data.segments.emplace_back();
    } else if (!v.has_shape || !dims_static(v.dims)) {
      return unsupported("value '" + v.name + "' crosses a graph break with dims " +
                         (v.has_shape ? dims_to_string(v.dims) : std::string("of unknown rank")) +
                         "; compile needs static shapes there (give the inputs' shapes with --shapes)");
    }
    auto& values = out_.data.methods[0].values;
    values.push_back(std::move(vd));
    return index_[id] = static_cast<int32_t>(values.size() - 1);
  }
  // Replaces graph value ids by method value indices, in place.
  Status map_all(std::vector<ir::ValueId>& ids) {
    for (ir::ValueId& v : ids) {
      SRT_ASSIGN_OR_RETURN(v, (*this)(v));
    }
    return ok_status();
  }

 private:
  const ir::Graph& g_;
  CompiledProgram& out_;
  std::unordered_map<ir::ValueId, int32_t> index_;
};

Status check_options(const CompileOptions& o) {
  // A program's values are dense tensors that its instructions hand each other.
  if (o.builder.kv_cache_in_place)
    return unsupported("--kv-cache-in-place (BuilderConfig::kv_cache_in_place) is for engines (streamrt build); a "
                       "compiled program keeps its tensors dense");
  for (const std::string& op : o.fallback_ops)
    if (!ops::OpRegistry::global().find(op))
      return invalid_argument("--fallback-ops names '" + op + "', which is not an op streamrt knows (see `streamrt ops`)");
  BudgetLevel level{o.budget, o.budget_per_engine};
  // The same rules as at load: both keys, a malformed value -> kInvalidArgument.
  return parse_budget_level(level, BudgetRequest::Source::kCompileTime, "compile").status();
}

}  // namespace

Result<CompiledProgram> compile_graph(ir::Graph g, const CompileOptions& options) {
  SRT_RETURN_IF_ERROR(check_options(options));
  SRT_ASSIGN_OR_RETURN(auto profiles, builder::apply_input_shapes(g, options.builder));
  for (const auto& [id, p] : profiles)
    if (p.min != p.max)
      return unsupported("input '" + g.value(id).name + "' has a profile; compile needs fixed input shapes (--shapes)");
  if (auto st = ir::infer_shapes(g); !st.ok()) return st.status();
  SRT_RETURN_IF_ERROR(builder::fold_constants(g).status());
  builder::remove_dead_code(g);
  PartitionOptions po{options.builder.device, options.fallback_ops, options.supported};
  SRT_ASSIGN_OR_RETURN(Partitioning parts, partition_graph(g, po));

  CompiledProgram out;
  out.data.streamrt_version = STREAMRT_VERSION;
  out.data.methods.emplace_back();
  program::MethodData& m = out.data.methods[0];
  m.name = "forward";
  ValueTable value(g, out);
  m.inputs = g.inputs;
  SRT_RETURN_IF_ERROR(value.map_all(m.inputs));
  std::unordered_set<ir::ValueId> read(g.outputs.begin(), g.outputs.end());
  for (const ir::Node& n : g.nodes) read.insert(n.inputs.begin(), n.inputs.end());
  const std::string model = g.name.empty() ? "model" : g.name;
  const std::string cache_model = options.cache_model_id.empty() ? model : options.cache_model_id;
  const uint32_t engines = static_cast<uint32_t>(parts.partitions.size());
  uint64_t streamable = 0;
  for (const Partitioning::Unit& unit : parts.schedule) {
    Instruction ins;
    if (!unit.is_partition) {
      ins.kind = Instruction::Kind::kKernelCall;
      ins.kernel = g.nodes[unit.index];
      for (ir::ValueId& v : ins.kernel.outputs)  // outputs nothing reads need no value
        if (!read.count(v)) v = ir::kNoValue;
      SRT_RETURN_IF_ERROR(value.map_all(ins.kernel.inputs));
      SRT_RETURN_IF_ERROR(value.map_all(ins.kernel.outputs));
      out.report.kernel_calls.push_back(ins.kernel.op_type);
      m.instructions.push_back(std::move(ins));
      continue;
    }
    const auto& nodes = parts.partitions[unit.index];
    const std::string name = model + "_engine" + std::to_string(unit.index);
    Subgraph sub = extract_subgraph(g, nodes, name);
    BuilderConfig config = options.builder;
    config.engine_name = name;
    config.shapes.clear();
    config.profiles.clear();
    std::optional<PreprocessCache> cache;
    if (options.cache) cache.emplace(PreprocessCache{*options.cache, cache_model + "#" + name});
    auto pre = preprocess(std::move(sub.graph), config, cache ? &*cache : nullptr);
    if (!pre.ok()) return pre.status().with_context("building engine '" + name + "'");
    streamable += pre->streamable_size;
    out.report.engines.push_back({name, nodes.size(), pre->report.steps, pre->streamable_size, std::move(pre->cache)});
    program::DelegateData d;
    d.backend = kStreamRtBackendName;
    d.segment = static_cast<int32_t>(out.segments.size());
    out.segments.push_back(std::move(pre->record));
    out.data.segments.emplace_back();
    if (options.budget && !options.budget->empty()) d.compile_specs.push_back({kBudgetKey, bytes_of(*options.budget)});
    if (options.budget_per_engine && !options.budget_per_engine->empty())
      d.compile_specs.push_back({kBudgetPerEngineKey, bytes_of(*options.budget_per_engine)});
    d.compile_specs.push_back({kEngineIndexKey, bytes_of(std::to_string(unit.index))});
    d.compile_specs.push_back({kEngineCountKey, bytes_of(std::to_string(engines))});
    ins.kind = Instruction::Kind::kDelegateCall;
    ins.delegate.delegate = static_cast<int32_t>(m.delegates.size());
    m.delegates.push_back(std::move(d));
    ins.delegate.inputs = sub.inputs;
    ins.delegate.outputs = sub.outputs;
    SRT_RETURN_IF_ERROR(value.map_all(ins.delegate.inputs));
    SRT_RETURN_IF_ERROR(value.map_all(ins.delegate.outputs));
    m.instructions.push_back(std::move(ins));
  }
  m.outputs = g.outputs;
  SRT_RETURN_IF_ERROR(value.map_all(m.outputs));
  const bool budget_given = (options.budget && !options.budget->empty()) ||
                            (options.budget_per_engine && !options.budget_per_engine->empty());
  if (budget_given && streamable == 0)
    log_warning("compile: no engine has streamable weights (compile with --weight-streaming); the baked "
                "weight-streaming budget will be ignored at load");
  return out;
}

Result<CompiledProgram> compile_onnx(const std::string& onnx_path, const CompileOptions& options) {
  return guard([&] { return "compiling '" + onnx_path + "'"; }, [&]() -> Result<CompiledProgram> {
    SRT_RETURN_IF_ERROR(check_options(options));
    SRT_ASSIGN_OR_RETURN(ir::Graph g, onnx_import::import_onnx_file(onnx_path));
    if (g.name.empty()) {
      const size_t slash = onnx_path.find_last_of('/');
      g.name = onnx_path.substr(slash == std::string::npos ? 0 : slash + 1);
    }
    CompileOptions o = options;
    if (o.cache && o.cache_model_id.empty()) {  // one record per model file, whatever the working directory
      std::error_code ec;
      const auto abs = std::filesystem::absolute(onnx_path, ec);
      o.cache_model_id = ec ? onnx_path : abs.lexically_normal().string();
    }
    auto r = compile_graph(std::move(g), o);
    if (!r.ok()) return r.status().with_context(onnx_path);
    return r;
  });
}

}  // namespace streamrt::delegate

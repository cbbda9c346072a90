// Cache keys: see key.h for what goes in and why.
#include "cache/key.h"

#include <bit>
#include <map>
#include <cstring>
#include <unordered_map>
#include <unordered_set>

#include "cache/sha256.h"
#include "core/field_count.h"
#include "ops/op.h"

namespace streamrt::cache {
namespace {

static_assert(std::endian::native == std::endian::little, "keys hash little-endian integers");

// A hash fed with length-prefixed, typed fields, so that no two different descriptions can
// produce the same byte stream (e.g. names "ab"+"c" and "a"+"bc").
class Canon {
 public:
  void u8(uint8_t v) { h_.update(&v, 1); }
  void i64(int64_t v) { h_.update(&v, sizeof(v)); }
  void f32(float v) { i64(std::bit_cast<uint32_t>(v)); }  // bits: -0.0 != 0.0, NaNs by payload
  void str(const std::string& s) {
    i64(static_cast<int64_t>(s.size()));
    h_.update(s.data(), s.size());
  }
  void dims(const Dims& d) {
    i64(static_cast<int64_t>(d.size()));
    for (int64_t x : d) i64(x);
  }
  void bytes(const void* p, size_t n) {
    i64(static_cast<int64_t>(n));
    h_.update(p, n);
  }
  void tensor(const Tensor& t, bool with_values) {
    u8(static_cast<uint8_t>(t.dtype()));
    dims(t.dims());
    u8(with_values);
    if (with_values) bytes(t.data(), t.data() ? t.nbytes() : 0);
  }
  std::string hex() { return to_hex(h_.finish()); }

 private:
  Sha256 h_;
};

void subgraph(Canon& c, const ir::Graph& g);

void attribute(Canon& c, const std::string& name, const ir::Attribute& a) {
  c.str(name);
  c.u8(static_cast<uint8_t>(a.kind));
  switch (a.kind) {
    case ir::Attribute::Kind::kInt: c.i64(a.i); break;
    case ir::Attribute::Kind::kFloat: c.f32(a.f); break;
    case ir::Attribute::Kind::kString: c.str(a.s); break;
    case ir::Attribute::Kind::kInts: c.dims(a.ints); break;
    case ir::Attribute::Kind::kFloats:
      c.i64(static_cast<int64_t>(a.floats.size()));
      for (float f : a.floats) c.f32(f);
      break;
    case ir::Attribute::Kind::kStrings:
      c.i64(static_cast<int64_t>(a.strings.size()));
      for (const auto& s : a.strings) c.str(s);
      break;
    case ir::Attribute::Kind::kTensor: c.tensor(a.t, true); break;  // attributes are structure
    case ir::Attribute::Kind::kGraph:
      c.u8(a.g != nullptr);
      if (a.g) subgraph(c, *a.g);
      break;
  }
}

void value_info(Canon& c, const ir::Value& v);

// A node's op and attributes (its edges are hashed by the caller).
void node_header(Canon& c, const ir::Node& n) {
  c.str(n.name);
  c.str(n.op_type);
  c.str(n.domain);
  c.i64(n.opset);
  c.i64(static_cast<int64_t>(n.attrs.size()));
  for (const auto& [name, a] : n.attrs) attribute(c, name, a);  // std::map: sorted
}

// A body, whole: its constants are structure too (plans hold them inline; they never refit).
void subgraph(Canon& c, const ir::Graph& g) {
  c.str(g.name);
  c.i64(g.num_captures);
  c.i64(static_cast<int64_t>(g.values.size()));
  for (const ir::Value& v : g.values) value_info(c, v);
  c.dims(Dims(g.inputs.begin(), g.inputs.end()));
  c.dims(Dims(g.outputs.begin(), g.outputs.end()));
  std::map<ir::ValueId, const Tensor*> constants;  // in id order
  for (const auto& [id, t] : g.constants) constants[id] = &t;
  c.i64(static_cast<int64_t>(constants.size()));
  for (const auto& [id, t] : constants) {
    c.i64(id);
    c.tensor(*t, true);
  }
  c.i64(static_cast<int64_t>(g.nodes.size()));
  for (const ir::Node& n : g.nodes) {
    node_header(c, n);
    c.dims(Dims(n.inputs.begin(), n.inputs.end()));
    c.dims(Dims(n.outputs.begin(), n.outputs.end()));
  }
}

void value_info(Canon& c, const ir::Value& v) {
  c.str(v.name);
  c.u8(static_cast<uint8_t>(v.dtype));
  c.u8(v.has_shape);
  c.dims(v.dims);
}

// Constants some node reads as a shape (their values size the memory plan).
std::unordered_set<ir::ValueId> shape_constants(const ir::Graph& g) {
  std::unordered_set<ir::ValueId> out;
  for (const ir::Node& n : g.nodes) {
    const ops::OpSchema* s = ops::OpRegistry::global().find(n.op_type, n.domain);
    if (!s) continue;
    for (int i : s->shape_inputs)
      if (i >= 0 && static_cast<size_t>(i) < n.inputs.size() && g.is_constant(n.inputs[i])) out.insert(n.inputs[i]);
  }
  return out;
}

// graph.io, graph.nodes and graph.weights. Values are numbered by first use (inputs, then node
// edges in order, then outputs), so ids left behind by removed nodes do not matter.
void graph_parts(const ir::Graph& g, const std::string& prefix, std::map<std::string, std::string>& parts) {
  Canon io, nodes, weights;
  std::unordered_map<ir::ValueId, int64_t> number;
  const auto shapes = shape_constants(g);
  // Returns the canonical number; describes the value (in `nodes` or `weights`) on first use.
  auto ref = [&](ir::ValueId v) -> int64_t {
    if (v == ir::kNoValue) return -1;
    auto [it, fresh] = number.emplace(v, static_cast<int64_t>(number.size()));
    if (fresh) {
      if (const Tensor* t = g.constant(v)) {
        weights.i64(it->second);
        weights.str(g.value(v).name);
        weights.tensor(*t, !is_float(t->dtype()) || shapes.count(v));
      } else {
        nodes.i64(it->second);
        value_info(nodes, g.value(v));
      }
    }
    return it->second;
  };
  io.str(g.name);
  io.i64(static_cast<int64_t>(g.inputs.size()));
  for (ir::ValueId v : g.inputs) {
    io.i64(ref(v));
    value_info(io, g.value(v));
  }
  nodes.i64(static_cast<int64_t>(g.nodes.size()));
  for (const ir::Node& n : g.nodes) {
    node_header(nodes, n);
    // Describing a value in `nodes` inside ref() interleaves with the edge list; the stream is
    // still unambiguous because every field is typed and counted.
    nodes.i64(static_cast<int64_t>(n.inputs.size()));
    for (ir::ValueId v : n.inputs) nodes.i64(ref(v));
    nodes.i64(static_cast<int64_t>(n.outputs.size()));
    for (ir::ValueId v : n.outputs) nodes.i64(ref(v));
  }
  io.i64(static_cast<int64_t>(g.outputs.size()));
  for (ir::ValueId v : g.outputs) {
    io.i64(ref(v));
    value_info(io, g.value(v));
  }
  parts[prefix + ".io"] = io.hex();
  parts[prefix + ".nodes"] = nodes.hex();
  parts[prefix + ".weights"] = weights.hex();
}

// EVERY BuilderConfig field goes in here, one part each. Adding a field to BuilderConfig (or to
// BuilderPasses)? Add it below (or say here why it does not change the plan) and update the field
// count; tests/unit/cache_key_test.cc flips every field and expects its part to change.
static_assert(field_count<BuilderConfig>() == 17,
              "BuilderConfig changed: add the new field to append_builder_config() in src/cache/key.cc, then "
              "update this count");
static_assert(field_count<BuilderPasses>() == 9,
              "BuilderPasses changed: add the new switch to append_builder_config() in src/cache/key.cc, then "
              "update this count");
void append_builder_config(const BuilderConfig& c, std::map<std::string, std::string>& parts) {
  auto part = [&](const char* name, auto&& write) {
    Canon h;
    write(h);
    parts[std::string("config.") + name] = h.hex();
  };
  part("device", [&](Canon& h) { h.u8(static_cast<uint8_t>(c.device)); });
  part("shapes", [&](Canon& h) {
    h.i64(static_cast<int64_t>(c.shapes.size()));
    for (const auto& [name, dims] : c.shapes) {  // std::map: sorted by name
      h.str(name);
      h.dims(dims);
    }
  });
  part("profiles", [&](Canon& h) {
    h.i64(static_cast<int64_t>(c.profiles.size()));
    for (const auto& [name, p] : c.profiles) {
      h.str(name);
      h.dims(p.min);
      h.dims(p.opt);
      h.dims(p.max);
    }
  });
  part("float_precision", [&](Canon& h) { h.u8(static_cast<uint8_t>(c.float_precision)); });
  part("weight_streaming", [&](Canon& h) { h.u8(c.weight_streaming); });
  part("min_streamable_bytes", [&](Canon& h) { h.i64(static_cast<int64_t>(c.min_streamable_bytes)); });
  part("stream_chunk_bytes", [&](Canon& h) { h.i64(static_cast<int64_t>(c.stream_chunk_bytes)); });
  part("tactics", [&](Canon& h) { h.u8(c.tactics); });
  part("allow_tf32", [&](Canon& h) { h.u8(c.allow_tf32); });
  part("engine_name", [&](Canon& h) { h.str(c.engine_name); });
  part("weight_quant", [&](Canon& h) {
    h.u8(static_cast<uint8_t>(c.weight_quant.scheme));
    h.i64(c.weight_quant.scheme == WeightQuantScheme::kInt4 ? c.weight_quant.group : 0);
    h.i64(static_cast<int64_t>(c.weight_quant.calibration.size()));  // GPTQ's codes depend on every value
    for (const auto& sample : c.weight_quant.calibration) {
      h.i64(static_cast<int64_t>(sample.size()));
      for (const auto& [name, t] : sample) {
        h.str(name);
        h.tensor(t, true);
      }
    }
  });
  part("kv_cache_in_place", [&](Canon& h) { h.u8(c.kv_cache_in_place); });
  // Every pass switch, one part each, so a miss names the switch. The fusion switches also change
  // the optimized graph the key describes; the others (view aliasing in lowering, conv tactics,
  // step timing) act after it and are known to the key only through here.
  const BuilderPasses& p = c.passes;
  auto pass = [&](const char* name, bool on) { part(name, [&](Canon& h) { h.u8(on); }); };
  pass("passes.conv_fusion", p.conv_fusion);
  pass("passes.matmul_bias_fusion", p.matmul_bias_fusion);
  pass("passes.matmul_residual_fusion", p.matmul_residual_fusion);
  pass("passes.matmul_group_fusion", p.matmul_group_fusion);
  pass("passes.rotary_fusion", p.rotary_fusion);
  pass("passes.attention_fusion", p.attention_fusion);
  pass("passes.view_aliasing", p.view_aliasing);
  pass("passes.conv_tactics", p.conv_tactics);
  pass("passes.step_timing", p.step_timing);
  // max_nodes and max_tensor_elements are left out on purpose: they bound the builder's work and
  // only decide whether a plan builds, not what it is.
  // progress is left out on purpose: it reports on the build and does not change it.
  // strip_weights is left out on purpose: entries are always stored stripped, and a hit serves
  // both stripped and full plans.
}

const char* describe_part(const std::string& part) {
  if (part == "io") return "graph changed: inputs or outputs";
  if (part == "nodes") return "graph changed: ops, attributes or edges";
  if (part == "weights") return "graph changed: weight names, dtypes or dims (or shape-constant values)";
  if (part == "device") return "target device changed";
  if (part == "format") return "plan format or streamrt version changed";
  return nullptr;
}

bool has_model_parts(const CacheKeyInfo& k) { return k.components.count("model.nodes") != 0; }

}  // namespace

CacheKeyInfo compute_key(const ir::Graph& prepared, const BuilderConfig& config, const KeyContext& ctx) {
  CacheKeyInfo info;
  graph_parts(prepared, "graph", info.components);
  append_builder_config(config, info.components);
  Canon device;
  device.u8(static_cast<uint8_t>(ctx.device.kind));
  device.i64(ctx.device.cc_major);
  device.i64(ctx.device.cc_minor);
  device.str(ctx.device.name);
  info.components["device"] = device.hex();
  Canon format;
  format.i64(kCacheKeyVersion);
  format.i64(ctx.plan_format_version);
  format.str(ctx.streamrt_version);
  info.components["format"] = format.hex();

  Sha256 all;
  static const char kDomain[] = "streamrt engine cache key";
  all.update(kDomain, sizeof(kDomain));
  for (const auto& [name, digest] : info.components) {  // sorted by part name
    all.update(name.data(), name.size() + 1);  // with its NUL: names cannot run together
    all.update(digest.data(), digest.size());
  }
  info.key.digest = all.finish();
  return info;
}

void add_model_parts(CacheKeyInfo& info, const ir::Graph& imported) { graph_parts(imported, "model", info.components); }

std::string explain_miss(const std::optional<CacheKeyInfo>& last, const CacheKeyInfo& now) {
  if (!last) return "first build of this model";
  if (last->key == now.key) return "entry was evicted or removed";
  // Graph changes are told from the imported model's parts when both records have them: a
  // builder option changes the optimized graph too, and that is no change of the model.
  const bool model_parts = has_model_parts(*last) && has_model_parts(now);
  auto changed = [&](const std::string& part) {
    auto a = last->components.find(part), b = now.components.find(part);
    return a == last->components.end() || b == now.components.end() || a->second != b->second;
  };
  std::string options, out;
  auto add = [&](const std::string& what) { out += (out.empty() ? "" : "; ") + what; };
  for (const auto& [part, digest] : now.components)
    if (part.rfind("config.", 0) == 0 && changed(part)) options += (options.empty() ? "" : ", ") + part.substr(7);
  if (!options.empty()) add("builder option changed: " + options);
  bool graph_told = false;
  for (const char* sub : {"io", "nodes", "weights"})
    if (changed((model_parts ? "model." : "graph.") + std::string(sub))) {
      add(describe_part(sub));
      graph_told = true;
    }
  for (const char* part : {"device", "format"})
    if (changed(part)) add(describe_part(part));
  if (out.empty() && !graph_told)
    return "the optimized graph changed (a value the builder reads, e.g. a fused epsilon, or streamrt's passes)";
  return out;
}

}  // namespace streamrt::cache

namespace streamrt {

std::string CacheKey::hex() const { return cache::to_hex(digest); }

Result<CacheKey> CacheKey::from_hex(std::string_view hex) {
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  CacheKey k;
  if (hex.size() != 2 * k.digest.size())
    return invalid_argument("cache key '" + std::string(hex) + "' is not 64 lowercase hex digits");
  for (size_t i = 0; i < k.digest.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return invalid_argument("cache key '" + std::string(hex) + "' is not 64 lowercase hex digits");
    k.digest[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return k;
}

}  // namespace streamrt

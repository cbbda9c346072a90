// `streamrt inspect model.pte [--json]`: a program's methods, instructions, delegates, their
// compile specs and, for StreamRT engines, what their records say (device, bindings,
// streamable size).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/byte_size.h"
#include "delegate/engine_record.h"
#include "delegate/streamrt_backend.h"
#include "printable_json.h"
#include "program/program_format.h"

namespace streamrt::cli {
namespace {

using nlohmann::json;

// A compile spec's value as text when it is printable, else as "<N bytes>".
std::string spec_text(const CompileSpec& s) {
  for (uint8_t c : s.value)
    if (c < 0x20 || c >= 0x7f) return "<" + std::to_string(s.value.size()) + " bytes>";
  return std::string(s.value_string());
}

json value_json(const program::ValueData& v) {
  json j = {{"name", v.name}, {"kind", evalue_tag_name(v.tag)}};
  if (v.tag == EValue::Tag::kTensor) {
    j["dtype"] = dtype_name(v.dtype);
    j["dims"] = v.dims;
    if (v.constant_segment >= 0) j["constant_segment"] = v.constant_segment;
  }
  return j;
}

json delegate_json(const LoadedProgram& lp, const program::DelegateData& d) {
  json j = {{"backend", d.backend}, {"segment", d.segment}, {"bytes", lp.data.segments[d.segment].size}};
  json specs = json::object();
  for (const CompileSpec& s : d.compile_specs) specs[s.key] = spec_text(s);
  j["compile_specs"] = specs;
  if (d.backend != delegate::kStreamRtBackendName) return j;
  auto rec = delegate::read_engine_record(lp.segment(static_cast<size_t>(d.segment)));
  if (!rec.ok()) {
    j["engine_error"] = rec.status().to_string();
    return j;
  }
  j["engine"] = {{"name", rec->meta.engine_name},
                 {"device", delegate::describe_device(rec->meta.device)},
                 {"inputs", rec->meta.inputs},
                 {"outputs", rec->meta.outputs},
                 {"streamable_bytes", rec->meta.streamable_size},
                 {"plan_bytes", rec->plan.size()},
                 {"streamrt_version", rec->meta.streamrt_version}};
  return j;
}

json to_json(const LoadedProgram& lp) {
  json j = {{"streamrt_version", lp.data.streamrt_version}, {"file_size", lp.file_size},
            {"segments", lp.data.segments.size()}};
  json methods = json::array();
  for (const program::MethodData& m : lp.data.methods) {
    json jm = {{"name", m.name}, {"values", m.values.size()}};
    auto names = [&](const std::vector<int32_t>& ids) {
      json a = json::array();
      for (int32_t v : ids) a.push_back(v < 0 ? std::string() : m.values[v].name);
      return a;
    };
    for (const char* key : {"inputs", "outputs"}) {
      json a = json::array();
      for (int32_t v : std::string(key) == "inputs" ? m.inputs : m.outputs) a.push_back(value_json(m.values[v]));
      jm[key] = a;
    }
    json ins = json::array();
    for (const program::Instruction& i : m.instructions) {
      if (i.kind == program::Instruction::Kind::kKernelCall)
        ins.push_back({{"kernel", i.kernel.op_type}, {"node", i.kernel.name}, {"inputs", names(i.kernel.inputs)},
                       {"outputs", names(i.kernel.outputs)}});
      else
        ins.push_back({{"delegate", i.delegate.delegate}, {"inputs", names(i.delegate.inputs)},
                       {"outputs", names(i.delegate.outputs)}});
    }
    jm["instructions"] = ins;
    json ds = json::array();
    for (const program::DelegateData& d : m.delegates) ds.push_back(delegate_json(lp, d));
    jm["delegates"] = ds;
    methods.push_back(jm);
  }
  j["methods"] = methods;
  return j;
}

std::string join(const json& a) {
  std::string s;
  for (const auto& x : a) s += (s.empty() ? "" : ", ") + x.get<std::string>();
  return "[" + s + "]";
}

void print_text(const std::string& path, const json& j) {
  std::printf("program %s: streamrt %s, %llu bytes, %zu segments\n", path.c_str(),
              j["streamrt_version"].get<std::string>().c_str(), j["file_size"].get<unsigned long long>(),
              j["segments"].get<size_t>());
  for (const json& m : j["methods"]) {
    std::printf("method '%s': %zu values\n", m["name"].get<std::string>().c_str(), m["values"].get<size_t>());
    for (const char* key : {"inputs", "outputs"})
      for (const json& v : m[key])
        std::printf("  %-7s %s %s %s\n", std::string(key) == "inputs" ? "input" : "output",
                    v["name"].get<std::string>().c_str(), v.value("dtype", v["kind"].get<std::string>()).c_str(),
                    v.contains("dims") ? v["dims"].dump().c_str() : "");
    std::printf("  instructions:\n");
    size_t n = 0;
    for (const json& i : m["instructions"]) {
      if (i.contains("kernel"))
        std::printf("    %zu kernel %s '%s' %s -> %s\n", n++, i["kernel"].get<std::string>().c_str(),
                    i["node"].get<std::string>().c_str(), join(i["inputs"]).c_str(), join(i["outputs"]).c_str());
      else
        std::printf("    %zu delegate %d %s -> %s\n", n++, i["delegate"].get<int>(), join(i["inputs"]).c_str(),
                    join(i["outputs"]).c_str());
    }
    std::printf("  delegates:\n");
    n = 0;
    for (const json& d : m["delegates"]) {
      std::printf("    %zu %s: segment %d, %s\n", n++, d["backend"].get<std::string>().c_str(), d["segment"].get<int>(),
                  format_bytes(d["bytes"].get<uint64_t>()).c_str());
      for (const auto& [k, v] : d["compile_specs"].items())
        std::printf("      compile spec %s = %s\n", k.c_str(), v.get<std::string>().c_str());
      if (d.contains("engine")) {
        const json& e = d["engine"];
        std::printf("      engine '%s' for %s: inputs %s, outputs %s, streamable %s, plan %s\n",
                    e["name"].get<std::string>().c_str(), e["device"].get<std::string>().c_str(),
                    join(e["inputs"]).c_str(), join(e["outputs"]).c_str(),
                    format_bytes(e["streamable_bytes"].get<uint64_t>()).c_str(),
                    format_bytes(e["plan_bytes"].get<uint64_t>()).c_str());
      }
      if (d.contains("engine_error")) std::printf("      engine record: %s\n", d["engine_error"].get<std::string>().c_str());
    }
  }
}

}  // namespace

int inspect_program_command(const std::string& path, bool as_json) {
  auto lp = program::read_program(path);
  if (!lp.ok()) return report_error(lp.status());
  const json j = printable_json(to_json(*lp));
  if (as_json) std::printf("%s\n", j.dump(2).c_str());
  else print_text(path, j);
  return 0;
}

}  // namespace streamrt::cli

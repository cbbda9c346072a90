#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "builder/tactics.h"
#include "plan/plan.h"
#include "printable_json.h"

namespace streamrt::cli {
namespace {

nlohmann::json to_json(const plan::LoadedPlan& lp) {
  const plan::PlanData& p = lp.data;
  nlohmann::json j;
  j["name"] = p.name;
  j["streamrt_version"] = p.streamrt_version;
  j["device"] = {{"kind", p.device.kind == plan::DeviceKind::kCuda ? "cuda" : "cpu"},
                 {"name", p.device.name},
                 {"compute_capability", std::to_string(p.device.cc_major) + "." + std::to_string(p.device.cc_minor)}};
  j["file_size"] = lp.file_size;
  j["weights_stripped"] = p.weights_stripped;
  auto io = [&](const std::vector<plan::IoTensor>& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& t : v) {
      a.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"dims", t.dims},
                   {"min", t.min}, {"opt", t.opt}, {"max", t.max}});
      if (t.seq_capacity > 0) a.back()["seq_capacity"] = {{"capacity", t.seq_capacity}, {"axis", t.seq_axis}};
    }
    return a;
  };
  j["inputs"] = io(p.inputs);
  j["outputs"] = io(p.outputs);
  auto vname = [&](int32_t v) { return v < 0 ? std::string() : p.values[v].name; };
  nlohmann::json layers = nlohmann::json::array();
  for (const auto& s : p.steps) {
    nlohmann::json ins = nlohmann::json::array(), outs = nlohmann::json::array();
    for (int32_t v : s.inputs) ins.push_back(vname(v));
    for (int32_t v : s.outputs) outs.push_back(vname(v));
    layers.push_back({{"name", s.name}, {"op", s.op_type}, {"inputs", ins}, {"outputs", outs}});
    if (std::string t = builder::describe_tactics(s); !t.empty()) layers.back()["tactic"] = t;
  }
  j["layers"] = layers;
  nlohmann::json weights = nlohmann::json::array();
  uint64_t total = 0;
  for (const auto& w : p.weights) {
    weights.push_back({{"name", w.name}, {"dtype", dtype_name(w.dtype)}, {"dims", w.dims},
                       {"offset", w.offset}, {"bytes", w.size}, {"streamable", w.streamable}});
    total += w.size;
  }
  j["weights"] = weights;
  j["weights_bytes"] = total;
  nlohmann::json acts = nlohmann::json::array();
  for (const auto& v : p.values) {
    if (v.kind != plan::ValueEntry::Kind::kActivation) continue;
    acts.push_back({{"name", v.name}, {"dtype", dtype_name(v.dtype)}, {"max_dims", v.max_dims},
                    {"offset", v.arena_offset}, {"bytes", v.arena_size}});
  }
  j["memory_plan"] = {{"arena_bytes", p.arena_size}, {"activations", acts}};
  return j;
}

void print_text(const nlohmann::json& j) {
  std::printf("plan '%s' (streamrt %s) for %s, %s\n", j["name"].get<std::string>().c_str(),
              j["streamrt_version"].get<std::string>().c_str(), j["device"]["kind"].get<std::string>().c_str(),
              j["weights_stripped"].get<bool>() ? "weights stripped" : "weights included");
  for (const char* which : {"inputs", "outputs"}) {
    std::printf("%s:\n", which);
    for (const auto& t : j[which]) {
      std::printf("  %-24s %-8s dims %s  profile min %s opt %s max %s", t["name"].get<std::string>().c_str(),
                  t["dtype"].get<std::string>().c_str(), t["dims"].dump().c_str(), t["min"].dump().c_str(),
                  t["opt"].dump().c_str(), t["max"].dump().c_str());
      if (t.contains("seq_capacity"))  // a KV cache stored in place
        std::printf("  capacity %s along axis %s", t["seq_capacity"]["capacity"].dump().c_str(),
                    t["seq_capacity"]["axis"].dump().c_str());
      std::printf("\n");
    }
  }
  std::printf("layers (%zu):\n", j["layers"].size());
  for (const auto& l : j["layers"]) {
    std::printf("  %-18s %-32s %s -> %s\n", l["op"].get<std::string>().c_str(), l["name"].get<std::string>().c_str(),
                l["inputs"].dump().c_str(), l["outputs"].dump().c_str());
    if (l.contains("tactic")) std::printf("      tactic: %s\n", l["tactic"].get<std::string>().c_str());
  }
  std::printf("weights (%zu, %.2f MiB):\n", j["weights"].size(), j["weights_bytes"].get<uint64_t>() / 1048576.0);
  for (const auto& w : j["weights"])
    std::printf("  %-32s %-8s %-20s %10llu bytes%s\n", w["name"].get<std::string>().c_str(),
                w["dtype"].get<std::string>().c_str(), w["dims"].dump().c_str(),
                static_cast<unsigned long long>(w["bytes"].get<uint64_t>()), w["streamable"].get<bool>() ? "  streamable" : "");
  const auto& mp = j["memory_plan"];
  std::printf("memory plan: arena %.2f MiB for %zu activations\n", mp["arena_bytes"].get<uint64_t>() / 1048576.0,
              mp["activations"].size());
  for (const auto& a : mp["activations"])
    std::printf("  %-32s offset %10llu  %10llu bytes  %s\n", a["name"].get<std::string>().c_str(),
                static_cast<unsigned long long>(a["offset"].get<uint64_t>()),
                static_cast<unsigned long long>(a["bytes"].get<uint64_t>()), a["max_dims"].dump().c_str());
}

}  // namespace

Command add_inspect_command(CLI::App& app) {
  struct State {
    std::string plan, budget;
    bool json = false;
  };
  auto s = std::make_shared<State>();
  app.add_option("plan", s->plan, "plan file, or program (.pte)")->required();
  app.add_flag("--json", s->json, "print JSON instead of text");
  app.add_option("--budget", s->budget,
                 "weight-streaming plans: show the resident / streamed split at this budget (loads the engine)");
  return [s]() {
    if (is_program_path(s->plan)) return inspect_program_command(s->plan, s->json);
    auto lp = plan::read_plan(s->plan);
    if (!lp.ok()) return report_error(lp.status());
    nlohmann::json j = to_json(*lp);
    if (!s->budget.empty()) {
      auto split = streaming_split(s->plan, s->budget);
      if (!split.ok()) return report_error(split.status());
      j["weight_streaming"] = *split;
    }
    j = printable_json(j);
    if (s->json) std::printf("%s\n", j.dump(2).c_str());
    else print_text(j);
    if (!s->json && j.contains("weight_streaming")) print_streaming_split(j["weight_streaming"]);
    return 0;
  };
}

}  // namespace streamrt::cli

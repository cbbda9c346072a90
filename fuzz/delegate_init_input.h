// The input of delegate_init_fuzz (and of its seeds, tests/unit/apart_corpus_test.cc): what a
// host runtime hands StreamRTBackend's core (src/delegate/streamrt_core.h) when it loads a
// program (engine records, named data, load-time options, compile specs) and then changes its
// budget live, as frames (fuzz_frames.h):
//   'R'  an engine record (one init each, in order; one group: one program instance)
//   'C'  a compile spec of the last record, "key=value"
//   'K'  a named-data key, 'D' the bytes under the last key given (ExecuTorch's NamedDataMap)
//   'L'  a load-time option, 'S' a set_option after every init: "<type>key=value" with type
//        s (string), i (int64, decimal) or b (bool, "1" true)
//   'M'  its first byte: how many bytes past a 64-byte boundary records and named data sit
// Options and specs go through the parsers the adapters use (budget_level_from_options,
// parse_compile_specs: delegate/streamrt_backend.h), as ExecuTorch's adapter does.
#pragma once

#include <charconv>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "delegate/streamrt_backend.h"
#include "delegate/streamrt_core.h"
#include "fuzz_frames.h"

namespace streamrt::fuzzing {

struct DelegateInput {
  struct Engine {
    std::vector<uint8_t> record;
    std::vector<CompileSpec> specs;
  };
  std::vector<Engine> engines;
  std::map<std::string, std::vector<uint8_t>> named_data;
  std::vector<BackendOption> load_options, live_options;
  uint8_t misalign = 0;
};

// "key=value" split at the first '='; nullopt without one.
inline std::optional<std::pair<std::string, std::string>> key_value(std::string_view s) {
  const size_t eq = s.find('=');
  if (eq == std::string_view::npos) return std::nullopt;
  return std::make_pair(std::string(s.substr(0, eq)), std::string(s.substr(eq + 1)));
}

// "<type>key=value" as an option; nullopt when malformed (an int that does not parse included).
inline std::optional<BackendOption> option_of(std::string_view s) {
  if (s.empty()) return std::nullopt;
  auto kv = key_value(s.substr(1));
  if (!kv) return std::nullopt;
  BackendOption o{kv->first, kv->second};
  if (s[0] == 'b') o.value = kv->second == "1";
  if (s[0] == 'i') {
    int64_t v = 0;
    const std::string& t = kv->second;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ec != std::errc() || end != t.data() + t.size()) return std::nullopt;
    o.value = v;
  }
  return o;
}

inline std::string option_text(const BackendOption& o) {
  if (const bool* b = std::get_if<bool>(&o.value)) return "b" + o.key + "=" + (*b ? "1" : "0");
  if (const int64_t* i = std::get_if<int64_t>(&o.value)) return "i" + o.key + "=" + std::to_string(*i);
  return "s" + o.key + "=" + std::get<std::string>(o.value);
}

inline DelegateInput read_delegate_input(std::span<const uint8_t> in) {
  DelegateInput out;
  std::string key;
  for (const Frame& f : read_frames(in)) {
    switch (f.tag) {
      case 'R': out.engines.push_back({{f.bytes.begin(), f.bytes.end()}, {}}); break;
      case 'C':
        if (auto kv = key_value(f.text()); kv && !out.engines.empty())
          out.engines.back().specs.push_back({kv->first, {kv->second.begin(), kv->second.end()}});
        break;
      case 'K': key = std::string(f.text()); break;
      case 'D': out.named_data[key].assign(f.bytes.begin(), f.bytes.end()); break;
      case 'L':
      case 'S':
        if (auto o = option_of(f.text())) (f.tag == 'L' ? out.load_options : out.live_options).push_back(*o);
        break;
      case 'M':
        if (!f.bytes.empty()) out.misalign = f.bytes[0];
        break;
      default: break;
    }
  }
  return out;
}

inline std::vector<uint8_t> write_delegate_input(const DelegateInput& in) {
  std::vector<uint8_t> out;
  for (const auto& [key, bytes] : in.named_data) {
    add_frame(out, 'K', key);
    add_frame(out, 'D', bytes);
  }
  for (const BackendOption& o : in.load_options) add_frame(out, 'L', option_text(o));
  for (const auto& e : in.engines) {
    add_frame(out, 'R', e.record);
    for (const CompileSpec& s : e.specs) add_frame(out, 'C', s.key + "=" + std::string(s.value_string()));
  }
  for (const BackendOption& o : in.live_options) add_frame(out, 'S', option_text(o));
  if (in.misalign) add_frame(out, 'M', std::span<const uint8_t>(&in.misalign, 1));
  return out;
}

// What run_delegate_input saw: the first failure (ok when every step passed) and the buffers
// handed over and given back.
struct DelegateRun {
  Status status;
  size_t inits = 0, engines = 0;
  int records_released = 0, data_taken = 0, data_released = 0;
};

// Inits every record of `in` in one group with the load-time options and its compile specs, then
// (all of them loaded) applies the live options with set_budget and reads the budgets back; stops
// at the first failure, as a host's method load does, and destroys what was loaded. Records and
// named data sit in memory of their own that their release frees.
inline DelegateRun run_delegate_input(const DelegateInput& in) {
  using namespace delegate;
  DelegateRun run;
  StreamRtCore core;
  std::vector<EngineHandle*> handles;
  auto take = [&](const std::string& key) -> Result<ExternalWeights> {
    auto it = in.named_data.find(key);
    if (it == in.named_data.end()) return not_found("no named data under this key");
    auto bytes = std::make_shared<OwnedBytes>(it->second, in.misalign);
    ++run.data_taken;
    return ExternalWeights{bytes->data(), bytes->size(), [bytes, &run] {
                             bytes->reset();
                             ++run.data_released;
                           }};
  };
  auto load = [&]() -> Status {
    SRT_ASSIGN_OR_RETURN(BudgetLevel load_time, budget_level_from_options(in.load_options, "load-time options"));
    for (const DelegateInput::Engine& e : in.engines) {
      SRT_ASSIGN_OR_RETURN(BakedSpecs baked, parse_compile_specs(e.specs));
      auto record = std::make_shared<OwnedBytes>(e.record, in.misalign);
      InitRequest req;
      req.record = {record->data(), record->size()};
      req.release_record = [record, &run] {
        record->reset();
        ++run.records_released;
      };
      req.named_data = take;
      req.load_time = load_time;
      req.compile_time = baked.budget;
      req.engine_index = baked.engine_index;
      req.engine_count = baked.engine_count;
      req.group = 1;
      ++run.inits;
      SRT_ASSIGN_OR_RETURN(EngineHandle * h, core.init(std::move(req)));
      handles.push_back(h);
    }
    run.engines = handles.size();
    if (!in.live_options.empty()) {
      SRT_ASSIGN_OR_RETURN(BudgetLevel live, budget_level_from_options(in.live_options, "set_option"));
      SRT_RETURN_IF_ERROR(core.set_budget(handles, live));
    }
    (void)core.budgets(handles);
    return ok_status();
  };
  run.status = load();
  for (EngineHandle* h : handles) core.destroy(h);
  return run;
}

}  // namespace streamrt::fuzzing

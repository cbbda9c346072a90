// libFuzzer target for the ONNX importer (src/onnx/importer.cc, src/onnx/tensor_proto.cc).
// Each input is imported twice from bytes, with and without the supported-op check (so that
// graphs with unknown ops still reach topological sorting), against a temp folder holding
// external-data files (onnx_fuzz_base.h), so the external-data path checks are reachable.
// A rejection must say why; an accepted graph must be consistent: every value id in range,
// every node input produced by an earlier node, a graph input or a constant.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "onnx/importer.h"
#include "onnx_fuzz_base.h"

namespace {

using streamrt::ir::Graph;
using streamrt::ir::kNoValue;
using streamrt::ir::ValueId;

// Removes the temp folder at exit.
struct BaseDir {
  std::string path = streamrt::fuzzing::make_onnx_fuzz_base_dir();
  ~BaseDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(std::filesystem::path(path).parent_path(), ec);
  }
};

void check_graph(const Graph& g) {
  const auto nv = static_cast<ValueId>(g.values.size());
  auto in_range = [&](ValueId v) { return v >= 0 && v < nv; };
  std::vector<bool> available(g.values.size(), false);
  for (ValueId v : g.inputs) {
    if (!in_range(v)) std::abort();
    available[v] = true;
  }
  for (const auto& [v, t] : g.constants) {
    if (!in_range(v) || t.empty()) std::abort();
    available[v] = true;
  }
  for (const auto& n : g.nodes) {
    for (ValueId v : n.inputs)
      if (v != kNoValue && (!in_range(v) || !available[v])) std::abort();
    for (ValueId v : n.outputs) {
      if (v == kNoValue) continue;
      if (!in_range(v)) std::abort();
      available[v] = true;
    }
  }
  if (g.outputs.empty()) std::abort();
  for (ValueId v : g.outputs)
    if (!in_range(v)) std::abort();
}

void import(const uint8_t* data, size_t size, const std::string& base, bool check_supported) {
  streamrt::onnx_import::ImportOptions options;
  options.check_supported = check_supported;
  auto g = streamrt::onnx_import::import_onnx_bytes(data, size, base, options);
  if (!g.ok()) {
    if (g.status().message().empty()) std::abort();
    return;
  }
  check_graph(*g);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static BaseDir base;
  if (base.path.empty()) std::abort();
  import(data, size, base.path, true);
  import(data, size, base.path, false);
  return 0;
}

// ONNX -> ir::Graph importer (through Debian's libonnx protobuf classes).
#pragma once

#include <string>

#include "ir/graph.h"

namespace streamrt::onnx_import {

// The model-wide range; each op's OpSchema::min_opset refuses the opsets whose semantics it
// does not implement (e.g. the legacy broadcast attributes of Add before opset 7).
inline constexpr int kMinOpset = 1;
inline constexpr int kMaxOpset = 23;

struct ImportOptions {
  // Report every node whose op streamrt lacks (all at once) as kUnsupported. Nodes older
  // than their op's min_opset are refused either way.
  bool check_supported = true;
};

// Parses `path` (external data resolved next to it), converts initializers, inputs, outputs
// and nodes, and orders the nodes topologically. Errors: kIoError (file), kInvalidModel
// (malformed), kUnsupported (opset out of range, unsupported ops listed with node names).
Result<ir::Graph> import_onnx_file(const std::string& path, const ImportOptions& options = {});
// Same from bytes; external data is resolved against `base_dir`.
Result<ir::Graph> import_onnx_bytes(const void* data, size_t size, const std::string& base_dir,
                                    const ImportOptions& options = {});

// The op type, domain and opset of every top-level node of the model at `path`, without converting
// anything else (for tools that classify models an import refuses for another reason).
Result<std::vector<ir::Node>> read_node_ops(const std::string& path);

}  // namespace streamrt::onnx_import

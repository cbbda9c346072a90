// The partitioner: which nodes of a graph an engine runs, and how they group into engines.
// Nodes the target device's engine supports (and that the user did not force to fall back)
// form maximal connected subgraphs that create no cycle between them and the rest; every other
// node becomes a portable kernel call. The result is in the order the program runs it.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "streamrt/builder.h"

namespace streamrt::delegate {

// True when an engine built for `device` can run `node`: on the CPU every op of the registry,
// on CUDA those with a CUDA kernel (none in a build without CUDA).
bool engine_supports_node(DeviceType device, const ir::Node& node);

struct PartitionOptions {
  DeviceType device = DeviceType::kCpu;
  // Op types forced to portable kernel calls (like Torch-TensorRT's torch_executed_ops).
  std::set<std::string> fallback_ops;
  // Overrides engine_supports_node (tests).
  std::function<bool(const ir::Node&)> supported;
};

struct Partitioning {
  std::vector<int32_t> node_partition;          // per node: its partition, or -1 (portable kernel)
  std::vector<std::vector<size_t>> partitions;  // node indices of each, in graph order
  struct Unit {
    bool is_partition = false;
    size_t index = 0;  // a partition, or a node (portable kernel call)
  };
  std::vector<Unit> schedule;  // every partition and portable node once, dependencies first
};

// `g` must be topologically sorted (the importer sorts it). O(merges * (nodes + edges)).
Result<Partitioning> partition_graph(const ir::Graph& g, const PartitionOptions& options);

}  // namespace streamrt::delegate

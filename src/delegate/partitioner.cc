// Partitioning a graph into engine subgraphs and portable kernel calls (see partitioner.h).
#include "delegate/partitioner.h"

#include <algorithm>
#include <numeric>
#include <queue>
#include <unordered_map>

#include "ops/op.h"
#if STREAMRT_WITH_CUDA
#include "backends/cuda/cuda_kernel.h"
#endif

namespace streamrt::delegate {

bool engine_supports_node(DeviceType device, const ir::Node& node) {
  const ops::OpSchema* s = ops::OpRegistry::global().find(node.op_type, node.domain);
  if (!s || !s->cpu) return false;  // every engine step needs the op's shape rule and host kernel
  if (device == DeviceType::kCpu) return true;
#if STREAMRT_WITH_CUDA
  if (s->built_as) return cuda::CudaKernelRegistry::global().find(s->built_as) != nullptr;
  return node.domain.empty() && cuda::CudaKernelRegistry::global().find(node.op_type) != nullptr;
#else
  return false;
#endif
}

namespace {

// Node-level edges: consumers[u] = nodes reading an output of u.
std::vector<std::vector<size_t>> consumers_of(const ir::Graph& g) {
  std::unordered_map<ir::ValueId, size_t> producer;
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (ir::ValueId o : g.nodes[n].outputs)
      if (o != ir::kNoValue) producer[o] = n;
  std::vector<std::vector<size_t>> out(g.nodes.size());
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (ir::ValueId i : g.nodes[n].inputs)
      if (auto it = producer.find(i); i != ir::kNoValue && it != producer.end()) {
        auto& list = out[it->second];
        if (list.empty() || list.back() != n) list.push_back(n);
      }
  return out;
}

class Grouping {
 public:
  Grouping(size_t n, const std::vector<std::vector<size_t>>& consumers) : parent_(n), consumers_(consumers) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  size_t find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  // True when some path leaves group a and reaches group b through a node of neither: merging
  // a and b would then make a cycle through that node.
  bool path_outside(size_t a, size_t b) {
    std::vector<bool> seen(parent_.size(), false);
    std::queue<size_t> q;
    for (size_t n = 0; n < parent_.size(); ++n)
      if (find(n) == a)
        for (size_t c : consumers_[n])
          if (find(c) != a && find(c) != b && !seen[c]) {
            seen[c] = true;
            q.push(c);
          }
    while (!q.empty()) {
      size_t n = q.front();
      q.pop();
      for (size_t c : consumers_[n]) {
        if (find(c) == b) return true;
        if (!seen[c]) {
          seen[c] = true;
          q.push(c);
        }
      }
    }
    return false;
  }
  void merge(size_t a, size_t b) { parent_[find(b)] = find(a); }

 private:
  std::vector<size_t> parent_;
  const std::vector<std::vector<size_t>>& consumers_;
};

// Kahn's algorithm over units, the unit holding the earliest node first among the ready ones.
std::vector<Partitioning::Unit> schedule_units(const Partitioning& p, const std::vector<std::vector<size_t>>& consumers) {
  const size_t nodes = p.node_partition.size();
  auto unit_of = [&](size_t n) { return p.node_partition[n] >= 0 ? static_cast<size_t>(p.node_partition[n]) : p.partitions.size() + n; };
  const size_t units = p.partitions.size() + nodes;
  std::vector<size_t> first(units, SIZE_MAX), indegree(units, 0);
  std::vector<std::vector<size_t>> succ(units);
  for (size_t n = 0; n < nodes; ++n) {
    first[unit_of(n)] = std::min(first[unit_of(n)], n);
    for (size_t c : consumers[n])
      if (unit_of(c) != unit_of(n)) succ[unit_of(n)].push_back(unit_of(c));
  }
  for (auto& s : succ) {
    std::sort(s.begin(), s.end());
    s.erase(std::unique(s.begin(), s.end()), s.end());
    for (size_t u : s) ++indegree[u];
  }
  using Item = std::pair<size_t, size_t>;  // (first node, unit)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (size_t u = 0; u < units; ++u)
    if (first[u] != SIZE_MAX && indegree[u] == 0) ready.push({first[u], u});
  std::vector<Partitioning::Unit> out;
  while (!ready.empty()) {
    const size_t u = ready.top().second;
    ready.pop();
    out.push_back(u < p.partitions.size() ? Partitioning::Unit{true, u} : Partitioning::Unit{false, u - p.partitions.size()});
    for (size_t s : succ[u])
      if (--indegree[s] == 0) ready.push({first[s], s});
  }
  return out;
}

}  // namespace

Result<Partitioning> partition_graph(const ir::Graph& g, const PartitionOptions& options) {
  const size_t n = g.nodes.size();
  const auto consumers = consumers_of(g);
  for (size_t u = 0; u < n; ++u)
    for (size_t c : consumers[u])
      if (c <= u) return internal_error("partition_graph: the graph is not topologically sorted at " + g.nodes[c].describe());
  std::vector<bool> supported(n);
  for (size_t u = 0; u < n; ++u) {
    const ir::Node& node = g.nodes[u];
    supported[u] = !options.fallback_ops.count(node.op_type) &&
                   (options.supported ? options.supported(node) : engine_supports_node(options.device, node));
  }
  // Merge supported neighbours until nothing more can merge without a cycle.
  Grouping groups(n, consumers);
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t u = 0; u < n; ++u)
      for (size_t c : consumers[u]) {
        if (!supported[u] || !supported[c]) continue;
        const size_t a = groups.find(u), b = groups.find(c);
        if (a == b || groups.path_outside(a, b)) continue;
        groups.merge(a, b);
        merged = true;
      }
  }
  Partitioning p;
  p.node_partition.assign(n, -1);
  std::unordered_map<size_t, int32_t> index;  // group root -> partition
  for (size_t u = 0; u < n; ++u) {
    if (!supported[u]) continue;
    auto [it, added] = index.emplace(groups.find(u), static_cast<int32_t>(p.partitions.size()));
    if (added) p.partitions.emplace_back();
    p.node_partition[u] = it->second;
    p.partitions[it->second].push_back(u);
  }
  p.schedule = schedule_units(p, consumers);
  const size_t units = p.partitions.size() + static_cast<size_t>(std::count(p.node_partition.begin(), p.node_partition.end(), -1));
  if (p.schedule.size() != units) return internal_error("partition_graph: the partitions form a cycle");
  return p;
}

}  // namespace streamrt::delegate

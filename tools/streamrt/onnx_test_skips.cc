#include "onnx_test_skips.h"

#include <sstream>

#include "core/file_io.h"
#include "onnx/functions/function_op.h"
#include "onnx/importer.h"
#include "ops/op.h"

namespace streamrt::cli {
namespace {

bool device_absent(const std::string& msg) {
  return msg.find("no CUDA device") != std::string::npos || msg.find("has no cuda backend") != std::string::npos;
}

// Whether the case's model has a node whose op streamrt neither registers nor expands (the importer
// may stop at an earlier problem, such as a map-typed input, before it lists
// the ops).
bool uses_unlisted_op(const std::string& case_dir) {
  auto nodes = onnx_import::read_node_ops(case_dir + "/model.onnx");
  if (!nodes.ok()) return false;
  for (const ir::Node& n : *nodes)
    if (!ops::OpRegistry::global().find(n.op_type, n.domain) && !onnx_import::FunctionOpRegistry::global().find(n))
      return true;
  return false;
}

}  // namespace

Result<std::map<std::string, std::string>> read_expected_skips(const std::string& path) {
  auto file = InputFile::open(path, 16 << 20);
  if (!file.ok()) return file.status().with_context("expected-skips file");
  SRT_ASSIGN_OR_RETURN(std::string text, file->read_all());
  std::istringstream in(text);
  std::map<std::string, std::string> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (size_t hash = line.find('#'); hash != std::string::npos) line.erase(hash);
    std::istringstream fields(line);
    std::string name, reason;
    if (!(fields >> name)) continue;
    std::getline(fields >> std::ws, reason);
    if (reason.empty())
      return invalid_argument(path + ":" + std::to_string(n) + ": case '" + name + "' has no reason");
    if (!out.emplace(name, reason).second)
      return invalid_argument(path + ":" + std::to_string(n) + ": case '" + name + "' is listed twice");
  }
  return out;
}

CaseResult apply_skip_policy(const SkipPolicy& policy, const std::string& case_dir, CaseResult r) {
  const size_t slash = case_dir.find_last_of('/');
  const std::string case_name = slash == std::string::npos ? case_dir : case_dir.substr(slash + 1);
  const auto listed = policy.listed.find(case_name);
  if (r.outcome == CaseOutcome::kPass && listed != policy.listed.end())
    return {CaseOutcome::kFail, "passes but is listed as an expected skip (" + listed->second + "): remove it"};
  // A listed case may also fail (test data that contradicts its own model): the list says why.
  if (r.outcome == CaseOutcome::kFail && listed != policy.listed.end())
    return {CaseOutcome::kSkip, "listed (" + listed->second + "): " + r.message};
  if (r.outcome != CaseOutcome::kSkip || device_absent(r.message)) return r;
  if (policy.no_skip) return {CaseOutcome::kFail, "skipped, and every case must run: " + r.message};
  if (!policy.use_list || listed != policy.listed.end() || uses_unlisted_op(case_dir)) return r;
  return {CaseOutcome::kFail, "skipped for a reason the expected-skips file does not list: " + r.message};
}

}  // namespace streamrt::cli

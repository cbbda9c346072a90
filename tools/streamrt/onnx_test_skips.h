// Which skipped onnx-test cases are acceptable. A case skips (kUnsupported) for one of three
// reasons: the device is absent (no GPU on this machine: never the case's fault), the model uses
// an op streamrt neither registers nor expands (checked on the model's nodes), or something else
// about an op streamrt does list (a dtype, an attribute value, an old opset). The last kind must
// be listed with its reason in an expected-skips file (tests/onnx_node_skips.txt, also printed by
// `streamrt ops --markdown`), or the run fails; so does a listed case that now passes (the list
// stays true). A listed case that fails counts as skipped (a case whose own test data contradicts
// its model). --no-skip allows only the absent device.
#pragma once

#include <map>
#include <string>

#include "onnx_test_case.h"
#include "streamrt/status.h"

namespace streamrt::cli {

struct SkipPolicy {
  bool no_skip = false;                       // every case must run (absent device aside)
  bool use_list = false;                      // an expected-skips file was given
  std::map<std::string, std::string> listed;  // case name -> reason
};

// Reads "case-name  reason" lines ('#' starts a comment); errors name the file and line.
Result<std::map<std::string, std::string>> read_expected_skips(const std::string& path);

// The result of the case in folder `case_dir` (listed by its last path component) as the policy
// judges it: an unacceptable skip or a stale listing becomes a failure whose message says why.
CaseResult apply_skip_policy(const SkipPolicy& policy, const std::string& case_dir, CaseResult r);

}  // namespace streamrt::cli

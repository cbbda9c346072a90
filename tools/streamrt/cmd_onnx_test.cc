// `streamrt onnx-test PATH...`: each case runs in a child process, so a crash or a hang in
// one case is reported as that case's failure and the others still run.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <thread>

#include "commands.h"
#include "core/file_io.h"
#include "onnx_test_case.h"
#include "onnx_test_skips.h"

namespace streamrt::cli {
namespace {

struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
  std::string buffer;
  std::chrono::steady_clock::time_point start;
};

Child spawn(const std::string& dir, size_t index, const CaseSetup& setup, const CompareTolerance& tol) {
  int fds[2];
  Child c;
  c.index = index;
  c.start = std::chrono::steady_clock::now();
  if (pipe(fds) != 0) return c;
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    CaseResult r = run_case(dir, setup, tol);
    std::string line = std::to_string(static_cast<int>(r.outcome)) + "\t" + r.message;
    for (char& ch : line)
      if (ch == '\n') ch = ' ';
    ssize_t ignored = write(fds[1], line.data(), line.size());
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  c.pid = pid;
  c.fd = fds[0];
  return c;
}

// Collects a finished (or killed) child's result.
CaseResult reap(Child& c, bool timed_out, int timeout_s) {
  char buf[4096];
  ssize_t n;
  while ((n = read(c.fd, buf, sizeof buf)) > 0) c.buffer.append(buf, static_cast<size_t>(n));
  close(c.fd);
  int status = 0;
  if (timed_out) kill(c.pid, SIGKILL);
  waitpid(c.pid, &status, 0);
  if (timed_out) return {CaseOutcome::kFail, "timed out after " + std::to_string(timeout_s) + " s"};
  if (WIFSIGNALED(status)) return {CaseOutcome::kFail, std::string("crashed: ") + strsignal(WTERMSIG(status))};
  size_t tab = c.buffer.find('\t');
  if (tab == std::string::npos) return {CaseOutcome::kFail, "case process died without a result"};
  return {static_cast<CaseOutcome>(std::stoi(c.buffer.substr(0, tab))), c.buffer.substr(tab + 1)};
}

Result<DeviceType> probe_device_in_child() {
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    auto d = resolve_device("auto");
    _exit(d.ok() ? static_cast<int>(*d) : 100);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) > 1)
    return internal_error("could not probe for a CUDA device");
  return static_cast<DeviceType>(WEXITSTATUS(status));
}

std::string case_name(const std::string& dir) {
  size_t slash = dir.find_last_of('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

}  // namespace

Command add_onnx_test_command(CLI::App& app) {
  struct State {
    std::vector<std::string> paths;
    std::string device = "auto", json, expected_skips;
    int jobs = 0, timeout_s = 120;
    double rtol = 1e-3, atol = 1e-5;
    bool quiet = false, fp16 = false, bf16 = false, against_cpu = false, no_skip = false;
    PassOptions passes;
    DiagnosticOptions diagnostics;
  };
  auto s = std::make_shared<State>();
  app.add_option("paths", s->paths, "case folders or trees of them")->required();
  app.add_option("--device", s->device, "auto | cpu | cuda")->check(CLI::IsMember({"auto", "cpu", "cuda"}));
  app.add_option("--json", s->json, "write every case's result to this JSON file");
  app.add_option("-j,--jobs", s->jobs, "cases run at once (default: number of CPUs)")->check(CLI::Range(0, 256));
  app.add_option("--timeout", s->timeout_s, "seconds before a case counts as hung")->check(CLI::Range(1, 86400));
  app.add_option("--rtol", s->rtol, "relative tolerance for float outputs");
  app.add_option("--atol", s->atol, "absolute tolerance for float outputs");
  app.add_flag("-q,--quiet", s->quiet, "print only failures and the summary");
  auto* fp16 = app.add_flag("--fp16", s->fp16, "build float layers in float16 (loosen --rtol/--atol to match)");
  app.add_flag("--bf16", s->bf16, "build float layers in bfloat16 (loosen --rtol/--atol to match)")->excludes(fp16);
  app.add_flag("--against-cpu", s->against_cpu,
               "compare with the CPU backend built the same way, not the stored outputs (conformance)");
  auto* no_skip = app.add_flag("--no-skip", s->no_skip, "a skipped case fails (unless the device is absent)");
  app.add_option("--expected-skips", s->expected_skips,
                 "file of 'case reason' lines: a case that skips for another reason than an op streamrt lacks "
                 "must be listed; a listed case that passes fails")
      ->excludes(no_skip);
  add_pass_options(app, s->passes);
  add_diagnostic_options(app, s->diagnostics);
  return [s]() {
    SkipPolicy policy{s->no_skip, !s->expected_skips.empty(), {}};
    if (policy.use_list) {
      auto listed = read_expected_skips(s->expected_skips);
      if (!listed.ok()) return report_error(listed.status());
      policy.listed = std::move(listed).value();
    }
    // CUDA must not be initialized in this process: cases run in forked children, and a
    // child cannot use CUDA once its parent has. "auto" is resolved in a child of its own.
    Result<DeviceType> device = s->device == "auto" ? probe_device_in_child() : parse_device_type(s->device);
    if (!device.ok()) return report_error(device.status());
    CaseSetup setup;
    setup.device = *device;
    setup.precision = s->fp16 ? DataType::kFloat16 : s->bf16 ? DataType::kBFloat16 : DataType::kFloat32;
    setup.against_cpu = s->against_cpu;
    auto passes = make_builder_passes(s->passes);
    if (!passes.ok()) return report_error(passes.status());
    setup.passes = *passes;
    auto runtime = make_runtime_options(s->diagnostics, std::nullopt);  // each case sets its device
    if (!runtime.ok()) return report_error(runtime.status());
    setup.runtime = *runtime;
    std::vector<std::string> cases;
    for (const auto& p : s->paths) {
      auto found = find_cases(p);
      if (found.empty()) return report_error(not_found("no test cases (model.onnx) under '" + p + "'"));
      cases.insert(cases.end(), found.begin(), found.end());
    }
    const CompareTolerance tol{s->rtol, s->atol};
    const size_t jobs = s->jobs > 0 ? s->jobs : std::max(1u, std::thread::hardware_concurrency());
    std::vector<CaseResult> results(cases.size());
    std::vector<Child> running;
    size_t next = 0, passed = 0, failed = 0, skipped = 0;
    auto report = [&](size_t i, const CaseResult& raw) {
      const CaseResult r = apply_skip_policy(policy, cases[i], raw);
      results[i] = r;
      const char* tag = r.outcome == CaseOutcome::kPass ? "pass" : r.outcome == CaseOutcome::kSkip ? "skip" : "FAIL";
      (r.outcome == CaseOutcome::kPass ? passed : r.outcome == CaseOutcome::kSkip ? skipped : failed)++;
      if (!s->quiet || r.outcome == CaseOutcome::kFail)
        std::printf("%s  %s%s%s\n", tag, case_name(cases[i]).c_str(), r.message.empty() ? "" : ": ", r.message.c_str());
      std::fflush(stdout);
    };
    while (next < cases.size() || !running.empty()) {
      while (next < cases.size() && running.size() < jobs) {
        Child c = spawn(cases[next], next, setup, tol);
        if (c.pid < 0) report(next, {CaseOutcome::kFail, "could not start a process for the case"});
        else running.push_back(c);
        ++next;
      }
      std::vector<pollfd> pfds;
      for (auto& c : running) pfds.push_back({c.fd, POLLIN, 0});
      poll(pfds.data(), pfds.size(), 100);
      for (size_t k = running.size(); k-- > 0;) {
        Child& c = running[k];
        bool done = pfds[k].revents & (POLLIN | POLLHUP);
        if (done) {  // read what is there; a result is complete at EOF
          char buf[4096];
          ssize_t n = read(c.fd, buf, sizeof buf);
          if (n > 0) { c.buffer.append(buf, static_cast<size_t>(n)); done = false; }
        }
        auto age = std::chrono::steady_clock::now() - c.start;
        bool timed_out = !done && age > std::chrono::seconds(s->timeout_s);
        if (done || timed_out) {
          report(c.index, reap(c, timed_out, s->timeout_s));
          running.erase(running.begin() + static_cast<long>(k));
        }
      }
    }
    if (!s->json.empty()) {
      nlohmann::json j = nlohmann::json::array();
      const char* names[] = {"pass", "fail", "skip"};
      for (size_t i = 0; i < cases.size(); ++i)
        j.push_back({{"case", cases[i]}, {"result", names[static_cast<int>(results[i].outcome)]},
                     {"message", results[i].message}});
      const std::string text = j.dump(2) + "\n";
      if (Status st = write_file_atomic(s->json, text.data(), text.size()); !st.ok()) return report_error(st);
    }
    std::printf("%zu passed, %zu failed, %zu skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
  };
}

}  // namespace streamrt::cli

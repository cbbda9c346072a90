// streamrt: build, run, inspect engines and run ONNX backend tests.
#include <cstdio>
#include <map>

#include "commands.h"
#include "core/guard.h"

namespace streamrt::cli {

int report_error(const Status& st) {
  std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
  return 1;
}

}  // namespace streamrt::cli

int main(int argc, char** argv) {
  using namespace streamrt::cli;
  CLI::App app{"streamrt: ONNX -> optimized engine (plan) -> run, with weight streaming"};
  app.set_version_flag("--version", std::string("streamrt ") + STREAMRT_VERSION);
  app.require_subcommand(1);
  std::string log_level;
  app.add_option("--log-level", log_level,
                 "error | warning (the default) | info | verbose; before the command (also STREAMRT_LOG=LEVEL)");
  std::map<CLI::App*, Command> commands;
  // Every subcommand's --help ends with examples.
  auto add = [&](Command (*fn)(CLI::App&), const char* name, const char* help, const char* examples) {
    CLI::App* sub = app.add_subcommand(name, help);
    sub->footer(std::string("Examples:\n") + examples);
    commands[sub] = fn(*sub);
  };
  add(add_build_command, "build", "build an engine plan from an ONNX model",
      "  streamrt build model.onnx -o model.plan --profile input_ids:1x1:1x128:8x512 --fp16\n"
      "  streamrt build llama.onnx -o llama.plan --weight-streaming --cache");
  add(add_run_command, "run", "run a plan (or an ONNX model, built in memory)",
      "  streamrt run model.plan --input input_ids=ids.npy --iterations 100 --cuda-graph\n"
      "  streamrt run model.onnx --input x=x.npy --output-dir out   # dims taken from x.npy\n"
      "  streamrt run llama.plan --budget 50%");
  add(add_inspect_command, "inspect", "show a plan's I/O, layers, weights and memory plan",
      "  streamrt inspect model.plan\n"
      "  streamrt inspect llama.plan --budget 4GiB --json");
  add(add_onnx_test_command, "onnx-test", "run ONNX backend-test cases (model.onnx + test_data_set_*)",
      "  streamrt onnx-test /usr/share/libonnx-testdata/data/node -j 4 -q\n"
      "  streamrt onnx-test tests/corpus/transformers --device cuda --fp16 --rtol 2e-2 --atol 2e-2");
  add(add_ops_command, "ops", "list the supported ops and the devices that run them",
      "  streamrt ops\n"
      "  streamrt ops --markdown --expected-skips tests/onnx_node_skips.txt > docs/ops.md");
  add(add_compile_command, "compile", "compile an ONNX model into a program (.pte): engines + portable kernels",
      "  streamrt compile model.onnx -o model.pte --weight-streaming --weight-streaming-budget 8GiB\n"
      "  streamrt compile model.onnx -o model.pte --device cpu --fallback-ops CumSum");
  add(add_refit_command, "refit", "put new weights (from an ONNX model) into a plan",
      "  streamrt refit model.plan --from finetuned.onnx -o finetuned.plan");
  add(add_cache_command, "cache", "list, prune or clear the engine cache",
      "  streamrt cache list\n"
      "  streamrt cache prune --cache-dir ~/.cache/streamrt/engines --cache-max-size 10GiB");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (...) {
    return report_error(streamrt::exception_status("streamrt: reading the command line"));
  }
  if (streamrt::Status st = apply_process_options(log_level); !st.ok()) return report_error(st);
  for (auto& [sub, cmd] : commands) {
    if (!sub->parsed()) continue;
    // The library returns a Status for every failure; whatever still escapes a command (the
    // CLI's own code, a library bug) ends it with an error and exit 1, never with an abort.
    try {
      return cmd();
    } catch (...) {
      return report_error(streamrt::exception_status("streamrt " + sub->get_name()));
    }
  }
  return 1;
}

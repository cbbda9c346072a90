// Seed corpora of the fuzz targets for weights held apart from the plan (fuzz/corpus/plan_external/
// and fuzz/corpus/delegate_init/): generated here from real small plans (the plan_run seeds and
// tiny_a built with weight streaming) cut by plan::plan_parts, and checked here. Inputs named
// valid_* must load (every init and set_option passes), corrupt_* must fail with a message, and
// every buffer handed over must come back exactly once. To regenerate the committed seeds after a
// format change:
//   STREAMRT_WRITE_APART_CORPUS=fuzz/corpus build/bin/streamrt_tests --gtest_filter='ApartCorpus*'
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "corpus_test_util.h"
#include "delegate/engine_record.h"
#include "delegate_init_input.h"
#include "plan/plan.h"
#include "plan_external_input.h"
#include "streamrt/builder.h"

namespace streamrt {
namespace {

namespace fs = std::filesystem;
using testing::Seeds;
using fuzzing::DelegateInput;
using fuzzing::PlanApartInput;

std::vector<uint8_t> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  EXPECT_TRUE(in.good()) << p;
  return {std::istreambuf_iterator<char>(in), {}};
}

// A real plan by name: the plan_run seeds, and tiny_a with its weight W streamable.
struct NamedPlan {
  std::string name;
  std::vector<uint8_t> bytes;
};

std::vector<NamedPlan> real_plans() {
  std::vector<NamedPlan> out;
  const fs::path dir = fs::path(STREAMRT_SOURCE_DIR) / "fuzz" / "corpus" / "plan_run";
  for (const char* name : {"constant_gemm", "typed_initializers", "add_relu"})
    out.push_back({name, read_file(dir / ("valid_" + std::string(name) + ".plan"))});
  BuilderConfig c;
  c.weight_streaming = true;
  c.min_streamable_bytes = 1;
  c.profiles["x"] = {{1, 4}, {2, 4}, {4, 4}};
  auto tiny = build_plan_from_onnx(std::string(STREAMRT_SOURCE_DIR) + "/tests/fixtures/refit/tiny_a.onnx", c);
  EXPECT_TRUE(tiny.ok()) << tiny.status().to_string();
  out.push_back({"streaming_tiny", tiny.ok() ? *tiny : std::vector<uint8_t>()});
  return out;
}

PlanApartInput split(const std::vector<uint8_t>& whole) {
  auto parts = plan::plan_parts(whole.data(), whole.size());
  EXPECT_TRUE(parts.ok()) << parts.status().to_string();
  PlanApartInput in;
  in.head.assign(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(parts->metadata_end));
  in.weights.assign(whole.begin() + static_cast<ptrdiff_t>(parts->weights_offset),
                    whole.begin() + static_cast<ptrdiff_t>(parts->weights_offset + parts->weights_size));
  return in;
}

Seeds plan_external_seeds() {
  Seeds seeds;
  const std::vector<NamedPlan> plans = real_plans();
  for (const NamedPlan& p : plans) seeds.emplace_back("valid_" + p.name, write_plan_apart(split(p.bytes)));
  const NamedPlan& gemm = plans[0];
  auto with = [&](const std::string& name, auto edit) {
    PlanApartInput in = split(gemm.bytes);
    edit(in);
    seeds.emplace_back(name, write_plan_apart(in));
  };
  with("valid_misaligned_copied", [](PlanApartInput& in) { in.misalign = 4; });
  with("valid_aligned_16_in_place", [](PlanApartInput& in) { in.misalign = 16; });
  with("corrupt_weights_short", [](PlanApartInput& in) { in.weights.pop_back(); });
  with("corrupt_weights_bitflip", [](PlanApartInput& in) { in.weights[in.weights.size() / 2] ^= 0x08; });
  with("corrupt_no_weights", [](PlanApartInput& in) { in.weights.clear(); });
  with("corrupt_head_truncated", [](PlanApartInput& in) { in.head.pop_back(); });
  with("corrupt_head_trailing_byte", [](PlanApartInput& in) { in.head.push_back(0); });
  with("corrupt_whole_plan_as_head", [&](PlanApartInput& in) { in.head = gemm.bytes; });
  return seeds;
}

// The record of a plan (its metadata from the loaded engine, as the adapters write it), the
// weights apart under `key` unless it is empty.
std::vector<uint8_t> record_of(const std::vector<uint8_t>& whole, const std::string& key) {
  auto rt = Runtime::create({DeviceType::kCpu});
  EXPECT_TRUE(rt.ok());
  auto engine = (*rt)->load_engine_bytes(whole);
  EXPECT_TRUE(engine.ok()) << engine.status().to_string();
  delegate::EngineRecord meta;
  meta.engine_name = (*engine)->name();
  meta.streamrt_version = STREAMRT_VERSION;
  meta.streamable_size = (*engine)->streamable_weights_size();
  for (const TensorDesc& d : (*engine)->io_tensors()) (d.is_input ? meta.inputs : meta.outputs).push_back(d.name);
  if (key.empty()) return delegate::serialize_engine_record(meta, whole);
  meta.weights_key = key;
  return delegate::serialize_engine_record(meta, split(whole).head);
}

CompileSpec spec(const std::string& key, const std::string& value) { return {key, {value.begin(), value.end()}}; }
BackendOption text_option(const std::string& key, const std::string& value) { return {key, value}; }

Seeds delegate_init_seeds() {
  const std::vector<NamedPlan> plans = real_plans();
  const NamedPlan& tiny = plans.back();
  const NamedPlan& gemm = plans[0];
  const std::string tiny_key = "streamrt/tiny/weights", gemm_key = "streamrt/gemm/weights";
  // One engine, weights apart.
  DelegateInput one;
  one.engines.push_back({record_of(tiny.bytes, tiny_key), {}});
  one.named_data[tiny_key] = split(tiny.bytes).weights;
  // Two engines of one program, each with its own key, the budget split between them.
  DelegateInput two;
  two.engines.push_back({record_of(tiny.bytes, tiny_key), {spec("engine_index", "0"), spec("engine_count", "2")}});
  two.engines.push_back({record_of(gemm.bytes, gemm_key), {spec("engine_index", "1"), spec("engine_count", "2")}});
  two.named_data = {{tiny_key, split(tiny.bytes).weights}, {gemm_key, split(gemm.bytes).weights}};

  Seeds seeds;
  auto with = [&](const std::string& name, const DelegateInput& base, auto edit) {
    DelegateInput in = base;
    edit(in);
    seeds.emplace_back(name, write_delegate_input(in));
  };
  auto same = [](DelegateInput&) {};
  with("valid_apart", one, same);
  with("valid_apart_budgets", one, [](DelegateInput& in) {
    in.load_options = {text_option(delegate::kBudgetKey, "50%")};
    in.live_options = {text_option(delegate::kBudgetPerEngineKey, "0")};
  });
  with("valid_apart_int_budget_misaligned", one, [](DelegateInput& in) {
    in.load_options = {{delegate::kBudgetKey, int64_t{16}}};
    in.misalign = 3;
  });
  with("valid_inline", one, [&](DelegateInput& in) {
    in.engines[0].record = record_of(gemm.bytes, "");
    in.named_data.clear();
  });
  with("valid_two_engines", two, [](DelegateInput& in) {
    for (auto& e : in.engines) e.specs.push_back(spec(delegate::kBudgetKey, "auto"));
    in.load_options = {{delegate::kBudgetKey, int64_t{24}}};
    in.live_options = {{delegate::kBudgetKey, int64_t{0}}};
  });
  with("corrupt_missing_named_data", one, [](DelegateInput& in) { in.named_data.clear(); });
  with("corrupt_named_data_bitflip", one, [&](DelegateInput& in) { in.named_data[tiny_key][5] ^= 0x20; });
  with("corrupt_named_data_of_another_engine", one,
       [&](DelegateInput& in) { in.named_data[tiny_key] = split(gemm.bytes).weights; });
  with("corrupt_unknown_option", one, [](DelegateInput& in) { in.load_options = {text_option("weight_streaming_budgit", "1")}; });
  with("corrupt_budget_value", one, [](DelegateInput& in) { in.load_options = {text_option(delegate::kBudgetKey, "8gb")}; });
  with("corrupt_both_budget_keys", one, [](DelegateInput& in) {
    in.load_options = {text_option(delegate::kBudgetKey, "1KiB"), text_option(delegate::kBudgetPerEngineKey, "1KiB")};
  });
  with("corrupt_bool_budget", one, [](DelegateInput& in) { in.load_options = {{delegate::kBudgetKey, true}}; });
  with("corrupt_negative_budget", one, [](DelegateInput& in) { in.load_options = {{delegate::kBudgetKey, int64_t{-1}}}; });
  with("corrupt_live_budget", one, [](DelegateInput& in) { in.live_options = {text_option(delegate::kBudgetKey, "101%")}; });
  with("corrupt_compile_spec_budget", one, [](DelegateInput& in) { in.engines[0].specs = {spec(delegate::kBudgetKey, "lots")}; });
  with("corrupt_engine_index", one, [](DelegateInput& in) {
    in.engines[0].specs = {spec("engine_index", "2"), spec("engine_count", "2")};
  });
  with("corrupt_engine_count_text", one, [](DelegateInput& in) { in.engines[0].specs = {spec("engine_count", "2x")}; });
  with("corrupt_engine_index_taken", two, [](DelegateInput& in) { in.engines[1].specs[0] = spec("engine_index", "0"); });
  with("corrupt_compile_specs_differ", two, [](DelegateInput& in) { in.engines[1].specs.push_back(spec(delegate::kBudgetKey, "1")); });
  return seeds;
}

// valid_* must pass and corrupt_* fail with a message; either way every buffer comes back once.
Status plan_external_outcome(const std::vector<uint8_t>& bytes) {
  auto rt = Runtime::create({DeviceType::kCpu});
  EXPECT_TRUE(rt.ok());
  int released = 0;
  Status st = fuzzing::load_plan_apart(**rt, fuzzing::read_plan_apart(bytes), &released).status();
  EXPECT_EQ(released, 1);
  return st;
}

Status delegate_init_outcome(const std::vector<uint8_t>& bytes) {
  const fuzzing::DelegateRun run = fuzzing::run_delegate_input(fuzzing::read_delegate_input(bytes));
  EXPECT_EQ(run.records_released, static_cast<int>(run.inits));
  EXPECT_EQ(run.data_released, run.data_taken);
  if (run.status.ok()) {
    EXPECT_GT(run.engines, 0u);
  }
  return run.status;
}

constexpr char kWrite[] = "STREAMRT_WRITE_APART_CORPUS";
TEST(ApartCorpus, PlanExternalSeedsBehaveAsNamed) {
  testing::check_seeds_and_maybe_write(plan_external_seeds(), kWrite, "plan_external", plan_external_outcome);
}
TEST(ApartCorpus, DelegateInitSeedsBehaveAsNamed) {
  testing::check_seeds_and_maybe_write(delegate_init_seeds(), kWrite, "delegate_init", delegate_init_outcome);
}
TEST(ApartCorpus, CommittedPlanExternalCorpusBehavesAsNamed) {
  testing::check_committed_corpus("plan_external", plan_external_outcome);
}
TEST(ApartCorpus, CommittedDelegateInitCorpusBehavesAsNamed) {
  testing::check_committed_corpus("delegate_init", delegate_init_outcome);
}

// The frames read back as written, and a size past the end is cut to it.
TEST(ApartCorpus, FramesRoundTripAndCutAtTheEnd) {
  DelegateInput in;
  in.engines.push_back({{1, 2, 3}, {spec("engine_count", "1")}});
  in.named_data["k"] = {9, 8};
  in.load_options = {{"a", int64_t{-5}}, {"b", true}, text_option("c", "x=y")};
  in.misalign = 7;
  const std::vector<uint8_t> bytes = write_delegate_input(in);
  const DelegateInput back = fuzzing::read_delegate_input(bytes);
  ASSERT_EQ(back.engines.size(), 1u);
  EXPECT_EQ(back.engines[0].record, in.engines[0].record);
  ASSERT_EQ(back.engines[0].specs.size(), 1u);
  EXPECT_EQ(back.engines[0].specs[0].value_string(), "1");
  EXPECT_EQ(back.named_data, in.named_data);
  ASSERT_EQ(back.load_options.size(), 3u);
  EXPECT_EQ(std::get<int64_t>(back.load_options[0].value), -5);
  EXPECT_TRUE(std::get<bool>(back.load_options[1].value));
  EXPECT_EQ(std::get<std::string>(back.load_options[2].value), "x=y");
  EXPECT_EQ(back.misalign, 7);

  const std::vector<uint8_t> cut = {'P', 200, 0, 0, 0, 'S', 'R', 'T'};
  const PlanApartInput p = fuzzing::read_plan_apart(cut);
  EXPECT_EQ(p.head, (std::vector<uint8_t>{'S', 'R', 'T'}));
  EXPECT_TRUE(p.weights.empty());
}

}  // namespace
}  // namespace streamrt

// StreamRTBackend inside ExecuTorch's runtime: the committed fixtures (made by ExecuTorch's AOT
// flow, see scripts/make_executorch_fixtures.py) load through executorch::extension::Module with
// load-time options, run, match eager PyTorch's outputs, and report their budgets through
// ExecuTorch's get_option. Streamable sizes: streaming / baked 64 KiB (Linear 128x128 float32),
// graph_break 64 KiB + 128 KiB (Linear 128x256), no_streaming none. baked carries
// weight_streaming_budget=16KiB as a compile spec.
#include "et_test_util.h"

namespace streamrt::et::testing {
namespace {

constexpr uint64_t kKiB = 1024;
const std::vector<int> kVec = {1, 128};

// A core whose automatic budget is `bytes`; each call records how many engines it was given.
Status inject_automatic_budget(uint64_t bytes, std::vector<size_t>* calls) {
  return registered_backend().reset_core({[=](std::span<Engine* const> engines) {
    calls->push_back(engines.size());
    return bytes;
  }});
}

TEST_F(EtBackendTest, RegisteredInExecuTorchsRegistry) {
  EXPECT_EQ(etr::get_backend_class(kBackendName), &registered_backend());
}

TEST_F(EtBackendTest, AutomaticBudgetWithoutOptionsRunsAndMatchesPyTorch) {
  auto m = load_ok("streaming");
  EXPECT_EQ(registered_backend().loaded_engines(), 1u);
  EXPECT_EQ(get_string("streamable_weights_size"), "65536");
  // The default automatic budget: this machine's free memory far exceeds 64 KiB -> clamped.
  EXPECT_EQ(budget(), 64 * kKiB);
  expect_forward_matches(*m, "streaming", kVec);
}

TEST_F(EtBackendTest, LoadTimeBudgetForms) {
  struct Case {
    const char* value;
    uint64_t want;
  };
  for (const Case& c : {Case{"16KiB", 16 * kKiB}, Case{"20000", 20000}, Case{"50%", 32 * kKiB}, Case{"0", 0},
                        Case{"1GiB", 64 * kKiB} /* clamped to the streamable size */}) {
    LoadOptions o;
    o.set("weight_streaming_budget", c.value);
    auto m = load_ok("streaming", o.map());
    EXPECT_EQ(budget(), c.want) << c.value;
    expect_forward_matches(*m, "streaming", kVec);
  }
  LoadOptions as_int;
  as_int.set("weight_streaming_budget", 12345);
  auto m = load_ok("streaming", as_int.map());
  EXPECT_EQ(budget(), 12345u);
}

TEST_F(EtBackendTest, AutoAndPerEngineAtLoadTime) {
  std::vector<size_t> calls;
  ASSERT_TRUE(inject_automatic_budget(30000, &calls).ok());
  {
    LoadOptions o;
    o.set("weight_streaming_budget", "auto");
    auto m = load_ok("streaming", o.map());
    EXPECT_EQ(budget(), 30000u);
  }
  LoadOptions each;
  each.set("weight_streaming_budget_per_engine", "8KiB");
  auto m = load_ok("streaming", each.map());
  EXPECT_EQ(budget(), 8 * kKiB);
  EXPECT_EQ(calls, std::vector<size_t>{1});  // only the "auto" load asked for it
}

TEST_F(EtBackendTest, BakedBudgetThenLoadTimeOverridesIt) {
  {
    auto m = load_ok("baked");
    EXPECT_EQ(budget(), 16 * kKiB);  // the compile spec
    expect_forward_matches(*m, "baked", kVec);
  }
  {
    LoadOptions o;
    o.set("weight_streaming_budget", "4KiB");
    auto m = load_ok("baked", o.map());
    EXPECT_EQ(budget(), 4 * kKiB);
  }
  ASSERT_TRUE(registered_backend().reset_core({[](std::span<Engine* const>) { return uint64_t{777}; }}).ok());
  LoadOptions o;
  o.set("weight_streaming_budget", "auto");
  auto m = load_ok("baked", o.map());
  EXPECT_EQ(budget(), 777u);  // an explicit "auto" at load time beats the baked value
}

TEST_F(EtBackendTest, GraphBreakSplitsTheTotalByStreamableSize) {
  {
    auto m = load_ok("graph_break");
    EXPECT_EQ(get_string("streamable_weights_size.0"), "65536");
    EXPECT_EQ(get_string("streamable_weights_size.1"), "131072");
    expect_forward_matches(*m, "graph_break", kVec);
  }
  LoadOptions o;
  o.set("weight_streaming_budget", "96KiB");
  auto m = load_ok("graph_break", o.map());
  EXPECT_EQ(budget(0), 32 * kKiB);  // 96 KiB split 1:2
  EXPECT_EQ(budget(1), 64 * kKiB);
  EXPECT_EQ(budget(), 96 * kKiB);
  expect_forward_matches(*m, "graph_break", kVec);
}

TEST_F(EtBackendTest, GraphBreakPerEngineAndAutomaticComputedOnce) {
  {
    LoadOptions o;
    o.set("weight_streaming_budget_per_engine", "40KiB");
    auto m = load_ok("graph_break", o.map());
    EXPECT_EQ(budget(0), 40 * kKiB);
    EXPECT_EQ(budget(1), 40 * kKiB);
  }
  std::vector<size_t> calls;
  ASSERT_TRUE(inject_automatic_budget(30000, &calls).ok());
  auto m = load_ok("graph_break");
  EXPECT_EQ(calls, std::vector<size_t>{2});  // once for the program, seeing both engines
  EXPECT_EQ(budget(0), 10000u);
  EXPECT_EQ(budget(1), 20000u);
  expect_forward_matches(*m, "graph_break", kVec);
}

TEST_F(EtBackendTest, ExplicitBudgetOnAnEngineWithoutStreamableWeightsIsLoggedAndIgnored) {
  LoadOptions o;
  o.set("weight_streaming_budget", "16KiB");
  ::testing::internal::CaptureStderr();
  auto m = load_ok("no_streaming", o.map());
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("has no streamable weights"), std::string::npos) << log;
  EXPECT_EQ(budget(), 0u);
  EXPECT_EQ(get_string("streamable_weights_size"), "0");
  expect_forward_matches(*m, "no_streaming", {2, 16});
}

TEST_F(EtBackendTest, SetOptionChangesTheBudgetOfALoadedProgram) {
  EXPECT_EQ(set_budget_option("weight_streaming_budget", "8KiB"), Error::InvalidState);  // nothing loaded
  auto m = load_ok("graph_break");
  expect_forward_matches(*m, "graph_break", kVec);
  ASSERT_EQ(set_budget_option("weight_streaming_budget", "48KiB"), Error::Ok);
  EXPECT_EQ(budget(0), 16 * kKiB);
  EXPECT_EQ(budget(1), 32 * kKiB);
  expect_forward_matches(*m, "graph_break", kVec);  // contexts recreated, same outputs
  ASSERT_EQ(set_budget_option("weight_streaming_budget_per_engine", "0"), Error::Ok);
  EXPECT_EQ(budget(), 0u);
  expect_forward_matches(*m, "graph_break", kVec);
  // A failed change keeps the budgets in force.
  EXPECT_EQ(set_budget_option("weight_streaming_budget", "8gb"), Error::InvalidArgument);
  EXPECT_EQ(set_budget_option("weight_streaming_budgt", "8KiB"), Error::InvalidArgument);
  EXPECT_EQ(budget(), 0u);
  expect_forward_matches(*m, "graph_break", kVec);
}

TEST_F(EtBackendTest, SetOptionRejectsWrongTypes) {
  auto m = load_ok("streaming");
  etr::BackendOption o{};
  std::snprintf(o.key, sizeof(o.key), "weight_streaming_budget");
  o.value = true;
  EXPECT_EQ(etr::set_option(kBackendName, etr::Span<etr::BackendOption>(&o, 1)), Error::InvalidArgument);
  o.value = -5;
  EXPECT_EQ(etr::set_option(kBackendName, etr::Span<etr::BackendOption>(&o, 1)), Error::InvalidArgument);
  o.value = 4096;
  EXPECT_EQ(etr::set_option(kBackendName, etr::Span<etr::BackendOption>(&o, 1)), Error::Ok);
  EXPECT_EQ(budget(), 4096u);
}

TEST_F(EtBackendTest, GetOptionNamesUnknownKeys) {
  auto m = load_ok("streaming");
  EXPECT_EQ(get_string("weight_streaming_budget.1"), "error " + std::to_string(static_cast<int>(Error::NotFound)));
  EXPECT_EQ(get_string("no_such_option"), "error " + std::to_string(static_cast<int>(Error::NotFound)));
  etr::BackendOption n{};
  std::snprintf(n.key, sizeof(n.key), "num_engines");
  ASSERT_EQ(etr::get_option(kBackendName, etr::Span<etr::BackendOption>(&n, 1)), Error::Ok);
  EXPECT_EQ(std::get<int>(n.value), 1);
}

TEST_F(EtBackendTest, MalformedLoadTimeOptionsFailTheLoad) {
  struct Case {
    const char* what;
    LoadOptions opts;
  };
  std::vector<Case> cases(5);
  cases[0] = {"malformed value"};
  cases[0].opts.set("weight_streaming_budget", "8gb");
  cases[1] = {"negative value"};
  cases[1].opts.set("weight_streaming_budget", "-1");
  cases[2] = {"unknown key"};
  cases[2].opts.set("weight_streaming_budgt", "8KiB");
  cases[3] = {"both keys"};
  cases[3].opts.set("weight_streaming_budget", "8KiB").set("weight_streaming_budget_per_engine", "4KiB");
  cases[4] = {"bool"};
  cases[4].opts.set("weight_streaming_budget", true);
  for (Case& c : cases) {
    Error err = Error::Ok;
    auto m = load("streaming", c.opts.map(), &err);
    EXPECT_EQ(err, Error::InvalidArgument) << c.what;
    EXPECT_EQ(registered_backend().loaded_engines(), 0u) << c.what;
  }
}

TEST_F(EtBackendTest, DestroyRunsOnceForEveryEngine) {
  const uint64_t before = registered_backend().destroyed_engines();
  {
    auto m = load_ok("graph_break");
    EXPECT_EQ(registered_backend().loaded_engines(), 2u);
    expect_forward_matches(*m, "graph_break", kVec);
  }
  EXPECT_EQ(registered_backend().loaded_engines(), 0u);
  EXPECT_EQ(registered_backend().destroyed_engines(), before + 2);
  // A handle that is not (or no longer) ours is ignored, never freed.
  int not_a_handle = 0;
  registered_backend().destroy(&not_a_handle);
  registered_backend().destroy(nullptr);
  EXPECT_EQ(registered_backend().destroyed_engines(), before + 2);
}

TEST_F(EtBackendTest, TwoProgramsLoadedAtOnceKeepTheirOwnGroups) {
  LoadOptions o;
  o.set("weight_streaming_budget", "8KiB");
  auto a = load_ok("streaming", o.map());
  auto b = load_ok("graph_break");
  EXPECT_EQ(registered_backend().loaded_engines(), 3u);
  EXPECT_EQ(budget(0), 8 * kKiB);  // load order: streaming's engine, then graph_break's two
  EXPECT_EQ(budget(1), 64 * kKiB);
  EXPECT_EQ(budget(2), 128 * kKiB);
  expect_forward_matches(*a, "streaming", kVec);
  expect_forward_matches(*b, "graph_break", kVec);
}

}  // namespace
}  // namespace streamrt::et::testing

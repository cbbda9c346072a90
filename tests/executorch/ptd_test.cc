// Engine weights in ExecuTorch named data: the *_ptd fixtures (scripts/make_executorch_fixtures.py,
// weights="ptd") keep each engine's weights section in <name>.ptd beside a small .pte, with the
// weights and inputs of the inline fixture they are named after. Loaded through Module(pte, ptd)
// they run like the inline program at every budget form; without the .ptd, or with a truncated or
// corrupted one, loading fails cleanly (no engine stays loaded).
#include <filesystem>
#include <fstream>

#include "et_test_util.h"

extern "C" const char* streamrt_executorch_last_error(void);

namespace streamrt::et::testing {
namespace {

constexpr uint64_t kKiB = 1024;
const std::vector<int> kVec = {1, 128};

// A fixture with its .ptd (or `ptd`), `forward` loaded under `options`.
std::unique_ptr<Module> load_ptd(const std::string& name, const std::string& ptd, Error* err,
                                 const etr::LoadBackendOptionsMap& options = {}) {
  auto m = std::make_unique<Module>(fixture(name + ".pte"), ptd.empty() ? fixture(name + ".ptd") : ptd,
                                    Module::LoadMode::Mmap);
  *err = m->load(options);
  if (*err == Error::Ok) *err = m->load_method("forward");
  return m;
}

std::unique_ptr<Module> load_ptd_ok(const std::string& name, const etr::LoadBackendOptionsMap& options = {}) {
  Error err = Error::Ok;
  auto m = load_ptd(name, "", &err, options);
  EXPECT_EQ(err, Error::Ok) << "loading " << name << " with its .ptd: " << streamrt_executorch_last_error();
  return m;
}

// Forward's output on the fixture's saved input.
std::vector<float> forward(Module& m, const std::string& name) {
  std::vector<float> in = read_floats(fixture(name + ".input0.bin"));
  auto input = ::executorch::extension::from_blob(in.data(), {kVec.begin(), kVec.end()});
  auto out = m.forward(std::vector<etr::EValue>{etr::EValue(*input)});
  EXPECT_TRUE(out.ok());
  if (!out.ok()) return {};
  const auto& t = (*out)[0].toTensor();
  return {t.const_data_ptr<float>(), t.const_data_ptr<float>() + t.numel()};
}

// A copy of a fixture's .ptd in a temporary folder, changed by `edit`.
std::string edited_ptd(const std::string& name, const std::function<void(std::vector<uint8_t>&)>& edit) {
  std::vector<uint8_t> b = read_bytes(fixture(name + ".ptd"));
  edit(b);
  const auto path = std::filesystem::temp_directory_path() /
                    ("srt_et_" + name + "_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
                     ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".ptd");
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return path.string();
}

TEST_F(EtBackendTest, WeightsLeaveTheProgramForTheDataFile) {
  const auto pte = std::filesystem::file_size(fixture("streaming_ptd.pte"));
  const auto ptd = std::filesystem::file_size(fixture("streaming_ptd.ptd"));
  EXPECT_LT(pte, 32 * kKiB) << "the 64 KiB weight still sits in the .pte";
  EXPECT_GE(ptd, 64 * kKiB);
  EXPECT_GT(std::filesystem::file_size(fixture("streaming.pte")), 64 * kKiB);
}

TEST_F(EtBackendTest, LoadsFromPtdAndRunsLikeTheInlineProgram) {
  std::vector<float> inline_out;
  {
    auto m = load_ok("streaming");
    inline_out = forward(*m, "streaming");
  }
  auto m = load_ptd_ok("streaming_ptd");
  EXPECT_EQ(get_string("streamable_weights_size"), "65536");
  EXPECT_EQ(budget(), 64 * kKiB);  // automatic, clamped
  expect_forward_matches(*m, "streaming_ptd", kVec);  // eager PyTorch's output
  EXPECT_EQ(forward(*m, "streaming_ptd"), inline_out);  // the same engine: bitwise
}

TEST_F(EtBackendTest, PtdWithFileLoaderToo) {
  // Module's default loader reads the segment into memory of its own (16-byte aligned): the
  // engine takes that buffer as it is.
  auto m = std::make_unique<Module>(fixture("streaming_ptd.pte"), fixture("streaming_ptd.ptd"));
  ASSERT_EQ(m->load_method("forward"), Error::Ok) << streamrt_executorch_last_error();
  expect_forward_matches(*m, "streaming_ptd", kVec);
}

TEST_F(EtBackendTest, PtdBudgetFormsAndSplit) {
  for (const char* v : {"16KiB", "50%", "0"}) {
    LoadOptions o;
    o.set("weight_streaming_budget", v);
    auto m = load_ptd_ok("streaming_ptd", o.map());
    EXPECT_EQ(budget(), std::string(v) == "0" ? 0u : std::string(v) == "50%" ? 32 * kKiB : 16 * kKiB) << v;
    expect_forward_matches(*m, "streaming_ptd", kVec);
  }
  std::vector<float> inline_out;
  {
    auto m = load_ok("graph_break");
    inline_out = forward(*m, "graph_break");
  }
  LoadOptions o;
  o.set("weight_streaming_budget", "96KiB");
  auto m = load_ptd_ok("graph_break_ptd", o.map());
  EXPECT_EQ(budget(0), 32 * kKiB);  // split 1:2 over the two engines, each with its own key
  EXPECT_EQ(budget(1), 64 * kKiB);
  expect_forward_matches(*m, "graph_break_ptd", kVec);
  EXPECT_EQ(forward(*m, "graph_break_ptd"), inline_out);
  ASSERT_EQ(set_budget_option("weight_streaming_budget_per_engine", "0"), Error::Ok);  // live
  EXPECT_EQ(budget(), 0u);
  EXPECT_EQ(forward(*m, "graph_break_ptd"), inline_out);
}

TEST_F(EtBackendTest, WithoutThePtdInitFailsNamingTheKey) {
  Error err = Error::Ok;
  auto m = load("streaming_ptd", {}, &err);  // the .pte alone
  EXPECT_EQ(err, Error::InvalidProgram);
  const std::string msg = streamrt_executorch_last_error();
  EXPECT_NE(msg.find("named data 'streamrt/streamrt_0/weights-"), std::string::npos) << msg;
  EXPECT_EQ(registered_backend().loaded_engines(), 0u);
}

TEST_F(EtBackendTest, AnotherProgramsPtdFailsNamingTheKey) {
  Error err = Error::Ok;
  auto m = load_ptd("streaming_ptd", fixture("graph_break_ptd.ptd"), &err);
  EXPECT_NE(err, Error::Ok);
  EXPECT_EQ(registered_backend().loaded_engines(), 0u);
}

TEST_F(EtBackendTest, TruncatedPtdFailsCleanly) {
  for (size_t cut : {size_t{1}, size_t{4096}, size_t{40000}}) {
    const std::string ptd = edited_ptd("streaming_ptd", [&](std::vector<uint8_t>& b) { b.resize(b.size() - cut); });
    Error err = Error::Ok;
    auto m = load_ptd("streaming_ptd", ptd, &err);
    EXPECT_NE(err, Error::Ok) << "cut " << cut;
    EXPECT_EQ(registered_backend().loaded_engines(), 0u);
    m.reset();
    std::filesystem::remove(ptd);
  }
}

TEST_F(EtBackendTest, CorruptedWeightsInPtdAreInvalidProgram) {
  // The middle of the file lies in the 64 KiB weight (the file is the weights section and a
  // small header).
  const std::string ptd = edited_ptd("streaming_ptd", [](std::vector<uint8_t>& b) { b[b.size() / 2] ^= 0x01; });
  Error err = Error::Ok;
  auto m = load_ptd("streaming_ptd", ptd, &err);
  EXPECT_EQ(err, Error::InvalidProgram);
  const std::string msg = streamrt_executorch_last_error();
  EXPECT_NE(msg.find("weights checksum mismatch"), std::string::npos) << msg;
  EXPECT_EQ(registered_backend().loaded_engines(), 0u);
  m.reset();
  std::filesystem::remove(ptd);
}

// Mappings of the file `path` in this process (/proc/self/maps).
int mappings_of(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    if (line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0) ++n;
  return n;
}

TEST_F(EtBackendTest, TheMappedPtdLivesAsLongAsTheEngines) {
  const std::string ptd = std::filesystem::canonical(fixture("graph_break_ptd.ptd")).string();
  const uint64_t destroyed = registered_backend().destroyed_engines();
  auto m = load_ptd_ok("graph_break_ptd");
  EXPECT_EQ(registered_backend().loaded_engines(), 2u);
  // Each engine reads its named data where ExecuTorch's mmap loader mapped it.
  EXPECT_GE(mappings_of(ptd), 2);
  m.reset();
  EXPECT_EQ(registered_backend().destroyed_engines(), destroyed + 2);
  EXPECT_EQ(mappings_of(ptd), 0);  // every FreeableBuffer was freed
}

}  // namespace
}  // namespace streamrt::et::testing

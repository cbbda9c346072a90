// StreamRTBackend's init on malformed input, called as ExecuTorch calls it (BackendInitContext,
// FreeableBuffer, CompileSpec): corrupt engine records, compile specs, engine groups. Every
// failure leaves no engine loaded. One case goes through a whole corrupted .pte file too.
#include <filesystem>

#include "et_test_util.h"

namespace streamrt::et::testing {
namespace {

// The engine record inside a fixture program: its container header says where it ends.
std::vector<uint8_t> record_of(const std::string& pte) {
  const std::vector<uint8_t> b = read_bytes(fixture(pte));
  static const char kMagic[8] = {'S', 'R', 'T', 'E', 'N', 'G', 'N', '\0'};
  auto at = std::search(b.begin(), b.end(), kMagic, kMagic + 8);
  EXPECT_NE(at, b.end());
  uint64_t section_offset = 0, section_size = 0;
  std::memcpy(&section_offset, &*at + 32, 8);
  std::memcpy(&section_size, &*at + 40, 8);
  return {at, at + static_cast<ptrdiff_t>(section_offset + section_size)};
}

using Specs = std::vector<std::pair<std::string, std::string>>;

class DirectInit : public EtBackendTest {
 protected:
  // init as Method::init calls it, for the method "forward" of a program instance whose
  // allocator is `alloc_`; the handle is kept for destroy.
  Error init(std::vector<uint8_t>* record, const Specs& specs, etr::MemoryAllocator* alloc = nullptr) {
    std::vector<etr::CompileSpec> cs;
    for (const auto& [k, v] : specs)
      cs.push_back({k.c_str(), {const_cast<char*>(v.data()), v.size()}});
    etr::BackendInitContext ctx(alloc ? alloc : &alloc_, nullptr, "forward");
    etr::FreeableBuffer buf(record ? record->data() : nullptr, record ? record->size() : 0, nullptr);
    auto h = registered_backend().init(ctx, record ? &buf : nullptr, {cs.data(), cs.size()});
    if (!h.ok()) return h.error();
    handles_.push_back(*h);
    return Error::Ok;
  }
  void TearDown() override {
    for (void* h : handles_) registered_backend().destroy(h);
    EtBackendTest::TearDown();
  }

  uint8_t arena_[64] = {};
  etr::MemoryAllocator alloc_{sizeof(arena_), arena_};
  std::vector<void*> handles_;
};

TEST_F(DirectInit, ValidRecordLoads) {
  auto rec = record_of("streaming.pte");
  ASSERT_EQ(init(&rec, {}), Error::Ok);
  EXPECT_EQ(registered_backend().loaded_engines(), 1u);
  EXPECT_EQ(get_string("streamable_weights_size"), "65536");
}

TEST_F(DirectInit, CorruptRecords) {
  const std::vector<uint8_t> good = record_of("streaming.pte");
  struct Case {
    const char* what;
    std::function<void(std::vector<uint8_t>&)> corrupt;
    Error want;
  };
  const std::vector<Case> cases = {
      {"magic", [](auto& r) { r[0] ^= 0xff; }, Error::InvalidProgram},
      {"another format version", [](auto& r) { r[8] = 2; }, Error::DelegateInvalidCompatibility},
      {"metadata byte", [](auto& r) { r[64 + 20] ^= 0x5a; }, Error::InvalidProgram},
      {"plan byte", [](auto& r) { r[r.size() - 9] ^= 0x5a; }, Error::InvalidProgram},
      {"truncated", [](auto& r) { r.resize(r.size() - 100); }, Error::InvalidProgram},
      {"header only", [](auto& r) { r.resize(64); }, Error::InvalidProgram},
      {"empty", [](auto& r) { r.clear(); }, Error::InvalidProgram},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> rec = good;
    c.corrupt(rec);
    EXPECT_EQ(init(&rec, {}), c.want) << c.what;
    EXPECT_EQ(registered_backend().loaded_engines(), 0u) << c.what;
  }
  EXPECT_EQ(init(nullptr, {}), Error::InvalidProgram) << "no processed buffer";
}

// Every single-byte flip and every cut of a whole engine record (the small one without streamable
// weights): init returns an error and loads nothing, or loads the engine (a flip in bytes nothing
// reads); never a crash. The record's checksums make errors the rule.
TEST_F(DirectInit, EveryFlippedOrCutByteOfARecord) {
  const std::vector<uint8_t> good = record_of("no_streaming.pte");
  size_t refused = 0;
  auto check = [&](std::vector<uint8_t> rec, const std::string& what) {
    const Error e = init(&rec, {});
    if (e != Error::Ok) {
      ++refused;
      EXPECT_TRUE(e == Error::InvalidProgram || e == Error::DelegateInvalidCompatibility) << what;
      EXPECT_EQ(registered_backend().loaded_engines(), handles_.size()) << what;
    }
    for (void* h : handles_) registered_backend().destroy(h);
    handles_.clear();
  };
  for (size_t i = 0; i < good.size(); ++i) {
    std::vector<uint8_t> rec = good;
    rec[i] ^= 0x5a;
    check(std::move(rec), "byte " + std::to_string(i) + " flipped");
  }
  for (size_t n = 0; n < good.size(); ++n) check({good.begin(), good.begin() + static_cast<ptrdiff_t>(n)}, "cut at " + std::to_string(n));
  EXPECT_GT(refused, good.size() * 3 / 2) << "of " << 2 * good.size() << " mutants";
  EXPECT_EQ(registered_backend().loaded_engines(), 0u);
}

TEST_F(DirectInit, MalformedCompileSpecs) {
  const std::vector<uint8_t> good = record_of("streaming.pte");
  const std::vector<std::pair<Specs, Error>> cases = {
      {{{"engine_index", "x"}}, Error::InvalidProgram},
      {{{"engine_index", ""}}, Error::InvalidProgram},
      {{{"engine_count", "0"}}, Error::InvalidProgram},
      {{{"engine_index", "1"}, {"engine_count", "1"}}, Error::InvalidProgram},
      {{{"engine_count", "99999999"}}, Error::InvalidProgram},
      {{{"weight_streaming_budget", "8gb"}}, Error::InvalidProgram},  // a baked budget is part of the program
      {{{"weight_streaming_budget", "1KiB"}, {"weight_streaming_budget_per_engine", "1KiB"}}, Error::InvalidProgram},
  };
  for (const auto& [specs, want] : cases) {
    std::vector<uint8_t> rec = good;
    EXPECT_EQ(init(&rec, specs), want) << specs[0].first << "=" << specs[0].second;
    EXPECT_EQ(registered_backend().loaded_engines(), 0u);
  }
}

TEST_F(DirectInit, GroupsCompleteOnlyWithEveryEngineAndRefuseATakenIndex) {
  std::vector<uint8_t> a = record_of("streaming.pte"), b = a, c = a;
  const Specs first = {{"engine_index", "0"}, {"engine_count", "2"}};
  ASSERT_EQ(init(&a, first), Error::Ok);
  EXPECT_EQ(init(&b, first), Error::InvalidProgram) << "index 0 is taken";
  // Until engine 1 arrives the program has no budget to change.
  EXPECT_EQ(set_budget_option("weight_streaming_budget", "1KiB"), Error::InvalidState);
  ASSERT_EQ(init(&c, {{"engine_index", "1"}, {"engine_count", "2"}}), Error::Ok);
  EXPECT_EQ(budget(), 128 * 1024u);  // automatic, both engines complete
  // Another program instance (its own allocator) is a group of its own.
  uint8_t other_arena[64];
  etr::MemoryAllocator other(sizeof(other_arena), other_arena);
  std::vector<uint8_t> d = record_of("streaming.pte");
  EXPECT_EQ(init(&d, {{"engine_index", "0"}, {"engine_count", "1"}}, &other), Error::Ok);
  EXPECT_EQ(registered_backend().loaded_engines(), 3u);
}

TEST_F(EtBackendTest, CorruptRecordInsideAProgramFailsItsLoad) {
  std::vector<uint8_t> pte = read_bytes(fixture("streaming.pte"));
  static const char kMagic[8] = {'S', 'R', 'T', 'E', 'N', 'G', 'N', '\0'};
  auto at = std::search(pte.begin(), pte.end(), kMagic, kMagic + 8);
  ASSERT_NE(at, pte.end());
  at[8] = 7;  // record format version 7
  const auto path = std::filesystem::temp_directory_path() / "streamrt_et_corrupt_record.pte";
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(pte.data()), pte.size());
  Module m(path.string());
  EXPECT_EQ(m.load_method("forward"), Error::DelegateInvalidCompatibility);
  EXPECT_EQ(registered_backend().loaded_engines(), 0u);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace streamrt::et::testing

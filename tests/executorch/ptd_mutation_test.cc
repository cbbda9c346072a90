// A corrupted .ptd through ExecuTorch's own loader: streaming_ptd.pte with its .ptd flipped (every
// byte xor 0xff, and those of the first 4 KiB, which hold the FlatTensor header, FlatBuffer and
// padding and the start of the weights section, xor 0x01 too) or cut at every length. check_ptd (streamrt_executorch.h) refuses it, or Module load + forward fails with an
// error, leaving no engine loaded, or gives the intact file's output bitwise. Never a crash.
// ExecuTorch 1.5.1 itself does not verify a .ptd's FlatBuffer: without check_ptd the first mutant
// (byte 0, the FlatBuffer's root offset) crashes its FlatTensorDataMap::load. The .ptd is handed
// over in memory (BufferDataLoader), so no file is written per mutant.
#include <executorch/extension/data_loader/buffer_data_loader.h>
#include <executorch/extension/flat_tensor/serialize/flat_tensor_header.h>

#include <filesystem>

#include "et_test_util.h"

namespace streamrt::et::testing {
namespace {

using ::executorch::extension::BufferDataLoader;

constexpr size_t kHeadBytes = 4096;
const std::vector<int> kDims = {1, 128};

class PtdMutation : public EtBackendTest {
 protected:
  void SetUp() override {
    EtBackendTest::SetUp();
    pte_ = read_bytes(fixture("streaming_ptd.pte"));
    ptd_ = read_bytes(fixture("streaming_ptd.ptd"));
    input_ = read_floats(fixture("streaming_ptd.input0.bin"));
    ASSERT_FALSE(pte_.empty());
    ASSERT_GT(ptd_.size(), kHeadBytes);
  }

  // Checks `size` bytes of `ptd` (check_ptd), loads the program with them as its named data and
  // runs forward: the error of whichever step failed, else Ok with the output in *out.
  Error run(const uint8_t* ptd, size_t size, std::vector<float>* out) {
    if (Status st = check_ptd({ptd, size}); !st.ok()) {
      EXPECT_EQ(st.code(), StatusCode::kInvalidProgram);
      EXPECT_FALSE(st.message().empty());
      ++checked_out_;
      return Error::InvalidProgram;
    }
    Module m(std::make_unique<BufferDataLoader>(pte_.data(), pte_.size()), nullptr, nullptr, nullptr,
             std::make_unique<BufferDataLoader>(ptd, size));
    Error e = m.load_method("forward");
    if (e != Error::Ok) {
      EXPECT_EQ(registered_backend().loaded_engines(), 0u) << "a failed load left an engine";
      return e;
    }
    auto x = ::executorch::extension::from_blob(input_.data(), {kDims.begin(), kDims.end()});
    auto result = m.forward(std::vector<etr::EValue>{etr::EValue(*x)});
    if (!result.ok()) return result.error();
    const auto& t = (*result)[0].toTensor();
    out->assign(t.const_data_ptr<float>(), t.const_data_ptr<float>() + t.numel());
    return Error::Ok;
  }

  std::vector<uint8_t> pte_, ptd_;
  std::vector<float> input_;
  size_t checked_out_ = 0;  // mutants check_ptd refused
};

TEST_F(PtdMutation, EveryCutAndFlippedByteFailsCleanlyOrRunsAsTheIntactFile) {
  std::vector<float> want;
  ASSERT_EQ(run(ptd_.data(), ptd_.size(), &want), Error::Ok) << "the intact .ptd";
  ASSERT_EQ(want.size(), 128u);
  auto header = ::executorch::extension::FlatTensorHeader::Parse(ptd_.data(), ptd_.size());
  ASSERT_TRUE(header.ok());
  const uint64_t segments = header->segment_base_offset;  // the weights section starts here
  ASSERT_LT(segments, kHeadBytes);
  ASSERT_EQ(segments + header->segment_data_size, ptd_.size()) << "the file ends with the weights";

  size_t refused = 0, accepted = 0, flips = 0;
  std::vector<size_t> accepted_at;
  // One mutant: refused, or (loaded) forward matches bitwise.
  auto check = [&](const uint8_t* ptd, size_t size, const std::string& what) {
    std::vector<float> got;
    const Error e = run(ptd, size, &got);
    EXPECT_EQ(registered_backend().loaded_engines(), 0u) << what;
    if (e != Error::Ok) return ++refused, false;
    ++accepted;
    EXPECT_EQ(got, want) << what << " loaded and ran with another output";
    return true;
  };
  std::vector<uint8_t> b = ptd_;
  for (size_t i = 0; i < b.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0xff}}) {
      if (i >= kHeadBytes && mask == 0x01) continue;
      b[i] ^= mask;
      ++flips;
      if (check(b.data(), b.size(), "byte " + std::to_string(i) + " ^ " + std::to_string(mask))) {
        accepted_at.push_back(i);
        EXPECT_LT(i, segments) << "a flipped weight byte was accepted (the weights checksum must catch it)";
      }
      b[i] ^= mask;
    }
  }
  // A cut .ptd always lacks weight bytes: none may load.
  for (size_t n = 0; n < ptd_.size(); ++n) EXPECT_FALSE(check(ptd_.data(), n, "cut at " + std::to_string(n)));
  std::string at;
  for (size_t i : accepted_at) at += " " + std::to_string(i);
  std::printf("%zu flips + %zu cuts: %zu refused (%zu by check_ptd), %zu loaded with the intact output "
              "(bytes:%s)\n", flips, ptd_.size(), refused, checked_out_, accepted, at.c_str());
  EXPECT_GT(refused, ptd_.size());
}

// check_ptd_file, which streamrt.executorch.load runs on data_path, says what is wrong.
TEST_F(PtdMutation, CheckPtdFileNamesWhatIsWrong) {
  EXPECT_TRUE(check_ptd_file(fixture("streaming_ptd.ptd")).ok());
  EXPECT_TRUE(check_ptd(ptd_).ok());
  EXPECT_EQ(check_ptd_file(fixture("no_such.ptd")).code(), StatusCode::kIoError);
  const auto path = std::filesystem::temp_directory_path() / "srt_et_check_ptd.ptd";
  auto expect_refused = [&](std::vector<uint8_t> b, const std::string& says) {
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    const Status st = check_ptd_file(path.string());
    EXPECT_EQ(st.code(), StatusCode::kInvalidProgram) << says;
    EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
  };
  std::vector<uint8_t> b = ptd_;
  b[0] ^= 0x01;  // the FlatBuffer's root offset: ExecuTorch's own loader would read past the buffer
  expect_refused(b, "fails the FlatBuffers verifier");
  expect_refused({ptd_.begin(), ptd_.end() - 1}, "extends past the end of the file");
  expect_refused({ptd_.begin(), ptd_.begin() + 40}, "no valid FlatTensor header");
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace streamrt::et::testing

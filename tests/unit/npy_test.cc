// NumPy .npy reader and writer (src/core/npy.cc): round trips for every dtype, the exact
// header layout numpy writes, and malformed files.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/npy.h"
#include "onnx_model_util.h"

namespace streamrt {
namespace {

using testing::TempDir;
using testing::write_file;

// A .npy file as numpy writes it: version 1.0 (or 2.0 / 3.0 with a 4-byte header length),
// header padded with spaces and ended by '\n' so that the data starts at a multiple of 64.
std::string npy_bytes(const std::string& dict, const std::string& data, int major = 1) {
  const size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  const size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (major != 1) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  return out + header + data;
}

std::string dict(const std::string& descr, const std::string& shape, const char* fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

::testing::AssertionResult fails_with(const Result<Tensor>& r, StatusCode code, const std::string& part) {
  if (r.ok()) return ::testing::AssertionFailure() << "parsed, expected " << status_code_name(code);
  if (r.status().code() != code || r.status().message().find(part) == std::string::npos)
    return ::testing::AssertionFailure() << "got " << r.status().to_string() << ", expected "
                                         << status_code_name(code) << " with '" << part << "'";
  return ::testing::AssertionSuccess();
}

struct DtypeCase {
  DataType dtype;
  const char* descr;
  DataType loads_as;  // bfloat16 has no numpy dtype: its "<u2" file reads back as uint16
};
const DtypeCase kDtypes[] = {
    {DataType::kFloat32, "<f4", DataType::kFloat32},   {DataType::kFloat16, "<f2", DataType::kFloat16},
    {DataType::kBFloat16, "<u2", DataType::kUInt16},   {DataType::kInt64, "<i8", DataType::kInt64},
    {DataType::kInt32, "<i4", DataType::kInt32},       {DataType::kInt8, "|i1", DataType::kInt8},
    {DataType::kUInt8, "|u1", DataType::kUInt8},       {DataType::kBool, "|b1", DataType::kBool},
    {DataType::kFloat64, "<f8", DataType::kFloat64},   {DataType::kInt16, "<i2", DataType::kInt16},
    {DataType::kUInt16, "<u2", DataType::kUInt16},     {DataType::kUInt32, "<u4", DataType::kUInt32},
    {DataType::kUInt64, "<u8", DataType::kUInt64}};

TEST(Npy, SaveWritesNumpyLayoutAndLoadsBackForEveryDtype) {
  TempDir dir;
  const std::pair<Dims, const char*> shapes[] = {
      {{2, 3}, "(2, 3)"}, {{5}, "(5,)"}, {{}, "()"}, {{0, 3}, "(0, 3)"}, {{1, 1, 2, 1}, "(1, 1, 2, 1)"}};
  for (const auto& [dt, descr, loads_as] : kDtypes) {
    for (const auto& [dims, shape_text] : shapes) {
      SCOPED_TRACE(std::string(descr) + " " + shape_text);
      auto t = Tensor::allocate(dt, dims);
      ASSERT_TRUE(t.ok());
      auto* p = static_cast<uint8_t*>(t->mutable_data());
      for (size_t i = 0; i < t->nbytes(); ++i) p[i] = dt == DataType::kBool ? (i % 3 == 0) : static_cast<uint8_t>(i * 29 + 3);
      const std::string path = dir.file("t.npy");
      ASSERT_TRUE(save_npy(*t, path).ok());

      // Byte-exact against the layout numpy itself writes.
      const std::string data(reinterpret_cast<const char*>(p), t->nbytes());
      EXPECT_EQ(read_all(path), npy_bytes(dict(descr, shape_text), data));

      auto back = load_npy(path);
      ASSERT_TRUE(back.ok()) << back.status().to_string();
      EXPECT_EQ(back->dtype(), loads_as);
      EXPECT_EQ(uint16_bits_as(*back, dt).dtype(), dt);
      EXPECT_EQ(back->dims(), dims);
      ASSERT_EQ(back->nbytes(), t->nbytes());
      if (t->nbytes()) {
        EXPECT_EQ(std::memcmp(back->data(), t->data(), t->nbytes()), 0);
      }
    }
  }
}

TEST(Npy, ParsesHeadersNumpyWrites) {
  const std::string f32 = std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8);  // 1.0, -2.0
  // Key order and spacing vary between numpy versions; versions 2.0 and 3.0 have 4-byte lengths.
  for (const std::string& d : {dict("<f4", "(2,)"), std::string("{'shape': (2,), 'fortran_order': False, 'descr': '<f4'}"),
                               std::string("{'descr':'<f4','fortran_order':False,'shape':(2,)}")}) {
    for (int major : {1, 2, 3}) {
      auto t = parse_npy(npy_bytes(d, f32, major), "x.npy");
      ASSERT_TRUE(t.ok()) << d << " v" << major << ": " << t.status().to_string();
      EXPECT_EQ(t->dims(), Dims{2});
      EXPECT_EQ(t->data_as<float>()[0], 1.f);
      EXPECT_EQ(t->data_as<float>()[1], -2.f);
    }
  }
  // numpy writes `'shape': (3, 4)`; other writers leave out the space.
  auto t = parse_npy(npy_bytes(dict("|u1", "(3,4)"), std::string(12, 'a')), "x.npy");
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->dims(), (Dims{3, 4}));
}

TEST(Npy, RejectsMalformedFiles) {
  const std::string ok_file = npy_bytes(dict("<i4", "(2,)"), std::string(8, '\x01'));
  ASSERT_TRUE(parse_npy(ok_file, "ok.npy").ok());

  std::string bad_magic = ok_file;
  bad_magic[1] = 'X';
  EXPECT_TRUE(fails_with(parse_npy(bad_magic, "m.npy"), StatusCode::kInvalidArgument, "m.npy"));
  EXPECT_TRUE(fails_with(parse_npy("", "e.npy"), StatusCode::kInvalidArgument, "magic"));
  EXPECT_TRUE(fails_with(parse_npy(ok_file.substr(0, 8), "t.npy"), StatusCode::kInvalidArgument, "t.npy"));
  // Every truncation is rejected (the data length no longer matches, or the header is cut).
  for (size_t n = 0; n < ok_file.size(); ++n)
    EXPECT_FALSE(parse_npy(ok_file.substr(0, n), "t.npy").ok()) << n;
  std::string long_header = ok_file;
  long_header[8] = '\xff';  // header length past the end
  EXPECT_TRUE(fails_with(parse_npy(long_header, "h.npy"), StatusCode::kInvalidArgument, "truncated"));
  EXPECT_TRUE(fails_with(parse_npy(npy_bytes(dict("<i4", "(2,)"), "", 2).substr(0, 11), "v2.npy"),
                         StatusCode::kInvalidArgument, "truncated"));
  std::string v4 = ok_file;
  v4[6] = 4;
  EXPECT_TRUE(fails_with(parse_npy(v4, "v.npy"), StatusCode::kInvalidArgument, "version 4"));

  EXPECT_TRUE(fails_with(parse_npy(npy_bytes(dict("<i4", "(3,)"), std::string(8, 'x')), "s.npy"),
                         StatusCode::kInvalidArgument, "needs 12"));
  EXPECT_TRUE(fails_with(parse_npy(npy_bytes(dict("<i4", "(2,)"), std::string(9, 'x')), "s.npy"),
                         StatusCode::kInvalidArgument, "holds 9"));
  EXPECT_TRUE(fails_with(parse_npy(npy_bytes(dict("<i4", "(2, 2)", "True"), std::string(16, 'x')), "f.npy"),
                         StatusCode::kUnsupported, "Fortran"));
  for (const char* descr : {">f8", ">f4", "<U5", "O", "<c8", ">u4", ""})
    EXPECT_TRUE(fails_with(parse_npy(npy_bytes(dict(descr, "(1,)"), std::string(4, 'x')), "d.npy"),
                           StatusCode::kUnsupported, std::string("'") + descr + "'"));
  EXPECT_TRUE(fails_with(parse_npy(npy_bytes("{'fortran_order': False, 'shape': (1,), }", "x"), "n.npy"),
                         StatusCode::kInvalidArgument, "descr"));
  EXPECT_TRUE(fails_with(parse_npy(npy_bytes("{'descr': '|u1', 'fortran_order': False, }", "x"), "n.npy"),
                         StatusCode::kInvalidArgument, "shape"));
  EXPECT_FALSE(parse_npy(npy_bytes(dict("|u1", "(99999999999, 99999999999)"), "x"), "big.npy").ok());
  EXPECT_FALSE(parse_npy(npy_bytes(dict("|u1", "(9999999999999999999999,)"), "x"), "big.npy").ok());
  EXPECT_FALSE(parse_npy(npy_bytes(dict("|u1", "(-1,)"), "x"), "neg.npy").ok());

  TempDir dir;
  EXPECT_TRUE(fails_with(load_npy(dir.file("missing.npy")), StatusCode::kIoError, "missing.npy"));
  write_file(dir.file("bad.npy"), bad_magic);
  EXPECT_TRUE(fails_with(load_npy(dir.file("bad.npy")), StatusCode::kInvalidArgument, "bad.npy"));
}

TEST(Npy, HugeOrHostileHeadersDoNotCrash) {
  // Headers of tens of kilobytes (versions 2/3 allow 4 GiB) must not exhaust the stack.
  for (size_t n : {size_t{70000}, size_t{1} << 20}) {
    const std::string blob(n, 'a');
    EXPECT_FALSE(parse_npy(npy_bytes("{'descr': '" + blob + "', 'shape': (1,)}", "x", 2), "h.npy").ok());
    EXPECT_FALSE(parse_npy(npy_bytes("{'descr': '<f4', 'shape': (" + std::string(n, ' ') + "1,)}", "x", 2), "h.npy").ok());
    std::string digits;
    for (size_t i = 0; i < n / 2; ++i) digits += "1,";
    EXPECT_FALSE(parse_npy(npy_bytes("{'descr': '|u1', 'shape': (" + digits + ")}", "x", 3), "h.npy").ok());
  }
  std::mt19937 rng(3);
  const std::string base = npy_bytes(dict("<f4", "(2, 2)"), std::string(16, '\x01'));
  for (int i = 0; i < 3000; ++i) {
    std::string b = base;
    for (int k = 0; k < 1 + i % 3; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    auto r = parse_npy(b, "fuzz");
    if (!r.ok()) {
      EXPECT_FALSE(r.status().message().empty());
    }
  }
}

TEST(Npy, SaveRejectsWhatItCannotWrite) {
  TempDir dir;
  auto t = Tensor::allocate(DataType::kFloat32, {2});
  ASSERT_TRUE(t.ok());
  EXPECT_FALSE(save_npy(*t, dir.file("no/such/dir/x.npy")).ok());
  EXPECT_FALSE(save_npy(Tensor(), dir.file("undefined.npy")).ok());
}

}  // namespace
}  // namespace streamrt

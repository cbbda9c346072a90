#include "core/npy.h"

#include <cstring>

#include "core/file_io.h"

namespace streamrt {
namespace {

// bfloat16 has no numpy dtype: it is written as its uint16 bits ("<u2") and reads back as
// uint16; a caller that knows it wants bfloat16 reinterprets it (Tensor::retyped).
const char* descr_of(DataType t) {
  switch (t) {
    case DataType::kFloat32: return "<f4";
    case DataType::kFloat16: return "<f2";
    case DataType::kBFloat16: return "<u2";
    case DataType::kFloat64: return "<f8";
    case DataType::kInt64: return "<i8";
    case DataType::kInt32: return "<i4";
    case DataType::kInt16: return "<i2";
    case DataType::kInt8: return "|i1";
    case DataType::kUInt8: return "|u1";
    case DataType::kUInt16: return "<u2";
    case DataType::kUInt32: return "<u4";
    case DataType::kUInt64: return "<u8";
    case DataType::kBool: return "|b1";
    default: return "";
  }
}

Result<DataType> dtype_of(const std::string& d, const std::string& what) {
  static const std::pair<const char*, DataType> table[] = {
      {"<f4", DataType::kFloat32}, {"<f2", DataType::kFloat16}, {"<f8", DataType::kFloat64},
      {"<i8", DataType::kInt64},   {"<i4", DataType::kInt32},   {"<i2", DataType::kInt16},
      {"|i1", DataType::kInt8},    {"|u1", DataType::kUInt8},   {"<u2", DataType::kUInt16},
      {"<u4", DataType::kUInt32},  {"<u8", DataType::kUInt64},  {"|b1", DataType::kBool}};
  for (const auto& [s, t] : table)
    if (d == s) return t;
  return unsupported(what + ": numpy dtype '" + d + "' is not supported");
}

// The header is a Python dict literal, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }.
// A small hand-written parser (std::regex recurses per character and overflows the stack on
// headers of a few ten thousand bytes, which versions 2 and 3 allow up to 4 GiB).
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& what) : s_(text), what_(what) {}

  struct Fields {
    std::string descr;
    bool fortran_order = false;
    Dims shape;
  };

  Result<Fields> parse() {
    Fields f;
    bool has_descr = false, has_order = false, has_shape = false;
    skip_ws();
    if (!eat('{')) return error("expected '{'");
    while (true) {
      skip_ws();
      if (eat('}')) break;
      SRT_ASSIGN_OR_RETURN(std::string key, quoted());
      skip_ws();
      if (!eat(':')) return error("expected ':' after '" + key + "'");
      skip_ws();
      if (key == "descr" && !has_descr) {
        SRT_ASSIGN_OR_RETURN(f.descr, quoted());
        has_descr = true;
      } else if (key == "fortran_order" && !has_order) {
        if (word("True")) f.fortran_order = true;
        else if (!word("False")) return error("fortran_order is neither True nor False");
        has_order = true;
      } else if (key == "shape" && !has_shape) {
        SRT_ASSIGN_OR_RETURN(f.shape, tuple());
        has_shape = true;
      } else {
        return error("unexpected or repeated key '" + key + "'");
      }
      skip_ws();
      if (eat('}')) break;
      if (!eat(',')) return error("expected ',' or '}'");
    }
    skip_ws();
    if (pos_ != s_.size()) return error("trailing characters after the header dict");
    if (!has_descr) return error("no descr");
    if (!has_shape) return error("no shape");
    return f;
  }

 private:
  Status error(const std::string& msg) const {
    return invalid_argument(what_ + ": bad .npy header at byte " + std::to_string(pos_) + ": " + msg);
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool eat(char c) {
    if (pos_ >= s_.size() || s_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  bool word(const char* w) {
    const size_t n = std::strlen(w);
    if (s_.compare(pos_, n, w) != 0) return false;
    pos_ += n;
    return true;
  }
  Result<std::string> quoted() {
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) return error("expected a quoted string");
    const char q = s_[pos_++];
    const size_t end = s_.find(q, pos_);
    if (end == std::string::npos) return error("unterminated string");
    std::string out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  Result<Dims> tuple() {
    if (!eat('(')) return error("shape is not a tuple");
    Dims dims;
    while (true) {
      skip_ws();
      if (eat(')')) break;
      const size_t start = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      if (pos_ == start) return error("shape holds a non-number");
      if (pos_ - start > 15) return error("dimension too large");
      if (dims.size() == kMaxRank) return error("more than " + std::to_string(kMaxRank) + " dimensions");
      dims.push_back(std::stoll(s_.substr(start, pos_ - start)));
      skip_ws();
      if (eat(')')) break;
      if (!eat(',')) return error("expected ',' or ')' in shape");
    }
    return dims;
  }

  static constexpr size_t kMaxRank = 64;  // numpy's own limit (NPY_MAXDIMS)
  const std::string& s_;
  const std::string& what_;
  size_t pos_ = 0;
};

}  // namespace

Result<Tensor> parse_npy(const std::string& bytes, const std::string& what) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return invalid_argument(what + ": not a .npy file (bad magic)");
  const uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len, start;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) return invalid_argument(what + ": truncated .npy header");
    header_len = 0;
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(bytes[8 + i]);
    start = 12;
  } else {
    return invalid_argument(what + ": unknown .npy version " + std::to_string(major));
  }
  if (header_len > bytes.size() - start) return invalid_argument(what + ": truncated .npy header");
  SRT_ASSIGN_OR_RETURN(auto header, HeaderParser(bytes.substr(start, header_len), what).parse());
  SRT_ASSIGN_OR_RETURN(DataType dtype, dtype_of(header.descr, what));
  if (header.fortran_order) return unsupported(what + ": Fortran-ordered arrays are not supported");
  const Dims& dims = header.shape;
  auto numel = checked_numel(dims, INT64_MAX / 8);
  if (!numel.ok()) return invalid_argument(what + ": " + numel.status().message());
  const size_t data_start = start + header_len;
  const uint64_t need = static_cast<uint64_t>(*numel) * dtype_size(dtype);
  if (bytes.size() - data_start != need)
    return invalid_argument(what + ": holds " + std::to_string(bytes.size() - data_start) +
                            " data bytes, shape " + dims_to_string(dims) + " needs " + std::to_string(need));
  return Tensor::from_bytes(dtype, dims, bytes.data() + data_start, need);
}

Result<Tensor> load_npy(const std::string& path, uint64_t max_bytes) {
  SRT_ASSIGN_OR_RETURN(std::string bytes, read_whole_file(path, max_bytes));
  return parse_npy(bytes, path);
}

Status save_npy(const Tensor& t, const std::string& path) {
  if (*descr_of(t.dtype()) == '\0')
    return invalid_argument("cannot write '" + path + "': dtype " + dtype_name(t.dtype()) + " has no .npy form");
  std::string shape;
  for (int64_t d : t.dims()) shape += std::to_string(d) + ", ";
  if (t.dims().size() > 1) shape.resize(shape.size() - 2);
  if (t.dims().size() == 1) shape.resize(shape.size() - 1);
  std::string header = std::string("{'descr': '") + descr_of(t.dtype()) +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const uint16_t len = static_cast<uint16_t>(header.size());
  std::string preamble("\x93NUMPY\x01\x00", 8);
  preamble += static_cast<char>(len & 0xff);
  preamble += static_cast<char>(len >> 8);
  preamble += header;
  return write_file_atomic(path, [&](const WriteSink& sink) {
    SRT_RETURN_IF_ERROR(sink(preamble.data(), preamble.size()));
    return sink(t.data(), t.nbytes());
  });
}

}  // namespace streamrt

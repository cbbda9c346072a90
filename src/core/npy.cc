#include "core/npy.h"

#include <fstream>
#include <regex>

namespace streamrt {
namespace {

const char* descr_of(DataType t) {
  switch (t) {
    case DataType::kFloat32: return "<f4";
    case DataType::kFloat16: return "<f2";
    case DataType::kBFloat16: return "<u2";
    case DataType::kInt64: return "<i8";
    case DataType::kInt32: return "<i4";
    case DataType::kInt8: return "|i1";
    case DataType::kUInt8: return "|u1";
    case DataType::kBool: return "|b1";
    default: return "";
  }
}

Result<DataType> dtype_of(const std::string& d, const std::string& what) {
  static const std::pair<const char*, DataType> table[] = {
      {"<f4", DataType::kFloat32}, {"<f2", DataType::kFloat16}, {"<i8", DataType::kInt64},
      {"<i4", DataType::kInt32},   {"|i1", DataType::kInt8},    {"|u1", DataType::kUInt8},
      {"|b1", DataType::kBool},    {"<u2", DataType::kBFloat16}};
  for (const auto& [s, t] : table)
    if (d == s) return t;
  return unsupported(what + ": numpy dtype '" + d + "' is not supported");
}

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
  const std::string header = bytes.substr(start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']*)'")))
    return invalid_argument(what + ": .npy header has no descr");
  SRT_ASSIGN_OR_RETURN(DataType dtype, dtype_of(m[1], what));
  if (std::regex_search(header, std::regex("'fortran_order'\\s*:\\s*True")))
    return unsupported(what + ": Fortran-ordered arrays are not supported");
  if (!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)")))
    return invalid_argument(what + ": .npy header has no shape");
  Dims dims;
  std::string shape = m[1];
  std::regex num("\\d+");
  for (auto it = std::sregex_iterator(shape.begin(), shape.end(), num); it != std::sregex_iterator(); ++it) {
    if (it->str().size() > 15) return invalid_argument(what + ": dimension too large");
    dims.push_back(std::stoll(it->str()));
  }
  auto numel = checked_numel(dims, INT64_MAX / 8);
  if (!numel.ok()) return invalid_argument(what + ": " + numel.status().message());
  const size_t data_start = start + header_len;
  const uint64_t need = static_cast<uint64_t>(*numel) * dtype_size(dtype);
  if (bytes.size() - data_start != need)
    return invalid_argument(what + ": holds " + std::to_string(bytes.size() - data_start) +
                            " data bytes, shape " + dims_to_string(dims) + " needs " + std::to_string(need));
  return Tensor::from_bytes(dtype, dims, bytes.data() + data_start, need);
}

Result<Tensor> load_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_npy(bytes, path);
}

Status save_npy(const Tensor& t, const std::string& path) {
  std::string shape;
  for (int64_t d : t.dims()) shape += std::to_string(d) + ", ";
  if (t.dims().size() > 1) shape.resize(shape.size() - 2);
  if (t.dims().size() == 1) shape.resize(shape.size() - 1);
  std::string header = std::string("{'descr': '") + descr_of(t.dtype()) +
                       "', 'fortran_order': False, 'shape': (" + shape + "), }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) return io_error("cannot write '" + path + "'");
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff));
  out.put(static_cast<char>(len >> 8));
  out << header;
  out.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.nbytes()));
  if (!out) return io_error("write to '" + path + "' failed");
  return ok_status();
}

}  // namespace streamrt

// The program file (.pte): in-memory form, writer, reader and verifier.
//
// A program file is laid out as:
//   [header, 64 bytes, little endian]
//   [program: a FlatBuffer (src/program/program.fbs, file identifier "SRTX")]
//   [zero padding to a 4096-byte boundary]
//   [segments section: delegate blobs and constant tensors, each at a 64-byte aligned offset
//    inside it, zero padding between them]
// This is the container of program/container.h (magic "SRTPROG\0"): the header holds the
// format version, offset/size of both parts and an XXH3-64 checksum of the FlatBuffer; each
// segment's checksum is in the FlatBuffer's segment table. A program without segments ends
// right after the FlatBuffer. read_program() runs the container's checks (container.h), then
// the FlatBuffers verifier, decoding (every enum checked), and the semantic checks of
// verify_program():
//   - segments: offset 64-aligned, [offset, offset + size) inside the section, checksums match
//     (the reader checks these against the bytes), the bytes between and after segments zero;
//   - methods: at least one, names non-empty and unique;
//   - values: known tags; tensors of a known dtype with dims >= -1 whose byte size fits int64;
//     a constant tensor has static dims and names a segment of exactly its byte size; a tensor
//     list names constant tensors only;
//   - inputs and outputs name values; inputs are neither constants nor listed twice;
//   - instructions: exactly one of kernel / delegate; every index in range; kernel inputs are
//     tensors (or -1), outputs are non-constant tensors that are not method inputs; each value
//     is written by at most one instruction, and read only after it is written (inputs,
//     constants and scalars count as written); a delegate call names a delegate of the method;
//     kernel attributes have known kinds and unique names, tensor attributes exactly their bytes;
//   - method outputs are written by the end (or are inputs, constants or scalars);
//   - delegates: a non-empty backend name, a segment in range, non-empty unique spec keys.
// Any failure is kInvalidProgram with a message naming the field and its values; another
// format version is kIncompatible. Nothing proportional to a size claimed by the file is
// allocated before that size is checked against the file.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "program/container.h"
#include "streamrt/backend.h"
#include "streamrt/program.h"

namespace streamrt {

namespace program {

inline constexpr char kProgramMagic[8] = {'S', 'R', 'T', 'P', 'R', 'O', 'G', '\0'};
inline constexpr uint32_t kProgramFormatVersion = 1;
inline constexpr uint64_t kSegmentsAlignment = 4096;
inline constexpr uint64_t kSegmentAlignment = 64;

// The file is a container (program/container.h) of this format.
inline constexpr ContainerFormat kProgramFormat = {kProgramMagic, kProgramFormatVersion, "SRTX",
                                                   kSegmentsAlignment, false, "program", "segments section"};

struct ValueData {
  EValue::Tag tag = EValue::Tag::kNone;
  std::string name;
  DataType dtype = DataType::kUndefined;  // kTensor
  Dims dims;                              // kTensor
  int32_t constant_segment = -1;          // kTensor: its data
  int64_t int_value = 0;
  double double_value = 0;
  bool bool_value = false;
  std::vector<int64_t> int_list;
  std::vector<double> double_list;
  std::vector<bool> bool_list;
  std::vector<int32_t> tensor_list;  // indices of constant tensor values
};

struct DelegateCallData {
  int32_t delegate = -1;
  std::vector<int32_t> inputs, outputs;
};

struct Instruction {
  enum class Kind : uint8_t { kKernelCall, kDelegateCall };
  Kind kind = Kind::kKernelCall;
  // kKernelCall: op_type, domain, opset, attributes; inputs/outputs are value indices.
  ir::Node kernel;
  DelegateCallData delegate;  // kDelegateCall
};

struct DelegateData {
  std::string backend;
  int32_t segment = -1;
  std::vector<CompileSpec> compile_specs;
};

struct MethodData {
  std::string name;
  std::vector<ValueData> values;
  std::vector<int32_t> inputs, outputs;
  std::vector<Instruction> instructions;
  std::vector<DelegateData> delegates;
};

struct SegmentData {
  uint64_t offset = 0;  // from the start of the segments section
  uint64_t size = 0;
  uint64_t checksum = 0;
};

struct ProgramData {
  std::string streamrt_version;
  std::vector<MethodData> methods;
  std::vector<SegmentData> segments;
};

// Serializes `program` around `segments` (parallel to program.segments, whose offsets, sizes
// and checksums are (re)computed here). Semantic validity is the caller's: see verify_program.
Result<std::vector<uint8_t>> serialize_program(ProgramData& program,
                                               const std::vector<std::vector<uint8_t>>& segments);
// Same, written to `path` atomically (temporary file, fsync, rename).
Status write_program(ProgramData& program, const std::vector<std::vector<uint8_t>>& segments,
                     const std::string& path);
// Low level, for tools and tests: a file from `program` exactly as given (segment table
// untouched, nothing validated) around the raw `segments_section`, with a correct header and
// checksum, so that tests can build semantically broken programs that reach the late checks.
Result<std::vector<uint8_t>> assemble_program(const ProgramData& program,
                                              std::span<const uint8_t> segments_section);

// Runs the semantic checks listed at the top of this file (segment bytes not included).
// kInvalidProgram naming the method, value, instruction or delegate.
Status verify_program(const ProgramData& program, uint64_t segments_section_size);

}  // namespace program

// A program read back: its data plus the bytes that hold the segments.
struct LoadedProgram {
  program::ProgramData data;
  const uint8_t* segments = nullptr;   // the segments section (nullptr when empty)
  std::shared_ptr<const void> holder;  // keeps those bytes alive (a mapping or a copy)
  uint64_t file_size = 0;
  // Bytes of segment `i` (verified to be inside the section).
  std::span<const uint8_t> segment(size_t i) const {
    const auto& s = data.segments[i];
    return {segments + s.offset, static_cast<size_t>(s.size)};
  }
};

namespace program {
// Maps and fully verifies a program file (see the top of this file).
Result<LoadedProgram> read_program(const std::string& path);
// Verifies a program held in memory; `holder` keeps the bytes alive (may be null when the
// caller guarantees it). Bytes not 64-byte aligned are first copied into an aligned buffer.
Result<LoadedProgram> read_program_bytes(const uint8_t* data, size_t size, std::shared_ptr<const void> holder);
}  // namespace program

}  // namespace streamrt

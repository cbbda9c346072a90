// The engine record: StreamRTBackend's processed blob for one lowered subgraph (the
// Torch-TensorRT runtime's serialized engine info, made robust).
//
// A container (src/program/container.h) with the magic "SRTENGN\0":
//   [header, 64 bytes]
//   [metadata: a FlatBuffer (src/delegate/engine_record.fbs, identifier "SRTR")]
//   [zero padding to a 64-byte boundary]
//   [the plan: a streamrt plan file, byte for byte (src/plan/plan.h), to the end]
// The plan carries its own checksums, checked when the engine is deserialized. A record whose
// weights are held apart (weights_key set) carries the plan up to the end of its metadata; the
// weights section is the host runtime's named data under that key (plan::read_plan_external).
//
// read_engine_record() runs the container's checks (a record of another format version is
// kIncompatible; the plan must be present), the FlatBuffers verifier, then: a non-empty engine
// name, a known device kind, at least one output, binding names non-empty and unique across
// inputs and outputs. Anything else is kInvalidProgram naming the field (the record is part
// of a program), prefixed "engine record: ".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "plan/plan.h"
#include "program/container.h"

namespace streamrt::delegate {

inline constexpr char kRecordMagic[8] = {'S', 'R', 'T', 'E', 'N', 'G', 'N', '\0'};
inline constexpr uint32_t kRecordFormatVersion = 1;
inline constexpr uint64_t kRecordPlanAlignment = 64;

inline constexpr program::ContainerFormat kRecordFormat = {kRecordMagic, kRecordFormatVersion, "SRTR",
                                                           kRecordPlanAlignment, true, "engine record", "plan"};

struct EngineRecord {
  std::string engine_name;
  std::string streamrt_version;
  plan::DeviceInfo device;
  std::vector<std::string> inputs, outputs;  // binding names
  uint64_t streamable_size = 0;
  std::string weights_key;  // named data holding the plan's weights section ("": in the plan)
};

// The record of `meta` around `plan` (bytes of a plan file).
std::vector<uint8_t> serialize_engine_record(const EngineRecord& meta, std::span<const uint8_t> plan);

struct RecordView {
  EngineRecord meta;
  std::span<const uint8_t> plan;  // inside the bytes given to read_engine_record
};
// Verifies a record (see the top of this file); the view points into `bytes`.
Result<RecordView> read_engine_record(std::span<const uint8_t> bytes);

// "cpu" or "cuda (NVIDIA H100, sm_90)".
std::string describe_device(const plan::DeviceInfo& d);

}  // namespace streamrt::delegate

// Engine record writer and reader (layout and checks at the top of engine_record.h).
#include "delegate/engine_record.h"

#include <cstring>
#include <set>

#include "delegate/engine_record_generated.h"

namespace streamrt::delegate {
namespace {

std::string num(uint64_t v) { return std::to_string(v); }

Status bad(const std::string& msg) { return invalid_program("engine record: " + msg); }

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

std::vector<std::string> strings(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>* v) {
  std::vector<std::string> out;
  if (v)
    for (const flatbuffers::String* s : *v) out.push_back(str(s));
  return out;
}

Result<EngineRecord> decode(const fb::EngineRecord* r) {
  EngineRecord out;
  out.engine_name = str(r->engine_name());
  out.streamrt_version = str(r->streamrt_version());
  if (out.engine_name.empty()) return bad("the engine has no name");
  if (const fb::Device* d = r->device()) {
    if (d->kind() > static_cast<uint8_t>(plan::DeviceKind::kCuda))
      return bad("engine '" + out.engine_name + "': device kind " + num(d->kind()) + " is unknown");
    out.device.kind = static_cast<plan::DeviceKind>(d->kind());
    out.device.cc_major = d->cc_major();
    out.device.cc_minor = d->cc_minor();
    out.device.name = str(d->name());
  }
  out.inputs = strings(r->inputs());
  out.outputs = strings(r->outputs());
  out.streamable_size = r->streamable_size();
  out.weights_key = str(r->weights_key());
  if (out.outputs.empty()) return bad("engine '" + out.engine_name + "' has no outputs");
  std::set<std::string> seen;
  for (const auto* list : {&out.inputs, &out.outputs})
    for (const std::string& name : *list) {
      if (name.empty()) return bad("engine '" + out.engine_name + "' has a binding without a name");
      if (!seen.insert(name).second) return bad("engine '" + out.engine_name + "' names binding '" + name + "' twice");
    }
  return out;
}

}  // namespace

std::string describe_device(const plan::DeviceInfo& d) {
  if (d.kind == plan::DeviceKind::kCpu) return "cpu";
  return "cuda (" + d.name + ", sm_" + std::to_string(d.cc_major) + std::to_string(d.cc_minor) + ")";
}

std::vector<uint8_t> serialize_engine_record(const EngineRecord& meta, std::span<const uint8_t> plan) {
  flatbuffers::FlatBufferBuilder b(256);
  auto name = b.CreateString(meta.engine_name);
  auto version = b.CreateString(meta.streamrt_version);
  auto device_name = b.CreateString(meta.device.name);
  auto device = fb::CreateDevice(b, static_cast<uint8_t>(meta.device.kind), meta.device.cc_major,
                                 meta.device.cc_minor, device_name);
  auto inputs = b.CreateVectorOfStrings(meta.inputs);
  auto outputs = b.CreateVectorOfStrings(meta.outputs);
  flatbuffers::Offset<flatbuffers::String> weights_key;  // absent unless the weights are held apart
  if (!meta.weights_key.empty()) weights_key = b.CreateString(meta.weights_key);
  b.Finish(fb::CreateEngineRecord(b, name, version, device, inputs, outputs, meta.streamable_size, weights_key),
           fb::EngineRecordIdentifier());
  return program::write_container(kRecordFormat, {b.GetBufferPointer(), b.GetSize()}, plan);
}

Result<RecordView> read_engine_record(std::span<const uint8_t> bytes) {
  auto c = program::read_container(kRecordFormat, bytes);
  if (!c.ok()) return c.status().with_context("engine record");
  // The record may sit at any alignment in its blob: verify and read an aligned copy of the
  // metadata (its size is checked against the record already).
  std::vector<uint64_t> aligned((c->flatbuffer.size() + 7) / 8);
  std::memcpy(aligned.data(), c->flatbuffer.data(), c->flatbuffer.size());
  const auto* abuf = reinterpret_cast<const uint8_t*>(aligned.data());
  flatbuffers::Verifier verifier(abuf, c->flatbuffer.size());
  if (!fb::VerifyEngineRecordBuffer(verifier))
    return bad("metadata (" + num(c->flatbuffer.size()) + " bytes) fails the FlatBuffers verifier");
  SRT_ASSIGN_OR_RETURN(EngineRecord rec, decode(fb::GetEngineRecord(abuf)));
  return RecordView{std::move(rec), c->section};
}

}  // namespace streamrt::delegate

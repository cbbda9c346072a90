// Seed corpora of the program and engine-record fuzz targets (fuzz/corpus/program/ and
// fuzz/corpus/engine_record/): generated here, checked here. Files named valid_* must load,
// corrupt_* must be rejected with a message. To regenerate the committed seeds after a format
// change:
//   STREAMRT_WRITE_PROGRAM_CORPUS=fuzz/corpus build/bin/streamrt_tests --gtest_filter='ProgramCorpus*'
#include <gtest/gtest.h>

#include "corpus_test_util.h"
#include "delegate/engine_record.h"
#include "delegate_test_util.h"
#include "plan/plan.h"
#include "program_test_util.h"

namespace streamrt {
namespace {

using testing::Seeds;

Seeds program_seeds() {
  Seeds seeds;
  auto sample = testing::sample_program().bytes();
  seeds.emplace_back("valid_sample.pte", sample);
  auto tiny = testing::tiny_compiled_program();
  seeds.emplace_back("valid_compiled.pte", program::serialize_program(tiny.data, tiny.segments).value());
  program::ProgramData identity;  // forward(x) = x: no instruction, no segment
  identity.methods.push_back({"forward", {testing::sample_program().data.methods[0].values[0]}, {0}, {0}, {}, {}});
  seeds.emplace_back("valid_identity.pte", program::serialize_program(identity, {}).value());

  const auto h = testing::program_header(sample);
  auto with = [&](const char* name, auto mutate) {
    auto b = sample;
    mutate(b);
    seeds.emplace_back(name, std::move(b));
  };
  with("corrupt_bad_magic.pte", [](auto& b) { b[1] = 'X'; });
  with("corrupt_version2.pte", [](auto& b) { b[8] = 2; });
  with("corrupt_truncated_header.pte", [](auto& b) { b.resize(40); });
  with("corrupt_truncated_program.pte", [&](auto& b) { b.resize(64 + h.flatbuffer_size / 2); });
  with("corrupt_truncated_segments.pte", [](auto& b) { b.resize(b.size() - 3); });
  with("corrupt_trailing_byte.pte", [](auto& b) { b.push_back(0); });
  with("corrupt_program_bitflip.pte", [&](auto& b) { b[64 + h.flatbuffer_size / 3] ^= 0x10; });
  with("corrupt_segment_bitflip.pte", [&](auto& b) { b[h.section_offset + 3] ^= 0x01; });
  with("corrupt_padding.pte", [&](auto& b) { b[h.section_offset - 1] = 7; });
  with("corrupt_segments_misaligned.pte", [](auto& b) {
    auto hh = testing::program_header(b);
    hh.section_offset += 64;
    testing::put_program_header(b, hh);
  });
  auto semantic = [&](const char* name, auto mutate) {
    auto p = testing::sample_program();
    mutate(p.data.methods[0]);
    seeds.emplace_back(name, p.bytes());
  };
  semantic("corrupt_read_before_write.pte", [](auto& m) { std::swap(m.instructions[0], m.instructions[1]); });
  semantic("corrupt_output_never_written.pte", [](auto& m) { m.instructions.pop_back(); });
  semantic("corrupt_delegate_segment.pte", [](auto& m) { m.delegates[0].segment = 9; });
  semantic("corrupt_value_index.pte", [](auto& m) { m.instructions[0].kernel.inputs[0] = 1 << 20; });
  semantic("corrupt_constant_size.pte", [](auto& m) { m.values[1].dims = {100, 100}; });
  std::vector<uint8_t> garbage(160);
  for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 131 + 7);
  std::memcpy(garbage.data() + 4, "SRTX", 4);
  seeds.emplace_back("corrupt_garbage_flatbuffer.pte", program::write_container(program::kProgramFormat, garbage, {}));
  return seeds;
}

Seeds record_seeds() {
  Seeds seeds;
  auto tiny = testing::tiny_compiled_program();
  const auto& m = tiny.data.methods[0];
  const auto record = tiny.segments[m.delegates[0].segment];
  seeds.emplace_back("valid_engine0.srtr", record);
  seeds.emplace_back("valid_engine1.srtr", tiny.segments[m.delegates[1].segment]);
  const auto view = delegate::read_engine_record(record).value();
  const std::vector<uint8_t> plan(view.plan.begin(), view.plan.end());
  auto with = [&](const char* name, auto mutate) {
    auto b = record;
    mutate(b);
    seeds.emplace_back(name, std::move(b));
  };
  with("corrupt_bad_magic.srtr", [](auto& b) { b[0] = 'x'; });
  with("corrupt_version7.srtr", [](auto& b) { b[8] = 7; });
  with("corrupt_truncated.srtr", [](auto& b) { b.resize(b.size() / 2); });
  with("corrupt_metadata_bitflip.srtr", [](auto& b) { b[80] ^= 0x40; });
  with("corrupt_plan_bitflip.srtr", [](auto& b) { b[b.size() - 5] ^= 0x02; });
  auto meta = [&](const char* name, auto mutate) {
    delegate::EngineRecord r = view.meta;
    mutate(r);
    seeds.emplace_back(name, delegate::serialize_engine_record(r, plan));
  };
  meta("corrupt_no_name.srtr", [](auto& r) { r.engine_name.clear(); });
  meta("corrupt_duplicate_binding.srtr", [](auto& r) { r.outputs.push_back(r.inputs[0]); });
  meta("corrupt_no_outputs.srtr", [](auto& r) { r.outputs.clear(); });
  meta("corrupt_device_kind.srtr", [](auto& r) { r.device.kind = static_cast<plan::DeviceKind>(5); });
  seeds.emplace_back("corrupt_no_plan.srtr", delegate::serialize_engine_record(view.meta, {}));
  return seeds;
}

Status read_program_status(const std::vector<uint8_t>& b) {
  return program::read_program_bytes(b.data(), b.size(), nullptr).status();
}

// A record counts as valid when both the record and the plan inside read.
Status read_record_status(const std::vector<uint8_t>& b) {
  SRT_ASSIGN_OR_RETURN(auto view, delegate::read_engine_record(b));
  return plan::read_plan_bytes(view.plan.data(), view.plan.size(), nullptr).status();
}

constexpr std::initializer_list<StatusCode> kRefused = {StatusCode::kInvalidProgram, StatusCode::kInvalidPlan,
                                                       StatusCode::kIncompatible};

template <typename Read>
void check_and_maybe_write(const Seeds& seeds, const std::string& folder, Read read) {
  testing::check_seeds_and_maybe_write(seeds, "STREAMRT_WRITE_PROGRAM_CORPUS", folder, read, kRefused);
}

template <typename Read>
void check_committed(const std::string& folder, Read read) {
  testing::check_committed_corpus(folder, read, kRefused);
}

TEST(ProgramCorpus, ProgramSeedsBehaveAsNamed) { check_and_maybe_write(program_seeds(), "program", read_program_status); }
TEST(ProgramCorpus, RecordSeedsBehaveAsNamed) { check_and_maybe_write(record_seeds(), "engine_record", read_record_status); }
TEST(ProgramCorpus, CommittedProgramCorpusBehavesAsNamed) { check_committed("program", read_program_status); }
TEST(ProgramCorpus, CommittedRecordCorpusBehavesAsNamed) { check_committed("engine_record", read_record_status); }

}  // namespace
}  // namespace streamrt

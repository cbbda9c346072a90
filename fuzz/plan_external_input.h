// The input of plan_external_fuzz (and of its seeds, tests/unit/apart_corpus_test.cc): a plan
// whose weights section is held apart (Runtime::load_engine_bytes(plan head, ExternalWeights)),
// as frames (fuzz_frames.h):
//   'P'  the plan head: the plan file up to the end of its metadata (plan::plan_parts)
//   'W'  the weights section
//   'M'  its first byte: how many bytes past a 64-byte boundary the section sits (mod 64;
//        below 16 bytes of alignment the loader copies it)
// A missing frame is empty (misalignment 0); a later frame of a tag replaces an earlier one.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "fuzz_frames.h"
#include "streamrt/runtime.h"

namespace streamrt::fuzzing {

struct PlanApartInput {
  std::vector<uint8_t> head, weights;
  uint8_t misalign = 0;
};

inline PlanApartInput read_plan_apart(std::span<const uint8_t> in) {
  PlanApartInput out;
  for (const Frame& f : read_frames(in)) {
    if (f.tag == 'P') out.head.assign(f.bytes.begin(), f.bytes.end());
    if (f.tag == 'W') out.weights.assign(f.bytes.begin(), f.bytes.end());
    if (f.tag == 'M' && !f.bytes.empty()) out.misalign = f.bytes[0];
  }
  return out;
}

inline std::vector<uint8_t> write_plan_apart(const PlanApartInput& in) {
  std::vector<uint8_t> out;
  add_frame(out, 'P', in.head);
  add_frame(out, 'W', in.weights);
  if (in.misalign) add_frame(out, 'M', std::span<const uint8_t>(&in.misalign, 1));
  return out;
}

// Loads `in` on `runtime`, the weights section in memory of its own that the engine's release
// frees (a read after it is a use after free under ASan); *released counts the releases.
inline Result<std::shared_ptr<Engine>> load_plan_apart(Runtime& runtime, const PlanApartInput& in, int* released) {
  auto weights = std::make_shared<OwnedBytes>(in.weights, in.misalign);
  ExternalWeights w{weights->data(), weights->size(), [weights, released] {
                      weights->reset();
                      ++*released;
                    }};
  return runtime.load_engine_bytes(in.head, std::move(w));
}

}  // namespace streamrt::fuzzing

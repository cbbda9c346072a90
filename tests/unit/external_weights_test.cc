// Weights held apart from the plan (Runtime::load_engine_bytes with ExternalWeights, and the
// delegate core's named data, which ExecuTorch's .ptd files feed): the engine reads the caller's
// memory in place, runs bitwise like the inline plan at every budget, the section's size and
// checksum are checked as an inline section's are, and `release` runs exactly once.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

#include "delegate/engine_record.h"
#include "delegate/streamrt_core.h"
#include "plan/plan.h"
#include "runtime/engine_state.h"
#include "streaming_test_util.h"

namespace streamrt {
namespace {

using namespace streamrt::testing;

// The tiny_llama fixture's plan, and the same plan cut into its metadata part and its weights
// section (in 64-byte aligned memory of our own, as a mapped .ptd would hand it out).
struct SplitPlan {
  std::vector<uint8_t> whole, head;
  plan::PlanParts parts;
  std::shared_ptr<uint8_t> storage;  // weights_size + 64 bytes, 64-aligned
  std::map<std::string, Tensor> inputs;

  uint8_t* weights(size_t misalign = 0) const { return storage.get() + misalign; }
  // The weights section (shifted by `misalign` bytes) handed over with a counting release.
  ExternalWeights apart(int* released, size_t misalign = 0, int64_t size_delta = 0) const {
    if (misalign) std::memmove(weights(misalign), weights(), parts.weights_size);
    return {weights(misalign), parts.weights_size + size_delta, [released] { ++*released; }};
  }
};

SplitPlan split_fixture() {
  SplitPlan s;
  s.inputs = fixture_inputs("tiny_llama");
  auto bytes = build_fixture("tiny_llama", DeviceType::kCpu, true, s.inputs);
  EXPECT_TRUE(bytes.ok()) << bytes.status().to_string();
  s.whole = std::move(bytes).value();
  auto parts = plan::plan_parts(s.whole.data(), s.whole.size());
  EXPECT_TRUE(parts.ok()) << parts.status().to_string();
  s.parts = *parts;
  EXPECT_GT(s.parts.weights_size, 0u);
  s.head.assign(s.whole.begin(), s.whole.begin() + static_cast<ptrdiff_t>(s.parts.metadata_end));
  s.storage.reset(static_cast<uint8_t*>(std::aligned_alloc(64, (s.parts.weights_size + 64 + 63) / 64 * 64)),
                  [](uint8_t* p) { std::free(p); });
  std::memcpy(s.storage.get(), s.whole.data() + s.parts.weights_offset, s.parts.weights_size);
  return s;
}

std::unique_ptr<Runtime> cpu_runtime() {
  auto rt = Runtime::create(RuntimeOptions{DeviceType::kCpu});
  EXPECT_TRUE(rt.ok());
  return std::move(rt).value();
}

TEST(ExternalWeights, RunLikeTheInlinePlanAtEveryBudgetReadingTheCallersMemory) {
  SplitPlan s = split_fixture();
  auto rt = cpu_runtime();
  auto inline_engine = rt->load_engine_bytes(s.whole);
  ASSERT_TRUE(inline_engine.ok()) << inline_engine.status().to_string();
  auto want = run_once(**inline_engine, s.inputs);
  ASSERT_TRUE(want.ok());
  int released = 0;
  auto engine = rt->load_engine_bytes(s.head, s.apart(&released));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ(released, 0);
  // In place: every weight view points into the caller's section (no copy was made).
  const plan::LoadedPlan& lp = (*engine)->state().plan;
  EXPECT_EQ(lp.external_weights, s.weights());
  for (const Tensor& t : lp.data.weight_data) {
    if (!t.nbytes()) continue;
    const auto* p = static_cast<const uint8_t*>(t.data());
    EXPECT_TRUE(p >= s.weights() && p + t.nbytes() <= s.weights() + s.parts.weights_size);
  }
  const uint64_t streamable = (*engine)->streamable_weights_size();
  ASSERT_GT(streamable, 0u);
  EXPECT_EQ(streamable, (*inline_engine)->streamable_weights_size());
  for (uint64_t budget : {uint64_t{0}, streamable / 2, streamable}) {
    ASSERT_TRUE((*engine)->set_weight_streaming_budget(budget).ok());
    auto got = run_once(**engine, s.inputs);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    EXPECT_EQ(*got, *want) << "budget " << budget;
  }
  engine->reset();
  EXPECT_EQ(released, 1);  // with the engine, not before
}

TEST(ExternalWeights, SizeOrChecksumOtherThanTheHeadersIsInvalidPlanAndReleases) {
  SplitPlan s = split_fixture();
  auto rt = cpu_runtime();
  int released = 0;
  auto shorter = rt->load_engine_bytes(s.head, s.apart(&released, 0, -1));
  ASSERT_FALSE(shorter.ok());
  EXPECT_EQ(shorter.status().code(), StatusCode::kInvalidPlan);
  EXPECT_NE(shorter.status().message().find("held apart has " + std::to_string(s.parts.weights_size - 1)),
            std::string::npos)
      << shorter.status().message();
  EXPECT_EQ(released, 1);

  s.weights()[s.parts.weights_size / 2] ^= 0x40;
  auto corrupt = rt->load_engine_bytes(s.head, s.apart(&released));
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.status().code(), StatusCode::kInvalidPlan);
  EXPECT_NE(corrupt.status().message().find("weights checksum mismatch"), std::string::npos)
      << corrupt.status().message();
  EXPECT_EQ(released, 2);
}

TEST(ExternalWeights, ThePlanMustEndWithItsMetadataAndHaveAWeightsSection) {
  SplitPlan s = split_fixture();
  auto rt = cpu_runtime();
  int released = 0;
  // The whole plan with its section apart too: the inline section is trailing bytes.
  auto whole = rt->load_engine_bytes(s.whole, s.apart(&released));
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.status().code(), StatusCode::kInvalidPlan);
  EXPECT_NE(whole.status().message().find("trailing bytes"), std::string::npos) << whole.status().message();
  // The head alone, as an inline plan: its weights section lies past its end.
  auto head_only = rt->load_engine_bytes(s.head);
  ASSERT_FALSE(head_only.ok());
  EXPECT_EQ(head_only.status().code(), StatusCode::kInvalidPlan);
  auto null_data = rt->load_engine_bytes(s.head, ExternalWeights{nullptr, 64, [&] { ++released; }});
  EXPECT_EQ(null_data.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(released, 2);
}

TEST(ExternalWeights, MisalignedWeightsAreCopiedAndReleasedAtOnce) {
  SplitPlan s = split_fixture();
  auto rt = cpu_runtime();
  auto want = run_once(*rt->load_engine_bytes(s.whole).value(), s.inputs);
  ASSERT_TRUE(want.ok());
  int released = 0;
  auto engine = rt->load_engine_bytes(s.head, s.apart(&released, 4));
  ASSERT_TRUE(engine.ok()) << engine.status().to_string();
  EXPECT_EQ(released, 1);  // the engine holds its aligned copy instead
  const auto* ext = (*engine)->state().plan.external_weights;
  EXPECT_NE(ext, s.weights(4));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ext) % plan::kExternalWeightsAlignment, 0u);
  auto got = run_once(**engine, s.inputs);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(*got, *want);
}

// The delegate core: a record naming a weights_key takes its section from the host's named data.
TEST(ExternalWeights, DelegateCoreTakesTheRecordsWeightsFromNamedData) {
  SplitPlan s = split_fixture();
  auto inline_engine = cpu_runtime()->load_engine_bytes(s.whole);
  ASSERT_TRUE(inline_engine.ok());
  auto want = run_once(**inline_engine, s.inputs);
  ASSERT_TRUE(want.ok());
  delegate::EngineRecord meta;
  meta.engine_name = (*inline_engine)->name();
  meta.streamable_size = (*inline_engine)->streamable_weights_size();
  for (const TensorDesc& d : (*inline_engine)->io_tensors()) (d.is_input ? meta.inputs : meta.outputs).push_back(d.name);
  meta.weights_key = "streamrt/engine/weights";
  const std::vector<uint8_t> record = delegate::serialize_engine_record(meta, s.head);
  auto parsed = delegate::read_engine_record(record);
  ASSERT_TRUE(parsed.ok()) << parsed.status().to_string();
  EXPECT_EQ(parsed->meta.weights_key, meta.weights_key);

  delegate::StreamRtCore core;
  int released = 0;
  std::vector<std::string> asked;
  auto request = [&](bool with_named_data, bool found) {
    delegate::InitRequest req;
    req.record = record;
    req.group = asked.size() + 100;
    if (with_named_data)
      req.named_data = [&, found](const std::string& key) -> Result<ExternalWeights> {
        asked.push_back(key);
        if (!found) return not_found("no such key");
        return s.apart(&released);
      };
    return req;
  };
  auto none = core.init(request(false, false));
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kInvalidProgram);
  EXPECT_NE(none.status().message().find("named data 'streamrt/engine/weights'"), std::string::npos)
      << none.status().message();
  auto missing = core.init(request(true, false));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("streamrt/engine/weights"), std::string::npos);

  auto h = core.init(request(true, true));
  ASSERT_TRUE(h.ok()) << h.status().to_string();
  EXPECT_EQ(asked, (std::vector<std::string>{meta.weights_key, meta.weights_key}));
  std::vector<Tensor> ins, outs(meta.outputs.size());
  for (const std::string& name : meta.inputs) ins.push_back(s.inputs.at(name));
  ASSERT_TRUE(core.execute(*h, ins, outs).ok());
  for (size_t j = 0; j < outs.size(); ++j) {
    const auto* p = static_cast<const uint8_t*>(outs[j].data());
    EXPECT_EQ(std::vector<uint8_t>(p, p + outs[j].nbytes()), (*want)[j]) << meta.outputs[j];
  }
  EXPECT_EQ(released, 0);
  core.destroy(*h);
  EXPECT_EQ(released, 1);
}

}  // namespace
}  // namespace streamrt

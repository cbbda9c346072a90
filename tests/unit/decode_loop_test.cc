// Greedy decoding on the CPU with the transformers corpus's KV-cache decoders (tests/unit/decode_loop_util.h):
// presents fed back as pasts, logits and tokens against a full-sequence PyTorch forward, resident and with
// every weight streamed at budget 0, dense and with the KV cache in place (one buffer per pair bound to
// past and present; no Concat over the cache in the plan).
#include "decode_loop_util.h"

namespace streamrt::testing {
namespace {

class DecodeLoop : public ::testing::TestWithParam<DecodeLoopParam> {};

TEST_P(DecodeLoop, PresentsFedBackMatchFullSequenceForward) { run_decode_loop(GetParam(), DeviceType::kCpu); }

INSTANTIATE_TEST_SUITE_P(Exports, DecodeLoop,
                         ::testing::Values(DecodeLoopParam{"dynamo", false}, DecodeLoopParam{"torchscript", false},
                                           DecodeLoopParam{"dynamo", true}, DecodeLoopParam{"torchscript", true},
                                           DecodeLoopParam{"dynamo", false, true},
                                           DecodeLoopParam{"torchscript", false, true},
                                           DecodeLoopParam{"dynamo", true, true},
                                           DecodeLoopParam{"torchscript", true, true}),
                         decode_loop_name);

}  // namespace
}  // namespace streamrt::testing

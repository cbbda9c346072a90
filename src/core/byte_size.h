// Weight-streaming budget values: the ONE parser of the strings the CLI (--budget) and the
// delegate (weight_streaming_budget options) accept, how a parsed value becomes a byte count
// for one engine, and how byte counts are written in messages.
//
// Accepted forms (see DESIGN.md, "Budget values"); anything else is kInvalidArgument whose
// message quotes the value and says what was expected:
//   8589934592                 bytes, a whole decimal number (leading zeros allowed)
//   100B 64KiB 512MiB 8GiB 1TiB 1PiB 1EiB
//                              binary units only, spelled exactly so (case-sensitive): 1KiB = 1024
//   50%  12.5%  100.0%         a percentage of the engine's streamable size, 0..100 inclusive,
//                              at most 9 significant decimal places (further zeros are allowed)
//   auto                       the automatic budget (lowercase only)
//   ""                         EMPTY: not an error; returns kind kUnset, and the CALLER logs a
//                              warning ("empty budget ignored") and treats it as not given.
// Rejected on purpose:
//   - decimal units (KB, MB, GB, TB, PB, EB, k, M, G ...): TensorRT users think in binary sizes,
//     and "8GB" meaning 8*10^9 bytes to some readers and 8*2^30 to others is exactly the kind of
//     ambiguity a budget must not have. The message suggests the binary unit.
//   - any other case of a unit or of auto ("gib", "GIB", "AUTO"): one spelling, as written in
//     the docs; the message names the accepted spelling.
//   - fractional byte counts ("1.5GiB"): say 1536MiB; keeps every byte budget an exact integer.
//   - signs (+5, -5), whitespace anywhere (leading, trailing, internal, including "8 GiB"),
//     NUL or other control bytes, empty digits ("GiB", "%", ".5%"), values past UINT64_MAX
//     after the unit multiply (16EiB), percentages above 100 (100.01%, 101%).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "streamrt/status.h"

namespace streamrt {

struct BudgetSpec {
  enum class Kind { kUnset, kAuto, kBytes, kPercent };
  Kind kind = Kind::kUnset;
  uint64_t bytes = 0;   // kBytes: the byte count (unit already applied)
  double percent = 0;   // kPercent: 0..100, the nearest double to the decimal written
};

// Parses a budget value; see the header comment for the grammar.
Result<BudgetSpec> parse_budget(std::string_view text);

// The budget in bytes for an engine with `streamable_size` streamable bytes, where `automatic`
// is the automatic budget (computed from free device memory). The result never exceeds
// streamable_size (DESIGN.md: a budget at or above the streamable size is clamped):
//   kBytes   -> min(bytes, streamable_size)
//   kPercent -> floor(streamable_size * percent / 100), exact (128-bit integer arithmetic on
//               the percentage rounded to 1e-9 %, which is exact for every value parse_budget
//               accepts). A hand-built spec with NaN or a value outside 0..100 is clamped to it.
//   kAuto, kUnset -> min(automatic, streamable_size)
uint64_t resolve_budget(const BudgetSpec& spec, uint64_t streamable_size, uint64_t automatic);

// A byte count for messages: "123 B", "8 GiB" (exact multiples of a unit), "1.50 MiB"
// (otherwise two decimals, rounded to nearest).
std::string format_bytes(uint64_t bytes);

// A spec for messages: "auto", "unset", "50%", "8 GiB".
std::string format_budget(const BudgetSpec& spec);

}  // namespace streamrt

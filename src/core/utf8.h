// Names in models, plans and programs are arbitrary bytes; text and JSON output needs UTF-8.
#pragma once

#include <string>
#include <string_view>

namespace streamrt {

// True when `s` is valid UTF-8 (no overlong forms, surrogates or code points above U+10FFFF).
bool is_valid_utf8(std::string_view s);
// `s` with every byte that is not part of a valid UTF-8 sequence written as the four
// characters \xHH (lowercase hex), so that the bytes stay visible and the text is UTF-8.
std::string printable_utf8(std::string_view s);

}  // namespace streamrt

// The CLI's progress bar for long build phases (BuilderConfig::progress), drawn on stderr.
#pragma once

#include <functional>
#include <string>

#include "streamrt/builder.h"

namespace streamrt::cli {

// One line of the bar, without the carriage return: "  tactics [######------]  40%".
std::string progress_line(const BuildProgress& p, int width);

// "auto": a bar when stderr is a terminal; "on": always (for logs and tests); "off": never.
// An empty function when no bar is wanted.
std::function<void(const BuildProgress&)> make_progress_bar(const std::string& mode);

}  // namespace streamrt::cli

// Fault injection for tests of DiskEngineCache: a hook called at each step of a save (and of
// every write, per 64 KiB chunk) that can make the step fail as if the system call had failed
// (an io_error for a full disk), or kill the process there (fork-based crash tests).
// Steps of a save: "stage", "write" (per chunk), "fsync", "rename", "evict". Steps of open():
// "mkdir" (creating a missing directory), "marker" (writing STREAMRT_CACHE), "probe" (the test
// that the cache can be written). A hook that fails every step acts as a read-only file system
// (as it does for root, whom permission bits do not stop).
#pragma once

#include <functional>
#include <string>

#include "streamrt/status.h"

namespace streamrt::cache::testing {

using FaultHook = std::function<Status(const std::string& step)>;
// Installs `hook` for this process (null removes it). Not thread-safe: set it before the
// cache is used.
void set_fault_hook(FaultHook hook);
// OK, or what the hook returns for `step`.
Status fault(const std::string& step);

}  // namespace streamrt::cache::testing

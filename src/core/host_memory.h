// Host memory facts for budgets and reports (Linux /proc; 0 when unknown).
#pragma once

#include <cstddef>
#include <cstdint>

namespace streamrt {

// MemAvailable of /proc/meminfo: what can be allocated without swapping.
uint64_t available_host_memory();
// This process's resident set now and at its peak (VmRSS / VmHWM of /proc/self/status).
uint64_t current_rss();
uint64_t peak_rss();

// Page-granular hints on memory that mirrors a file (a mapped plan): drop the pages from this
// process's resident set (they stay in the page cache), or ask the kernel to read them ahead.
// Ranges are widened to whole pages inside [base, base + size) of the mapping; no-ops on error.
void release_pages(const void* mapping, size_t mapping_size, size_t offset, size_t length);
void prefetch_pages(const void* mapping, size_t mapping_size, size_t offset, size_t length);

}  // namespace streamrt

#include "core/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace streamrt {
namespace {

// Reads "<key>: <n> kB" from a /proc file.
uint64_t proc_kb(const char* path, const char* key) {
  FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  size_t klen = std::strlen(key);
  while (std::fgets(line, sizeof line, f)) {
    if (std::strncmp(line, key, klen) == 0 && line[klen] == ':') {
      unsigned long long v = 0;
      if (std::sscanf(line + klen + 1, "%llu", &v) == 1) kb = v;
      break;
    }
  }
  std::fclose(f);
  return kb * 1024;
}

void advise(const void* mapping, size_t mapping_size, size_t offset, size_t length, int advice) {
  if (!mapping || offset >= mapping_size || length == 0) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t end = std::min(mapping_size, offset + length);
  // Only pages wholly inside the range are dropped (a neighbour's bytes may share the edges);
  // read-ahead may widen outwards.
  size_t lo = advice == MADV_DONTNEED ? (offset + page - 1) / page * page : offset / page * page;
  size_t hi = advice == MADV_DONTNEED ? end / page * page : std::min(mapping_size, (end + page - 1) / page * page);
  if (hi <= lo) return;
  auto* base = static_cast<uint8_t*>(const_cast<void*>(mapping));
  (void)madvise(base + lo, hi - lo, advice);
}

}  // namespace

uint64_t available_host_memory() { return proc_kb("/proc/meminfo", "MemAvailable"); }
uint64_t current_rss() { return proc_kb("/proc/self/status", "VmRSS"); }
uint64_t peak_rss() { return proc_kb("/proc/self/status", "VmHWM"); }

void release_pages(const void* mapping, size_t mapping_size, size_t offset, size_t length) {
  advise(mapping, mapping_size, offset, length, MADV_DONTNEED);
}
void prefetch_pages(const void* mapping, size_t mapping_size, size_t offset, size_t length) {
  advise(mapping, mapping_size, offset, length, MADV_WILLNEED);
}

}  // namespace streamrt

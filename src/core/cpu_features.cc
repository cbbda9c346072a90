#include "core/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdint>

namespace streamrt {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// XCR0 through xgetbv, as inline asm so that no target("xsave") attribute is needed.
uint64_t read_xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return f;
  // The AVX family is usable only when the OS enabled XSAVE and saves the XMM and YMM state
  // (XCR0 bits 1 and 2); otherwise the first vector instruction faults.
  const bool os_saves_ymm = (ecx & bit_OSXSAVE) && (read_xcr0() & 0x6) == 0x6;
  if (!os_saves_ymm) return f;
  f.avx = (ecx & bit_AVX) != 0;
  f.fma = (ecx & bit_FMA) != 0;
  f.f16c = (ecx & bit_F16C) != 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) f.avx2 = (ebx & bit_AVX2) != 0;
  return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

}  // namespace streamrt

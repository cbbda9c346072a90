// What the CPU (and the OS, for the wide registers) lets the vector kernels use, read once with
// cpuid. Not __builtin_cpu_supports: clang before 17 does not know "f16c" there, which broke the
// libFuzzer build with the clang Debian ships.
#pragma once

namespace streamrt {

struct CpuFeatures {
  // Each is true only when the OS saves the YMM registers too (OSXSAVE + XGETBV), as gcc's
  // __builtin_cpu_supports reports them.
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
};

// All false off x86.
const CpuFeatures& cpu_features();

}  // namespace streamrt

#include "core/float16.h"

#include "core/cpu_features.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace streamrt {
namespace {

void floats_to_half_scalar(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = Half::from_float(src[i]);
}

#if defined(__x86_64__)
// Eight values per instruction, rounding to nearest even like Half::from_float. NaN payloads are
// the one difference (F16C keeps the top payload bits), so blocks with a NaN take the scalar path.
__attribute__((target("avx,f16c"))) void floats_to_half_f16c(const float* src, uint16_t* dst, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(src + i);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {
      floats_to_half_scalar(src + i, dst + i, 8);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  floats_to_half_scalar(src + i, dst + i, n - i);
}

bool has_f16c() {
  static const bool yes = cpu_features().avx && cpu_features().f16c;
  return yes;
}
#endif

}  // namespace

void floats_to_half(const float* src, uint16_t* dst, size_t n) {
#if defined(__x86_64__)
  if (has_f16c()) return floats_to_half_f16c(src, dst, n);
#endif
  floats_to_half_scalar(src, dst, n);
}

void floats_to_bfloat16(const float* src, uint16_t* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = BFloat16::from_float(src[i]);
}

}  // namespace streamrt

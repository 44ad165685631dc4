// The block functions of stats_kernel.h on their own (no TensorFlow), for test_kernel.py:
// the baseline x86-64 variant, which no test of the op reaches on a CPU with AVX2, against the
// AVX2 one on random blocks of every dtype (max, min and the counts equal, sums within 1e-6),
// and the half decoder against the compiler's own _Float16 conversion on all 65,536 bit
// patterns. Prints one line per difference and "bad=N"; exits 1 when N > 0.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "stats_kernel.h"

using tf2npu::HalfLoad;
using tf2npu::kBlock;
using tf2npu::Partial;

static int bad = 0;

static void Compare(const char* what, int64_t n, const Partial& a, const Partial& b) {
  const bool exact = a.top == b.top && a.bottom == b.bottom && a.nan == b.nan &&
                     a.neg_inf == b.neg_inf && a.pos_inf == b.pos_inf && a.zero == b.zero;
  const bool close = std::fabs(a.sum - b.sum) <= 1e-6 * (std::fabs(a.sum) + double(n)) &&
                     std::fabs(a.squares - b.squares) <= 1e-6 * a.squares;
  if (exact && close) return;
  ++bad;
  std::printf("%s, %ld elements: max %g/%g min %g/%g sum %g/%g squares %g/%g zero %ld/%ld\n",
              what, long(n), a.top, b.top, a.bottom, b.bottom, a.sum, b.sum, a.squares,
              b.squares, long(a.zero), long(b.zero));
}

int main() {
#if !TF2NPU_X86
  std::printf("bad=0 (no AVX2 variant off x86-64)\n");
  return 0;
#else
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t n = 1 + rng() % (kBlock + 1000);
    std::vector<float> f(n);
    std::vector<uint16_t> half(n), bf16(n);
    std::vector<double> wide(n);
    for (int64_t i = 0; i < n; ++i) {
      float v = normal(rng) * (trial % 3 == 0 ? 1e4f : 1.0f);
      if (rng() % 50 == 0) v = 0.0f;
      if (trial % 7 == 0 && rng() % 1000 == 0) v = NAN;
      if (trial % 11 == 0 && rng() % 1000 == 0) v = -INFINITY;
      f[i] = v;
      wide[i] = v;
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      bf16[i] = uint16_t(bits >> 16);
      const _Float16 h = static_cast<_Float16>(v);
      std::memcpy(&half[i], &h, 2);
    }
    for (int64_t start = 0; start < n; start += kBlock) {
      const int64_t m = std::min(kBlock, n - start);
      Partial a, b;
      tf2npu::baseline::MeasureFloat(f.data() + start, m, &a);
      tf2npu::avx2::MeasureFloat(f.data() + start, m, &b);
      Compare("float", m, a, b);
      tf2npu::baseline::MeasureHalf(half.data() + start, m, &a);
      tf2npu::avx2::MeasureHalf(half.data() + start, m, &b);
      Compare("half", m, a, b);
      tf2npu::baseline::MeasureBfloat16(bf16.data() + start, m, &a);
      tf2npu::avx2::MeasureBfloat16(bf16.data() + start, m, &b);
      Compare("bfloat16", m, a, b);
      tf2npu::baseline::MeasureDouble(wide.data() + start, m, &a);
      tf2npu::avx2::MeasureDouble(wide.data() + start, m, &b);
      Compare("double", m, a, b);
    }
  }
  for (uint32_t u = 0; u < 65536; ++u) {
    const uint16_t pattern = uint16_t(u);
    _Float16 h;
    std::memcpy(&h, &pattern, 2);
    const float want = static_cast<float>(h), got = HalfLoad::Get(pattern);
    uint32_t want_bits, got_bits;
    std::memcpy(&want_bits, &want, 4);
    std::memcpy(&got_bits, &got, 4);
    if (want_bits != got_bits && !(want != want && got != got)) {
      ++bad;
      std::printf("half 0x%04x: %g, decoded %g\n", u, want, got);
    }
  }
  std::printf("bad=%d\n", bad);
  return bad ? 1 : 0;
#endif
}

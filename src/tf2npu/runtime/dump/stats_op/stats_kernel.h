// The statistics of one block of a tensor, without TensorFlow: what the Tf2npuTensorStats kernel
// (tensor_stats.cc) runs on each block, and what tests/runtime/dump/stats_op/kernel_check.cc
// checks on its own (the baseline and AVX2 variants against each other, the half decoder on
// every bit pattern).
#ifndef TF2NPU_STATS_KERNEL_H_
#define TF2NPU_STATS_KERNEL_H_

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#define TF2NPU_X86 1
#endif

namespace tf2npu {
namespace {

constexpr int64_t kBlock = 1 << 15;
// Elements per block: 128 KB of float, within L2 with room to spare; a unit of Shard's work.
constexpr int64_t kChunkPerLane = 32;
// Float additions per lane before the lane's sums go into double: the float rounding error of
// a chunk is that of 32 additions, not of the block's 2,048 per lane.
constexpr int64_t kPrefetch = 2048;
// Elements ahead that each lane step asks the cache for (8 KB of float): with the hardware
// prefetcher alone the loop waited on memory, 27-65 % slower on a 200 MB tensor (in cache it
// does 25-50 GB/s on one core: docs/benchmarks.md, "The statistics op").
constexpr float kTinyFloat = 0x1p-40f;
// Below this largest magnitude a block's float squares fall under 2^-80 and the flushed ones
// (< 2^-126 each, at most kBlock of them) could weigh more than 2^-31 of the sum: double path.

struct Partial {
  double top, bottom, sum, squares;
  int64_t nan, neg_inf, pos_inf, zero;
};

template <typename T>
struct SameLoad {
  static inline T Get(T v) { return v; }
};

// IEEE half to float without F16C: the compiler vectorises these selects on any x86-64.
struct HalfLoad {
  static inline float Get(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t magnitude = h & 0x7fffu;
    const uint32_t normal = (magnitude << 13) + (112u << 23);       // rebias 15 -> 127
    const uint32_t special = (magnitude << 13) + (224u << 23);      // Inf/NaN: exponent 255
    uint32_t bits = magnitude >= 0x7c00u ? special : normal;
    float subnormal = float(int32_t(magnitude)) * 0x1p-24f;         // 0 and subnormals, exact
    uint32_t sub_bits;
    std::memcpy(&sub_bits, &subnormal, 4);
    bits = magnitude < 0x0400u ? sub_bits : bits;
    bits |= sign;
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
  }
};

struct Bfloat16Load {
  static inline float Get(uint16_t h) {
    const uint32_t bits = uint32_t(h) << 16;
    float out;
    std::memcpy(&out, &bits, 4);
    return out;
  }
};

namespace baseline {
#include "blocks.inc"
}  // namespace baseline

#if TF2NPU_X86
#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
#include "blocks.inc"
}  // namespace avx2
#pragma GCC pop_options

bool HasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
bool HasAvx2() { return false; }
#endif

}  // namespace
}  // namespace tf2npu

#endif  // TF2NPU_STATS_KERNEL_H_

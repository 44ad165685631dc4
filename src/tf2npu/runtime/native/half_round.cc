// Tf2npuHalfRound: float32 in, float32 out, each element rounded to float16 precision in one
// pass over memory; bit for bit what Cast(Cast(x, float16), float32) gives with TensorFlow's
// CPU Cast, which costs two passes and a float16 buffer in between.
//
// Why integer arithmetic and not Eigen::half: the pair's rounding is Eigen's float_to_half_rtne
// (round to nearest, ties to even; values from 65520 up become inf; NaN becomes the quiet NaN
// 0x7e00 with the input's sign, payload dropped), and its widening is exact. Done on the bits
// of the float32 directly, the same rounding has no float16 value to build and no branch, so
// the compiler vectorises the loop (target_clones picks AVX-512 / AVX2 / SSE2 at load time).
// tools/half_round_exhaustive.py checks all 2^32 inputs against the Cast pair.
//
// The half range's subnormals (below 2^-14) are rounded as Eigen rounds them: adding 0.5f
// rounds |x| to a multiple of 2^-24 (ulp(0.5f)) by the FPU's own round-to-nearest-even, and
// subtracting 0.5f again is exact. A float32 subnormal input gives +-0 whether or not the
// thread flushes denormals (TensorFlow's executor sets FTZ/DAZ): 0.5f + tiny is 0.5f.

#include <cstdint>
#include <cstring>

#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/util/work_sharder.h"

namespace tf2npu {
namespace {

using tensorflow::OpKernel;
using tensorflow::OpKernelConstruction;
using tensorflow::OpKernelContext;
using tensorflow::Tensor;

constexpr uint32_t kSign = 0x80000000u;
constexpr uint32_t kInf = 0x7f800000u;
constexpr uint32_t kQuietNan = 0x7fc00000u;     // float32 of the float16 NaN 0x7e00
constexpr uint32_t kRoundsToInf = 0x477ff000u;  // 65520: halfway past 65504, ties to inf
constexpr uint32_t kMinNormalHalf = 0x38800000u;  // 2^-14

__attribute__((target_clones("avx512f", "avx2", "default"))) void RoundToHalf(
    const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, in + i, 4);
    const uint32_t sign = u & kSign;
    const uint32_t a = u ^ sign;
    // Normal range: keep 10 of the 23 fraction bits, round to nearest even (a carry into
    // the exponent is the right result).
    const uint32_t normal = (a + 0xfffu + ((a >> 13) & 1u)) & 0xffffe000u;
    float af;
    std::memcpy(&af, &a, 4);
    const float s = (af + 0.5f) - 0.5f;
    uint32_t sub;
    std::memcpy(&sub, &s, 4);
    uint32_t r = a < kMinNormalHalf ? sub : normal;
    r = a >= kRoundsToInf ? kInf : r;
    r = a > kInf ? kQuietNan : r;
    r |= sign;
    std::memcpy(out + i, &r, 4);
  }
}

class HalfRoundOp : public OpKernel {
 public:
  explicit HalfRoundOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& input = context->input(0);
    Tensor* output = nullptr;
    // In place when the input buffer is not read by anyone else.
    OP_REQUIRES_OK(context, context->forward_input_or_allocate_output(
                                {0}, 0, input.shape(), &output));
    const float* in = input.flat<float>().data();
    float* out = output->flat<float>().data();
    const int64_t n = input.NumElements();
    // About 1 ns an element with loads and stores; Shard runs small tensors inline.
    constexpr int64_t kCostPerElement = 2;
    auto* workers = context->device()->tensorflow_cpu_worker_threads()->workers;
    tensorflow::Shard(workers->NumThreads(), workers, n, kCostPerElement,
                      [in, out](int64_t begin, int64_t end) {
                        RoundToHalf(in + begin, out + begin, end - begin);
                      });
  }
};

}  // namespace
}  // namespace tf2npu

REGISTER_OP("Tf2npuHalfRound")
    .Input("x: float")
    .Output("y: float")
    .SetShapeFn(tensorflow::shape_inference::UnchangedShape)
    .Doc(R"doc(
x rounded to float16 precision, as float32: bit for bit Cast(Cast(x, float16), float32)
(round to nearest even, overflow to inf, NaN to the quiet NaN with x's sign).
)doc");

REGISTER_KERNEL_BUILDER(Name("Tf2npuHalfRound").Device(tensorflow::DEVICE_CPU),
                        tf2npu::HalfRoundOp);

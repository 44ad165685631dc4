// Tf2npuTensorStats: the figures of a `dump_data=stats` row in one pass over a tensor.
//
// TensorFlow has no kernel computing several reductions in one pass; the dump's in-graph path
// (tf2npu/runtime/dump/measure.py) takes five (max, min, sum, L2Loss, the zero count) over
// every dumped tensor. This kernel reads each element once, in blocks of kBlock elements spread
// over TensorFlow's intra-op threads (Shard), and returns what those five reductions and the
// non-finite branch return: a [7] double vector (max, min, sum, half the sum of squares over the
// finite elements; NaN, -Inf, +Inf counts) and the int32 zero count.
//
// Precision: max, min and the counts are exact (comparisons on the values, with denormal inputs
// kept: TensorFlow's threads run with denormals-are-zero, which would count a subnormal as a
// zero). Sums run in float lanes over chunks of kChunkPerLane elements per lane, each chunk's
// lane sums added in double (as accurate as TensorFlow's float32 reductions or better; the
// float64 conversion of every element is what held a first draft to 2.2 GB/s). A block whose
// sum of squares is not finite (NaN, Inf, or float squares overflowing) or whose values are so
// small that float squares underflow is measured again element by element in double, so the
// non-finite case gives the figures over the finite elements, as the numpy path does. Blocks are
// combined in their order: the result does not depend on the number of threads.

#include <vector>

#include "stats_kernel.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "tensorflow/core/platform/denormal.h"
#include "tensorflow/core/util/work_sharder.h"

namespace tf2npu {
namespace {

// Denormal inputs kept (DAZ off: a subnormal is not a zero), denormal results flushed (FTZ on:
// no microcode assists on tiny squares; kTinyFloat covers what that loses), whatever mode the
// calling thread runs in, restored after.
class DenormalMode {
 public:
#if TF2NPU_X86
  DenormalMode() : saved_(_mm_getcsr()) { _mm_setcsr((saved_ & ~0x0040u) | 0x8000u); }
  ~DenormalMode() { _mm_setcsr(saved_); }

 private:
  unsigned saved_;
#else
 private:
  tensorflow::port::ScopedDontFlushDenormal keep_;
#endif
};

template <typename Raw>
using BlockFn = void (*)(const Raw*, int64_t, Partial*);

template <typename T>
struct Kernel;
template <>
struct Kernel<Eigen::half> {
  using Raw = uint16_t;
  static BlockFn<Raw> Pick(bool avx2) {
#if TF2NPU_X86
    if (avx2) return avx2::MeasureHalf;
#endif
    return baseline::MeasureHalf;
  }
};
template <>
struct Kernel<tensorflow::bfloat16> {
  using Raw = uint16_t;
  static BlockFn<Raw> Pick(bool avx2) {
#if TF2NPU_X86
    if (avx2) return avx2::MeasureBfloat16;
#endif
    return baseline::MeasureBfloat16;
  }
};
template <>
struct Kernel<float> {
  using Raw = float;
  static BlockFn<Raw> Pick(bool avx2) {
#if TF2NPU_X86
    if (avx2) return avx2::MeasureFloat;
#endif
    return baseline::MeasureFloat;
  }
};
template <>
struct Kernel<double> {
  using Raw = double;
  static BlockFn<Raw> Pick(bool avx2) {
#if TF2NPU_X86
    if (avx2) return avx2::MeasureDouble;
#endif
    return baseline::MeasureDouble;
  }
};

const bool kAvx2 = HasAvx2();

template <typename T>
class TensorStatsOp : public tensorflow::OpKernel {
 public:
  explicit TensorStatsOp(tensorflow::OpKernelConstruction* ctx)
      : OpKernel(ctx), measure_(Kernel<T>::Pick(kAvx2)) {}

  void Compute(tensorflow::OpKernelContext* ctx) override {
    using Raw = typename Kernel<T>::Raw;
    static_assert(sizeof(Raw) == sizeof(T), "a raw element is the element's bytes");
    const tensorflow::Tensor& input = ctx->input(0);
    const int64_t n = input.NumElements();
    const Raw* data = reinterpret_cast<const Raw*>(input.flat<T>().data());
    const int64_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<Partial> parts(blocks);
    auto work = [&](int64_t begin, int64_t end) {
      DenormalMode mode;
      for (int64_t b = begin; b < end; ++b) {
        const int64_t start = b * kBlock;
        measure_(data + start, std::min(kBlock, n - start), &parts[b]);
      }
    };
    if (blocks > 1) {
      const auto* threads = ctx->device()->tensorflow_cpu_worker_threads();
      // Cost in Shard's units (about a cycle each): a few per element of a block.
      tensorflow::Shard(threads->num_threads, threads->workers, blocks, 2 * kBlock, work);
    } else {
      work(0, blocks);
    }
    constexpr double kInf = __builtin_inf();
    Partial all{-kInf, kInf, 0.0, 0.0, 0, 0, 0, 0};
    for (const Partial& p : parts) {
      all.top = p.top > all.top ? p.top : all.top;
      all.bottom = p.bottom < all.bottom ? p.bottom : all.bottom;
      all.sum += p.sum;
      all.squares += p.squares;
      all.nan += p.nan;
      all.neg_inf += p.neg_inf;
      all.pos_inf += p.pos_inf;
      all.zero += p.zero;
    }
    tensorflow::Tensor* sums = nullptr;
    tensorflow::Tensor* zero = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, tensorflow::TensorShape({7}), &sums));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, tensorflow::TensorShape({}), &zero));
    auto out = sums->vec<double>();
    out(0) = all.top;
    out(1) = all.bottom;
    out(2) = all.sum;
    out(3) = 0.5 * all.squares;
    out(4) = double(all.nan);
    out(5) = double(all.neg_inf);
    out(6) = double(all.pos_inf);
    zero->scalar<int32_t>()() = static_cast<int32_t>(all.zero);
  }

 private:
  const BlockFn<typename Kernel<T>::Raw> measure_;
};

}  // namespace
}  // namespace tf2npu

REGISTER_OP("Tf2npuTensorStats")
    .Input("x: T")
    .Output("sums: double")
    .Output("zero: int32")
    .Attr("T: {half, bfloat16, float, double}")
    .SetShapeFn([](tensorflow::shape_inference::InferenceContext* c) {
      c->set_output(0, c->Vector(7));
      c->set_output(1, c->Scalar());
      return tensorflow::OkStatus();
    })
    .Doc(R"doc(
The figures of a tensor's dump_data=stats row in one pass (tf2npu.runtime.dump.measure).

sums: max, min, sum, half the sum of squares (over the finite elements), NaN, -Inf, +Inf counts.
zero: the number of elements equal to zero.
)doc");

#define TF2NPU_REGISTER(T)                                                                 \
  REGISTER_KERNEL_BUILDER(                                                                 \
      Name("Tf2npuTensorStats").Device(tensorflow::DEVICE_CPU).TypeConstraint<T>("T"),     \
      tf2npu::TensorStatsOp<T>)
TF2NPU_REGISTER(Eigen::half);
TF2NPU_REGISTER(tensorflow::bfloat16);
TF2NPU_REGISTER(float);
TF2NPU_REGISTER(double);
#undef TF2NPU_REGISTER

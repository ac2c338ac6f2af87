// oneDNN-backed nn kernels (float32 and bfloat16; the caller routes other dtypes to nn_ref.h).
// Primitives are cached by shapes, dtype and attributes; in graph mode a kernel also keeps its
// primitive, memory objects and argument array in the instruction's prepared-state `slot`
// (kernels/kernel_context.h), so a warm launch builds no key, takes no lock and allocates nothing.
// Where oneDNN has no implementation, the dense kernels compute in float32 and round back; the
// memory-bound ones run the nn_ref.h loop.
#pragma once
#include <memory>

#include "mycel/core/tensor.h"
#include "mycel/kernels/cpu/nn_geom.h"
#include "mycel/kernels/kernel_context.h"

namespace mycel::cpu {

/// True for the dtypes these kernels take (float32, bfloat16).
inline bool dnnl_dtype(DType t) { return t == DType::float32 || t == DType::bfloat16; }

/// Who runs the memory-bound nn ops (pooling, softmax, normalization) on float32/bfloat16.
enum class NnBackend {
  kAuto,  // oneDNN where it measured faster than the nn_ref.h loops, the loops elsewhere
  kDnnl,  // oneDNN wherever it can express the op
  kRef,   // the nn_ref.h loops
};
/// The current choice; starts from the environment, MYCEL_NN_BACKEND=auto|dnnl|ref (auto).
NnBackend nn_backend();
/// Overrides the choice (tests and benchmarks).
void set_nn_backend(NnBackend b);
/// Whether a memory-bound op on dtype t runs on oneDNN; dnnl_faster is its choice under kAuto.
inline bool use_dnnl(DType t, bool dnnl_faster) {
  const NnBackend b = nn_backend();
  return dnnl_dtype(t) && (b == NnBackend::kDnnl || (b == NnBackend::kAuto && dnnl_faster));
}

/// c = op(a) @ op(b) (+ bias broadcast over the last dim) per geometry; `params` may ask for
/// post-ops (relu, add a row), which it marks applied.
void matmul_dnnl(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                 const MatmulGeom& g, KernelParams* params = nullptr,
                 std::unique_ptr<KernelPrepared>* slot = nullptr);
/// Whether a float operand whose stored rows run along the output (b not transposed, a
/// transposed) with a row of a multiple of 2 KiB is copied into rows 64 bytes longer before
/// oneDNN reads it (dnnl_matmul.cc, matmul_chain.cc): where oneDNN 2.6 runs its AVX2 sgemm (no
/// AVX-512), whose packing reads such rows from a few L1 sets. Its AVX-512 kernels run as fast
/// on the rows in place (Zen 4), where the copy only cost time. MYCEL_MATMUL_PAD=1 or 0 forces
/// it (read once).
bool pad_power_of_two_rows();
/// A warm graph-mode launch of matmul_dnnl: runs and returns true when `slot` holds a matmul
/// prepared for these shapes and the current thread count (no geometry is computed), else false.
bool matmul_dnnl_warm(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                      KernelParams* params, std::unique_ptr<KernelPrepared>* slot);
/// y = conv2d(x, w) (+ bias), NCHW, weights (OC, C/groups, KH, KW); `params` may ask for relu
/// post-ops and channel-blocked x/y (KernelParams).
void conv2d_dnnl(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                 const WindowGeom& g, KernelParams* params = nullptr,
                 std::unique_ptr<KernelPrepared>* slot = nullptr);
/// dx of conv2d from dy and w (oneDNN backward data), same geometry as the forward. `params` may
/// say dy (dst_blocked) and dx (src_blocked) are bf16 activations in the blocked layout.
void conv2d_backprop_input_dnnl(const Tensor& dy, const Tensor& w, Tensor& dx, const WindowGeom& g,
                                KernelParams* params = nullptr,
                                std::unique_ptr<KernelPrepared>* slot = nullptr);
/// dw of conv2d from dy and x (oneDNN backward weights), same geometry as the forward; `params`
/// may say dy (dst_blocked) and x (src_blocked) are blocked, as above.
void conv2d_backprop_filter_dnnl(const Tensor& dy, const Tensor& x, Tensor& dw, const WindowGeom& g,
                                 KernelParams* params = nullptr,
                                 std::unique_ptr<KernelPrepared>* slot = nullptr);
/// Max pooling, or average pooling (count_include_pad: padded positions count in the divisor);
/// `params` may say x and y are channel-blocked.
void pool2d_dnnl(const Tensor& x, Tensor& y, const WindowGeom& g, bool max, bool count_include_pad,
                 KernelParams* params = nullptr, std::unique_ptr<KernelPrepared>* slot = nullptr);
/// Backward of pool2d_dnnl: dx from dy (max pooling recomputes the argmax from x).
void pool2d_grad_dnnl(const Tensor& x, const Tensor& dy, Tensor& dx, const WindowGeom& g, bool max,
                      bool count_include_pad, std::unique_ptr<KernelPrepared>* slot = nullptr);
/// Softmax (or log-softmax) over the middle dim of x viewed as (outer, len, inner).
void softmax_dnnl(const Tensor& x, Tensor& y, int64_t outer, int64_t len, int64_t inner, bool log,
                  std::unique_ptr<KernelPrepared>* slot = nullptr);
/// Layer norm over rows of x viewed as (outer, inner) with gamma/beta of `inner` elements; writes
/// each row's mean and 1/sqrt(var + eps).
void layer_norm_dnnl(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                     Tensor& mean, Tensor& rstd, int64_t outer, int64_t inner, double eps);
/// Batch norm with batch_norm_ref's contract (running statistics updated in place in training).
void batch_norm_dnnl(const Tensor& x, const Tensor& scale, const Tensor& bias, Tensor& running_mean,
                     Tensor& running_var, Tensor& y, Tensor& saved_mean, Tensor& saved_invstd,
                     int64_t n, int64_t c, int64_t spatial, bool training, double eps,
                     double momentum);

}  // namespace mycel::cpu

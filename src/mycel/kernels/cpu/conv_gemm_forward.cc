#include "mycel/kernels/cpu/conv_gemm_forward.h"

#include <cstdlib>
#include <cstring>

#include "mycel/core/cpu_features.h"
#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/conv_gemm_filter.h"
#include "mycel/kernels/cpu/dnnl_plain_matmul.h"
#include "mycel/kernels/cpu/dnnl_util.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

constexpr int64_t kMaxPlane = 16;                  // output positions per image
constexpr size_t kMaxColBytes = size_t(32) << 20;  // the gathered columns
constexpr int kSlotOut = 0, kSlotCol = 1;          // staging buffers (dnnl_util.h)

// y' (OC x NP) = w (OC x CKK) x colT (CKK x NP), all row-major.
std::shared_ptr<PlainMatmulEntry> build(int64_t oc, int64_t np, int64_t ckk) {
  auto e = std::make_shared<PlainMatmulEntry>();
  const auto f32 = memory::data_type::f32;
  e->a_md = memory::desc({oc, ckk}, f32, memory::dims{ckk, 1});
  e->b_md = memory::desc({ckk, np}, f32, memory::dims{np, 1});
  e->c_md = memory::desc({oc, np}, f32, memory::dims{np, 1});
  e->build_primitive();
  return e;
}

struct GemmForwardPrepared : KernelPrepared {
  int threads = 0;
  WindowGeom g;
  PlainMatmulCall mm;
};

// y[n, oc, p] = y'[oc, (n, p)] + bias[oc].
void scatter_rows(const float* yt, const float* bias, float* y, const WindowGeom& g) {
  const int64_t plane = g.oh * g.ow, np = g.n * plane;
  parallel_for(g.n * g.oc, plane * 2, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / g.oc, oc = r % g.oc;
      const float* src = yt + oc * np + n * plane;
      float* dst = y + r * plane;
      if (!bias) {
        std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(plane));
        continue;
      }
      const float b = bias[oc];
      for (int64_t p = 0; p < plane; ++p) dst[p] = src[p] + b;
    }
  });
}

// Read at every call, as MYCEL_WINOGRAD_NCHW (a getenv against a convolution of milliseconds):
// a test can take oneDNN's direct sums for a reference (test_int8.py's fake quant).
bool enabled() {
  static const bool cpu = cpu_has_avx512() && !cpu_is_zen4();
  const char* v = std::getenv("MYCEL_CONV_GEMM_FWD");
  return cpu && !(v && *v && std::strcmp(v, "0") == 0);
}

}  // namespace

bool conv2d_gemm_forward_fits(DType dtype, const WindowGeom& g) {
  if (dtype != DType::float32 || g.groups != 1 || g.oh * g.ow > kMaxPlane || g.oh * g.ow == 0 ||
      g.kh * g.kw == 1 || !enabled())
    return false;
  const int64_t np = g.n * g.oh * g.ow, ckk = g.c * g.kh * g.kw;
  return np >= 64 && g.oc >= 16 && ckk >= 16 &&
         static_cast<size_t>(np * ckk) * sizeof(float) <= kMaxColBytes;
}

void conv2d_gemm_forward(const Tensor& x, const Tensor& w, const Tensor* bias, Tensor& y,
                         const WindowGeom& g, std::unique_ptr<KernelPrepared>* slot) {
  const int64_t np = g.n * g.oh * g.ow, ckk = g.c * g.kh * g.kw;
  std::unique_ptr<GemmForwardPrepared> local;
  GemmForwardPrepared& p = prepared_state<GemmForwardPrepared>(
      slot, local,
      [&](const GemmForwardPrepared& q) { return q.threads == num_threads() && same_geom(q.g, g); },
      [&] {
        auto q = std::make_unique<GemmForwardPrepared>();
        q->threads = num_threads();
        q->g = g;
        q->mm.bind(cached<PlainMatmulEntry>(key("conv2d_gemm_fwd", g.oc, np, ckk),
                                            [&] { return build(g.oc, np, ckk); }));
        return q;
      });
  MYCEL_CHECK(p.mm.e->ok, RuntimeError, "[conv2d] oneDNN has no float32 matmul");
  auto* yt = static_cast<float*>(staging_data(kSlotOut, sizeof(float) * size_t(g.oc * np)));
  auto* col = static_cast<float*>(staging_data(kSlotCol, sizeof(float) * size_t(ckk * np)));
  conv_gather_columns(x.data<float>(), col, g);
  p.mm.run(w.data(), col, yt);
  scatter_rows(yt, bias ? bias->data<float>() : nullptr, y.data<float>(), g);
}

}  // namespace mycel::cpu

#include "mycel/kernels/cpu/conv_gemm_filter.h"

#include <cstring>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/dnnl_plain_matmul.h"
#include "mycel/kernels/cpu/dnnl_util.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

constexpr int64_t kMaxPlane = 16;  // output positions per image (at 8x8 the two tie)
constexpr size_t kMaxColBytes = size_t(32) << 20;  // the gathered columns
constexpr int kSlotDy = 0, kSlotCol = 1;           // staging buffers (dnnl_util.h)

using GemmFilterEntry = PlainMatmulEntry;

// dw (OC x CKK) = dyT (OC x NP) x colT^T, colT stored (CKK, NP): b read transposed, whose rows
// run along K (no L1 set conflicts at any NP; see dnnl_matmul.cc).
std::shared_ptr<GemmFilterEntry> build(int64_t oc, int64_t np, int64_t ckk) {
  auto e = std::make_shared<GemmFilterEntry>();
  const auto f32 = memory::data_type::f32;
  e->a_md = memory::desc({oc, np}, f32, memory::dims{np, 1});
  e->b_md = memory::desc({np, ckk}, f32, memory::dims{1, np});
  e->c_md = memory::desc({oc, ckk}, f32, memory::dims{ckk, 1});
  e->build_primitive();
  return e;
}

struct GemmFilterPrepared : KernelPrepared {
  int threads = 0;
  WindowGeom g;
  PlainMatmulCall mm;
};

// dyT[oc, (n, p)] = dy[n, oc, p].
void transpose_dy(const float* dy, float* dyt, const WindowGeom& g) {
  const int64_t plane = g.oh * g.ow, np = g.n * plane;
  parallel_for(g.oc, np, [&](int64_t o0, int64_t o1) {
    for (int64_t oc = o0; oc < o1; ++oc)
      for (int64_t n = 0; n < g.n; ++n)
        std::memcpy(dyt + oc * np + n * plane, dy + (n * g.oc + oc) * plane,
                    sizeof(float) * static_cast<size_t>(plane));
  });
}

}  // namespace

void conv_gather_columns(const float* x, float* col, const WindowGeom& g) {
  const int64_t plane = g.oh * g.ow, np = g.n * plane, ckk = g.c * g.kh * g.kw;
  parallel_for(ckk, np, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t c = r / (g.kh * g.kw), i = r / g.kw % g.kh, j = r % g.kw;
      float* out = col + r * np;
      for (int64_t n = 0; n < g.n; ++n) {
        const float* xp = x + (n * g.c + c) * g.h * g.w;
        for (int64_t oh = 0; oh < g.oh; ++oh) {
          const int64_t ih = oh * g.sh - g.pt + i * g.dh;
          float* o = out + n * plane + oh * g.ow;
          if (ih < 0 || ih >= g.h) {
            std::memset(o, 0, sizeof(float) * static_cast<size_t>(g.ow));
            continue;
          }
          const float* row = xp + ih * g.w;
          for (int64_t ow = 0; ow < g.ow; ++ow) {
            const int64_t iw = ow * g.sw - g.pl + j * g.dw;
            o[ow] = iw >= 0 && iw < g.w ? row[iw] : 0.f;
          }
        }
      }
    }
  });
}

bool conv2d_gemm_bwd_filter_fits(DType dtype, const WindowGeom& g) {
  // 1x1 kernels stay with oneDNN's jit_1x1, which has no such loss.
  if (dtype != DType::float32 || g.groups != 1 || g.oh * g.ow > kMaxPlane || g.oh * g.ow == 0 ||
      g.kh * g.kw == 1)
    return false;
  const int64_t np = g.n * g.oh * g.ow, ckk = g.c * g.kh * g.kw;
  // Enough rows for the GEMM to beat the direct kernel's overheads.
  return np >= 64 && g.oc >= 16 && ckk >= 16 &&
         static_cast<size_t>(np * ckk) * sizeof(float) <= kMaxColBytes;
}

void conv2d_gemm_backprop_filter(const Tensor& dy, const Tensor& x, Tensor& dw, const WindowGeom& g,
                                 std::unique_ptr<KernelPrepared>* slot) {
  const int64_t np = g.n * g.oh * g.ow, ckk = g.c * g.kh * g.kw;
  std::unique_ptr<GemmFilterPrepared> local;
  GemmFilterPrepared& p = prepared_state<GemmFilterPrepared>(
      slot, local,
      [&](const GemmFilterPrepared& q) { return q.threads == num_threads() && same_geom(q.g, g); },
      [&] {
        auto q = std::make_unique<GemmFilterPrepared>();
        q->threads = num_threads();
        q->g = g;
        q->mm.bind(cached<GemmFilterEntry>(key("conv2d_gemm_bwd_w", g.oc, np, ckk),
                                           [&] { return build(g.oc, np, ckk); }));
        return q;
      });
  MYCEL_CHECK(p.mm.e->ok, RuntimeError, "[conv2d_backprop_filter] oneDNN has no float32 matmul");
  auto* dyt = static_cast<float*>(staging_data(kSlotDy, sizeof(float) * size_t(g.oc * np)));
  auto* col = static_cast<float*>(staging_data(kSlotCol, sizeof(float) * size_t(ckk * np)));
  transpose_dy(dy.data<float>(), dyt, g);
  conv_gather_columns(x.data<float>(), col, g);
  p.mm.run(dyt, col, dw.data());
}

}  // namespace mycel::cpu

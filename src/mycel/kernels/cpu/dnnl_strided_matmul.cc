// matmul_strided: one oneDNN matmul primitive over strided memory descriptors. brgemm's bf16
// kernels read a head-split operand (rows of d elements, `heads * d` apart) as fast as a
// contiguous one (64 x 128x128x32 on two cores: 176 us strided against 177 contiguous), so the
// transpose that would make it contiguous is pure cost.
#include "mycel/kernels/cpu/dnnl_strided_matmul.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"
#include "mycel/kernels/cpu/matmul_heads_bf16.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

struct StridedEntry : Entry {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  memory::desc a_md, b_md, c_md;
};

struct StridedPrepared : KernelPrepared {
  int threads = 0;
  int64_t work = 0;
  bool own = false;  // matmul_heads_bf16 (decided when prepared, so that an A/B reads the switch)
  std::shared_ptr<StridedEntry> e;
  PreparedExec exec;
  int a_a = -1, a_b = -1, a_c = -1;
};

memory::desc desc_of(const StridedView& v, memory::data_type dt) {
  return memory::desc(memory::dims(v.dims.begin(), v.dims.end()), dt,
                      memory::dims(v.strides.begin(), v.strides.end()));
}

float load(const void* p, DType t, int64_t i) {
  return t == DType::bfloat16 ? bf16_widen(static_cast<const uint16_t*>(p)[i])
                              : static_cast<const float*>(p)[i];
}

// Calls f(offset in the view's buffer, index in the contiguous order of v.dims) for every element.
template <class F>
void for_each_element(const StridedView& v, F&& f) {
  const size_t nd = v.dims.size();
  std::vector<int64_t> idx(nd, 0);
  const int64_t n = numel(Shape(v.dims.begin(), v.dims.end()));
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(off, i);
    for (size_t d = nd; d-- > 0;) {  // the next index, last dim fastest
      off += v.strides[d];
      if (++idx[d] < v.dims[d]) break;
      off -= v.strides[d] * v.dims[d];
      idx[d] = 0;
    }
  }
}

Tensor gather_f32(const Tensor& t, const StridedView& v) {
  Tensor o = Tensor::empty(Shape(v.dims.begin(), v.dims.end()), DType::float32);
  float* dst = o.data<float>();
  for_each_element(v, [&](int64_t off, int64_t i) { dst[i] = load(t.data(), t.dtype(), off); });
  return o;
}

// Where oneDNN has no kernel (bfloat16 without AVX-512): the views copied to contiguous float32,
// matmul_dnnl's float32 product (what the unfused bf16 matmul runs there), rounded into c's view.
void via_f32(const Tensor& a, const Tensor& b, Tensor& c, const StridedMatmul& s) {
  const size_t nb = s.c.dims.size() - 2;
  MatmulGeom g;
  g.batch = Shape(s.c.dims.begin(), s.c.dims.begin() + static_cast<std::ptrdiff_t>(nb));
  g.a_batch = g.b_batch = g.batch;
  g.m = s.c.dims[nb];
  g.n = s.c.dims[nb + 1];
  g.k = s.a.dims[nb + 1];
  g.out_shape = Shape(s.c.dims.begin(), s.c.dims.end());
  Tensor a32 = gather_f32(a, s.a), b32 = gather_f32(b, s.b),
         c32 = Tensor::empty(g.out_shape, DType::float32);
  matmul_dnnl(a32, b32, nullptr, c32, g);
  const float* src = c32.data<float>();
  for_each_element(s.c, [&](int64_t off, int64_t i) {
    if (c.dtype() == DType::bfloat16)
      static_cast<uint16_t*>(c.data())[off] = bf16_round_bits(src[i]);
    else
      static_cast<float*>(c.data())[off] = src[i];
  });
}

std::shared_ptr<StridedEntry> build(DType t, const StridedMatmul& s) {
  auto e = std::make_shared<StridedEntry>();
  const auto dt = to_dnnl(t);
  e->a_md = desc_of(s.a, dt);
  e->b_md = desc_of(s.b, dt);
  e->c_md = desc_of(s.c, dt);
  // MYCEL_STRIDED_MATMUL_VIA_F32=1: the fallback below on any CPU (its tests).
  if (const char* v = std::getenv("MYCEL_STRIDED_MATMUL_VIA_F32"); v && *v == '1') {
    e->ok = false;
    return e;
  }
  try {
    e->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(e->a_md, e->b_md, e->c_md),
                                         default_attr(), engine());
    e->prim = dnnl::matmul(e->pd);
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

}  // namespace

void matmul_strided(const Tensor& a, const Tensor& b, Tensor& c, const StridedMatmul& s,
                    std::unique_ptr<KernelPrepared>* slot) {
  if (c.numel() == 0) return;
  const int64_t K = s.a.dims.back();
  if (K == 0) {  // an empty sum: zeros (the views cover c's whole buffer)
    std::memset(c.data(), 0, c.nbytes());
    return;
  }
  const int64_t work = c.numel() * K;
  const SerialScope threads(work);
  std::unique_ptr<StridedPrepared> local;
  StridedPrepared& p = prepared_state<StridedPrepared>(
      slot, local, [&](const StridedPrepared& q) { return q.threads == num_threads(); },
      [&] {
        auto q = std::make_unique<StridedPrepared>();
        q->threads = num_threads();
        q->work = work;
        const char* f32 = std::getenv("MYCEL_STRIDED_MATMUL_VIA_F32");
        q->own = c.dtype() == DType::bfloat16 && a.dtype() == DType::bfloat16 &&
                 b.dtype() == DType::bfloat16 && !(f32 && *f32 == '1') &&
                 matmul_heads_bf16_available() && matmul_heads_bf16_fits(s);
        if (q->own) return q;
        std::string views;
        for (const StridedView* v : {&s.a, &s.b, &s.c})
          views += shape_str(v->dims) + shape_str(v->strides);
        q->e = cached<StridedEntry>(
            key("matmul_strided", dtype_name(c.dtype()), views, f32 && *f32 == '1'),
            [&] { return build(c.dtype(), s); });
        if (q->e->ok) {
          q->exec = PreparedExec(q->e->prim, &q->e->pd);
          q->a_a = q->exec.add(DNNL_ARG_SRC, q->e->a_md);
          q->a_b = q->exec.add(DNNL_ARG_WEIGHTS, q->e->b_md);
          q->a_c = q->exec.add(DNNL_ARG_DST, q->e->c_md);
        }
        return q;
      });
  if (p.own)
    return matmul_heads_bf16(static_cast<const uint16_t*>(a.data()),
                             static_cast<const uint16_t*>(b.data()),
                             static_cast<uint16_t*>(c.data()), s);
  if (!p.e->ok) return via_f32(a, b, c, s);
  p.exec.set(p.a_a, a.data());
  p.exec.set(p.a_b, b.data());
  p.exec.set(p.a_c, c.data());
  p.exec.run();
  stream().wait();
}

}  // namespace mycel::cpu

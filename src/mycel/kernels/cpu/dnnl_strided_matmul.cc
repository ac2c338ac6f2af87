// matmul_strided: one oneDNN matmul primitive over strided memory descriptors. brgemm's bf16
// kernels read a head-split operand (rows of d elements, `heads * d` apart) as fast as a
// contiguous one (64 x 128x128x32 on two cores: 176 us strided against 177 contiguous), so the
// transpose that would make it contiguous is pure cost.
#include "mycel/kernels/cpu/dnnl_strided_matmul.h"

#include <cstring>
#include <string>

#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/fused_elementwise_outputs.h"

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

// Where oneDNN has no kernel: the product in float over the views, rounded once per element.
void strided_loop(const Tensor& a, const Tensor& b, Tensor& c, const StridedMatmul& s) {
  const size_t nb = s.c.dims.size() - 2;
  int64_t batches = 1;
  for (size_t d = 0; d < nb; ++d) batches *= s.c.dims[d];
  const int64_t M = s.c.dims[nb], N = s.c.dims[nb + 1], K = s.a.dims[nb + 1];
  const DType t = c.dtype();
  parallel_for(batches, M * N * K, [&](int64_t b0, int64_t b1) {
    for (int64_t bi = b0; bi < b1; ++bi) {
      int64_t oa = 0, ob = 0, oc = 0, rest = bi;
      for (size_t d = nb; d-- > 0;) {
        const int64_t i = rest % s.c.dims[d];
        rest /= s.c.dims[d];
        oa += i * s.a.strides[d];
        ob += i * s.b.strides[d];
        oc += i * s.c.strides[d];
      }
      for (int64_t m = 0; m < M; ++m)
        for (int64_t n = 0; n < N; ++n) {
          float acc = 0.f;
          for (int64_t k = 0; k < K; ++k)
            acc += load(a.data(), t, oa + m * s.a.strides[nb] + k * s.a.strides[nb + 1]) *
                   load(b.data(), t, ob + k * s.b.strides[nb] + n * s.b.strides[nb + 1]);
          const int64_t o = oc + m * s.c.strides[nb] + n * s.c.strides[nb + 1];
          if (t == DType::bfloat16)
            static_cast<uint16_t*>(c.data())[o] = bf16_round_bits(acc);
          else
            static_cast<float*>(c.data())[o] = acc;
        }
    }
  });
}

std::shared_ptr<StridedEntry> build(DType t, const StridedMatmul& s) {
  auto e = std::make_shared<StridedEntry>();
  const auto dt = to_dnnl(t);
  e->a_md = desc_of(s.a, dt);
  e->b_md = desc_of(s.b, dt);
  e->c_md = desc_of(s.c, dt);
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
        std::string views;
        for (const StridedView* v : {&s.a, &s.b, &s.c})
          views += shape_str(v->dims) + shape_str(v->strides);
        q->e = cached<StridedEntry>(key("matmul_strided", dtype_name(c.dtype()), views),
                                    [&] { return build(c.dtype(), s); });
        if (q->e->ok) {
          q->exec = PreparedExec(q->e->prim, &q->e->pd);
          q->a_a = q->exec.add(DNNL_ARG_SRC, q->e->a_md);
          q->a_b = q->exec.add(DNNL_ARG_WEIGHTS, q->e->b_md);
          q->a_c = q->exec.add(DNNL_ARG_DST, q->e->c_md);
        }
        return q;
      });
  if (!p.e->ok) return strided_loop(a, b, c, s);
  p.exec.set(p.a_a, a.data());
  p.exec.set(p.a_b, b.data());
  p.exec.set(p.a_c, c.data());
  p.exec.run();
  stream().wait();
}

}  // namespace mycel::cpu

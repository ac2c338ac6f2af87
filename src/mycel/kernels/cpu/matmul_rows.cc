#include "mycel/kernels/cpu/matmul_rows.h"

#include <omp.h>

#include <cstring>
#include <vector>

#include "mycel/core/error.h"
#include "mycel/core/parallel.h"
#include "mycel/kernels/cpu/dnnl_util.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

// The split needs at least this many rows a thread (below, one primitive on all of them).
constexpr int64_t kMinPartRows = 16;

struct RowsEntry : Entry {
  dnnl::matmul::primitive_desc pd, part_pd;
  dnnl::matmul prim, part_prim;
  memory::desc a_md, b_md, c_md, part_a_md, part_c_md;
  int parts = 0;  // threads running a one-thread primitive each on rows / parts rows
  int64_t part_rows = 0;
};

std::shared_ptr<RowsEntry> build(DType dtype, int64_t M, int64_t K, int64_t N) {
  auto e = std::make_shared<RowsEntry>();
  const auto dt = to_dnnl(dtype);
  e->a_md = memory::desc({M, K}, dt, {K, 1});
  e->b_md = memory::desc({K, N}, dt, {N, 1});
  e->c_md = memory::desc({M, N}, dt, {N, 1});
  try {
    e->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(e->a_md, e->b_md, e->c_md),
                                         default_attr(), engine());
    e->prim = dnnl::matmul(e->pd);
    const int nt = num_threads();
    if (nt > 1 && M % nt == 0 && M / nt >= kMinPartRows) {
      e->part_rows = M / nt;
      e->part_a_md = memory::desc({e->part_rows, K}, dt, {K, 1});
      e->part_c_md = memory::desc({e->part_rows, N}, dt, {N, 1});
      const SerialScope one(0);  // built for the one thread that runs it
      e->part_pd = dnnl::matmul::primitive_desc(
          dnnl::matmul::desc(e->part_a_md, e->b_md, e->part_c_md), default_attr(), engine());
      e->part_prim = dnnl::matmul(e->part_pd);
      e->parts = nt;
    }
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

struct RowsPrepared : KernelPrepared {
  std::shared_ptr<RowsEntry> e;
  int threads = 0;
  Shape a_shape, b_shape;
  PreparedExec full;
  int args[3] = {-1, -1, -1};
  std::vector<PreparedExec> parts;
  int part_args[3] = {-1, -1, -1};
};

}  // namespace

void matmul_rows_then(const Tensor& a, const Tensor& b, Tensor& c, RowEpilogue after, void* ctx,
                      std::unique_ptr<KernelPrepared>* slot) {
  const Shape& as = a.shape();
  MYCEL_CHECK(as.size() >= 2 && b.shape().size() == 2 && b.shape()[0] == as.back() &&
                  a.dtype() == b.dtype() && c.dtype() == a.dtype() &&
                  (a.dtype() == DType::bfloat16 || a.dtype() == DType::float32),
              RuntimeError,
              "[matmul_rows_then] expects a (..., M, K) and b (K, N) of one dtype "
              "(bfloat16 or float32), given a ",
              shape_str(as), " ", dtype_name(a.dtype()), ", b ", shape_str(b.shape()), " ",
              dtype_name(b.dtype()));
  const int64_t K = as.back(), N = b.shape()[1], M = K ? a.numel() / K : 0;
  MYCEL_CHECK(c.numel() == M * N, RuntimeError, "[matmul_rows_then] c has ", c.numel(),
              " elements, expected ", M * N);
  if (M == 0 || N == 0) return;
  if (K == 0) {
    std::memset(c.data(), 0, c.nbytes());
    after(ctx, 0, M);
    return;
  }
  const SerialScope threads(M * N * K);
  std::unique_ptr<RowsPrepared> local;
  RowsPrepared& p = prepared_state<RowsPrepared>(
      slot, local,
      [&](const RowsPrepared& q) {
        return q.threads == num_threads() && q.a_shape == as && q.b_shape == b.shape();
      },
      [&] {
        auto q = std::make_unique<RowsPrepared>();
        q->threads = num_threads();
        q->a_shape = as;
        q->b_shape = b.shape();
        q->e = cached<RowsEntry>(key("matmul_rows", dtype_name(a.dtype()), M, K, N),
                                 [&] { return build(a.dtype(), M, K, N); });
        if (q->e->ok) {
          q->full = PreparedExec(q->e->prim, &q->e->pd);
          q->args[0] = q->full.add(DNNL_ARG_SRC, q->e->a_md);
          q->args[1] = q->full.add(DNNL_ARG_WEIGHTS, q->e->b_md);
          q->args[2] = q->full.add(DNNL_ARG_DST, q->e->c_md);
          for (int t = 0; t < q->e->parts; ++t) {
            PreparedExec& x = q->parts.emplace_back(q->e->part_prim, &q->e->part_pd);
            q->part_args[0] = x.add(DNNL_ARG_SRC, q->e->part_a_md);
            q->part_args[1] = x.add(DNNL_ARG_WEIGHTS, q->e->b_md);
            q->part_args[2] = x.add(DNNL_ARG_DST, q->e->part_c_md);
          }
        }
        return q;
      });
  MYCEL_CHECK(p.e->ok, RuntimeError, "[matmul_rows_then] oneDNN has no ", dtype_name(a.dtype()),
              " matmul on this CPU");
  const size_t isz = itemsize(a.dtype());
  const int T = p.e->parts;
  if (T > 1 && num_threads() == T && !omp_in_parallel()) {
    const int64_t rows = p.e->part_rows;
#pragma omp parallel num_threads(T)
    {
      const int id = omp_get_thread_num(), got = omp_get_num_threads();
      for (int t = id; t < T; t += got) {
        PreparedExec& x = p.parts[t];
        x.set(p.part_args[0], static_cast<const char*>(a.data()) + t * rows * K * isz);
        x.set(p.part_args[1], b.data());
        x.set(p.part_args[2], static_cast<char*>(c.data()) + t * rows * N * isz);
        x.run();
        stream().wait();
        after(ctx, t * rows, (t + 1) * rows);
      }
    }
    return;
  }
  p.full.set(p.args[0], a.data());
  p.full.set(p.args[1], b.data());
  p.full.set(p.args[2], c.data());
  p.full.run();
  stream().wait();
  parallel_for(M, N, [&](int64_t r0, int64_t r1) { after(ctx, r0, r1); });
}

}  // namespace mycel::cpu

// matmul and dense on oneDNN's matmul primitive: strides express the transposes, size-1 batch dims
// broadcast, and the bias is a (1, ..., N) tensor.
#include <cstring>

#include "mycel/kernels/cpu/dnnl_ops.h"
#include "mycel/kernels/cpu/dnnl_post_ops.h"
#include "mycel/kernels/cpu/dnnl_util.h"
#include "mycel/kernels/cpu/nn_ref.h"

namespace mycel::cpu {
namespace {

using dnnl::memory;
using namespace dnnl_util;

struct MatmulEntry : Entry {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  memory::desc a_md, b_md, bias_md, c_md, row_md;  // row_md: (1, ..., N), for add-row post-ops
};

// Row-major strides of `batch` with matrices of `mat` elements, then the matrix's own strides.
memory::dims strides_for(const Shape& batch, int64_t mat, int64_t s_row, int64_t s_col) {
  memory::dims s(batch.size() + 2);
  int64_t acc = mat;
  for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
    s[d] = acc;
    acc *= batch[d];
  }
  s[batch.size()] = s_row;
  s[batch.size() + 1] = s_col;
  return s;
}

memory::dims dims_of(const Shape& batch, int64_t rows, int64_t cols) {
  memory::dims d(batch.begin(), batch.end());
  d.push_back(rows);
  d.push_back(cols);
  return d;
}

std::shared_ptr<MatmulEntry> build(DType dtype, const MatmulGeom& g, bool has_bias,
                                   const KernelParams* post) {
  auto e = std::make_shared<MatmulEntry>();
  const auto dt = to_dnnl(dtype);
  const int64_t M = g.m, K = g.k, N = g.n;
  e->a_md = memory::desc(dims_of(g.a_batch, M, K), dt,
                         strides_for(g.a_batch, M * K, g.trans_a ? 1 : K, g.trans_a ? M : 1));
  e->b_md = memory::desc(dims_of(g.b_batch, K, N), dt,
                         strides_for(g.b_batch, K * N, g.trans_b ? 1 : N, g.trans_b ? K : 1));
  e->c_md = memory::desc(dims_of(g.batch, M, N), dt, strides_for(g.batch, M * N, N, 1));
  Shape ones(g.batch.size(), 1);
  e->row_md = memory::desc(dims_of(ones, 1, N), dt, strides_for(ones, N, N, 1));
  if (has_bias) e->bias_md = e->row_md;
  try {
    dnnl::primitive_attr attr = default_attr();
    append_post_ops(attr, post, e->row_md);
    dnnl::matmul::desc d = has_bias ? dnnl::matmul::desc(e->a_md, e->b_md, e->bias_md, e->c_md)
                                    : dnnl::matmul::desc(e->a_md, e->b_md, e->c_md);
    e->pd = dnnl::matmul::primitive_desc(d, attr, engine());
    e->prim = dnnl::matmul(e->pd);
  } catch (const dnnl::error& err) {
    if (!is_unimplemented(err)) throw;
    e->ok = false;
  }
  return e;
}

// Runs in float32 and rounds into c: bfloat16 where oneDNN has no bf16 kernel.
void matmul_via_f32(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                    const MatmulGeom& g, bool use_dnnl) {
  Tensor a32 = a.to(DType::float32), b32 = b.to(DType::float32),
         c32 = Tensor::empty(c.shape(), DType::float32);
  Tensor bias32 = bias ? bias->to(DType::float32) : Tensor();
  if (use_dnnl)
    matmul_dnnl(a32, b32, bias ? &bias32 : nullptr, c32, g);
  else
    matmul_ref<float>(a32, b32, bias ? &bias32 : nullptr, c32, g);
  convert_elements(c32.data(), DType::float32, c.data(), c.dtype(), c.numel());
}

// A matmul prepared for one instruction: the entry, its call, and which arguments take the
// add-row post-ops' operands.
struct MatmulPrepared : KernelPrepared {
  int threads = 0;
  int64_t work = 0;  // for the SerialScope of a warm launch
  Shape a_shape, b_shape;
  bool has_bias = false;
  std::shared_ptr<MatmulEntry> e;
  PreparedExec exec;
  int a_a = -1, a_b = -1, a_c = -1, a_bias = -1;
  std::vector<std::pair<int, int>> rows;  // (post-op index, argument index)
};

std::unique_ptr<MatmulPrepared> prepare(std::shared_ptr<MatmulEntry> e, const Tensor& a,
                                        const Tensor& b, bool has_bias, int64_t work,
                                        const KernelParams* post) {
  auto p = std::make_unique<MatmulPrepared>();
  p->threads = num_threads();
  p->work = work;
  p->a_shape = a.shape();
  p->b_shape = b.shape();
  p->has_bias = has_bias;
  if (e->ok) {
    p->exec = PreparedExec(e->prim, &e->pd);
    p->a_a = p->exec.add(DNNL_ARG_SRC, e->a_md);
    p->a_b = p->exec.add(DNNL_ARG_WEIGHTS, e->b_md);
    p->a_c = p->exec.add(DNNL_ARG_DST, e->c_md);
    if (has_bias) p->a_bias = p->exec.add(DNNL_ARG_BIAS, e->bias_md);
    if (post)
      for (size_t i = 0; i < post->post_ops.size(); ++i)
        if (post->post_ops[i].kind == PostOp::Kind::kAddRow)
          p->rows.push_back(
              {static_cast<int>(i),
               p->exec.add(DNNL_ARG_ATTR_MULTIPLE_POST_OP(static_cast<int>(i)) | DNNL_ARG_SRC_1,
                           e->row_md)});
  }
  p->e = std::move(e);
  return p;
}

void run(MatmulPrepared& p, const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
         const KernelParams* post) {
  p.exec.set(p.a_a, a.data());
  p.exec.set(p.a_b, b.data());
  p.exec.set(p.a_c, c.data());
  if (bias) p.exec.set(p.a_bias, bias->data());
  for (const auto& [i, arg] : p.rows) p.exec.set(arg, post->post_ops[i].operand.data());
  p.exec.run();
  stream().wait();
}

}  // namespace

bool matmul_dnnl_warm(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                      KernelParams* params, std::unique_ptr<KernelPrepared>* slot) {
  if (!slot) return false;
  auto* p = dynamic_cast<MatmulPrepared*>(slot->get());
  if (!p || !p->e->ok || p->has_bias != (bias != nullptr) || p->a_shape != a.shape() ||
      p->b_shape != b.shape())
    return false;
  const SerialScope threads(p->work);
  if (p->threads != num_threads()) return false;
  const KernelParams* post = post_ops_of(params);
  if (!p->rows.empty() && !post) return false;
  run(*p, a, b, bias, c, post);
  if (post) params->post_applied = true;
  return true;
}

void matmul_dnnl(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                 const MatmulGeom& g, KernelParams* params, std::unique_ptr<KernelPrepared>* slot) {
  const KernelParams* post = post_ops_of(params);
  if (c.numel() == 0) return;
  if (g.k == 0) {  // an empty sum: zeros (plus bias)
    std::memset(c.data(), 0, c.nbytes());
    if (bias) {  // c[..., j] = bias[j], in c's own dtype
      const size_t isz = itemsize(c.dtype());
      for (int64_t r = 0; r < c.numel() / g.n; ++r)
        std::memcpy(static_cast<char*>(c.data()) + r * g.n * isz, bias->data(), g.n * isz);
    }
    return;
  }
  const int64_t work = c.numel() * g.k;
  const SerialScope threads(work);
  std::unique_ptr<MatmulPrepared> local;
  MatmulPrepared& p = prepared_state<MatmulPrepared>(
      slot, local,
      [&](const MatmulPrepared& q) {
        return q.threads == num_threads() && q.has_bias == (bias != nullptr) &&
               q.a_shape == a.shape() && q.b_shape == b.shape();
      },
      [&] {
        const std::string k =
            key("matmul", dtype_name(c.dtype()), shape_str(g.a_batch), shape_str(g.b_batch), g.m,
                g.k, g.n, g.trans_a, g.trans_b, bias != nullptr, post_ops_key(post));
        auto e = cached<MatmulEntry>(k, [&] { return build(c.dtype(), g, bias != nullptr, post); });
        return prepare(std::move(e), a, b, bias != nullptr, work, post);
      });
  if (!p.e->ok) {
    if (c.dtype() == DType::float32) return matmul_ref<float>(a, b, bias, c, g);
    return matmul_via_f32(a, b, bias, c, g, true);
  }
  run(p, a, b, bias, c, post);
  if (post) params->post_applied = true;
}

}  // namespace mycel::cpu

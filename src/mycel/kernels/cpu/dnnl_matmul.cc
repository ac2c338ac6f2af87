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
                                   const PostOpRequest* post) {
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

}  // namespace

void matmul_dnnl(const Tensor& a, const Tensor& b, const Tensor* bias, Tensor& c,
                 const MatmulGeom& g) {
  PostOpRequest* post = take_post_ops();
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
  const SerialScope threads(c.numel() * g.k);
  const std::string k =
      key("matmul", dtype_name(c.dtype()), shape_str(g.a_batch), shape_str(g.b_batch), g.m, g.k,
          g.n, g.trans_a, g.trans_b, bias != nullptr, post_ops_key(post));
  auto e = cached<MatmulEntry>(k, [&] { return build(c.dtype(), g, bias != nullptr, post); });
  if (!e->ok) {
    if (c.dtype() == DType::float32) return matmul_ref<float>(a, b, bias, c, g);
    return matmul_via_f32(a, b, bias, c, g, true);
  }
  Tensor pad = scratchpad(e->pd);
  std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, wrap(e->a_md, a)},
      {DNNL_ARG_WEIGHTS, wrap(e->b_md, b)},
      {DNNL_ARG_DST, wrap(e->c_md, c)},
      {DNNL_ARG_SCRATCHPAD, memory(e->pd.scratchpad_desc(), engine(), pad.data())}};
  if (bias) args[DNNL_ARG_BIAS] = wrap(e->bias_md, *bias);
  add_post_op_args(args, post, e->row_md);
  e->prim.execute(stream(), args);
  stream().wait();
  if (post) post->applied = true;
}

}  // namespace mycel::cpu

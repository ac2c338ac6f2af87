// dynamic_slice(x, begin, size): MindSpore's Slice with begin and size given as 1-d integer
// tensors whose values are known only when the program runs (analysis routes such a slice here,
// eval_op.cc). Every dim of the result is data-dependent (ops/data_dependent.h): the kernel reads
// the bounds and allocates. dynamic_slice_grad puts the sensitivity back at begin in zeros
// shaped like x.
#include <cstring>

#include "mycel/ops/bprop_util.h"
#include "mycel/ops/data_dependent.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

void check_bounds_input(const InferContext& c, size_t i, size_t rank) {
  const TensorMeta& b = c.in(i);
  MYCEL_CHECK(is_integral(b.dtype), TypeError, "[", c.op.name, "] input '", input_name(c, i),
              "' must be an integer tensor, got ", dtype_name(b.dtype));
  MYCEL_CHECK(b.shape.size() == 1 && b.shape[0] == static_cast<int64_t>(rank), ValueError, "[",
              c.op.name, "] input '", input_name(c, i), "' must have shape (", rank,
              ",), one value per dimension of x, got ", shape_str(b.shape));
}

std::vector<TensorMeta> dynamic_slice_infer(const InferContext& c) {
  const size_t rank = c.in(0).shape.size();
  check_bounds_input(c, 1, rank);
  check_bounds_input(c, 2, rank);
  return {{Shape(rank, kDataDependent), c.in(0).dtype}};
}

std::vector<int64_t> values(const Tensor& t) {
  Tensor v = t.to(DType::int64);
  return std::vector<int64_t>(v.data<int64_t>(), v.data<int64_t>() + v.numel());
}

// The result's shape for x's shape, begin and size (-1: to the end); checks the bounds.
Shape slice_shape(const Shape& xs, const std::vector<int64_t>& begin,
                  const std::vector<int64_t>& size, const char* op) {
  Shape out(xs.size());
  for (size_t d = 0; d < xs.size(); ++d) {
    const int64_t n = size[d] == -1 ? xs[d] - begin[d] : size[d];
    MYCEL_CHECK(begin[d] >= 0 && n >= 0 && begin[d] <= xs[d] && n <= xs[d] - begin[d], ValueError,
                "[", op, "] begin ", shape_str(begin), " and size ", shape_str(size),
                " are out of range for x of shape ", shape_str(xs), " (dimension ", d, ")");
    out[d] = n;
  }
  return out;
}

// Copies the box of `box` elements at `begin` between a dense tensor of shape `full` and a dense
// one of shape `box` (to_box: full -> box, else box -> full), row by innermost row.
void copy_box(const std::byte* src, std::byte* dst, const Shape& full, const Shape& box,
              const std::vector<int64_t>& begin, size_t item, bool to_box) {
  const size_t nd = full.size();
  if (numel(box) == 0) return;
  if (nd == 0) {
    std::memcpy(dst, src, item);
    return;
  }
  const std::vector<int64_t> fs = contiguous_strides(full);
  const int64_t rows = numel(box) / box[nd - 1];
  const size_t row_bytes = static_cast<size_t>(box[nd - 1]) * item;
  std::vector<int64_t> idx(nd, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = begin[nd - 1];
    for (size_t d = 0; d + 1 < nd; ++d) off += (idx[d] + begin[d]) * fs[d];
    const std::byte* s = to_box ? src + off * item : src + r * row_bytes;
    std::byte* t = to_box ? dst + r * row_bytes : dst + off * item;
    std::memcpy(t, s, row_bytes);
    for (size_t d = nd - 1; d-- > 0;) {  // the next row's index
      if (++idx[d] < box[d]) break;
      idx[d] = 0;
    }
  }
}

void dynamic_slice_kernel(const KernelContext& c) {
  const Tensor& x = c.in(0);
  const std::vector<int64_t> begin = values(c.in(1));
  const Shape s = slice_shape(x.shape(), begin, values(c.in(2)), "dynamic_slice");
  Tensor& y = c.out(0);
  if (!y.defined()) y = Tensor::empty(s, x.dtype());
  MYCEL_CHECK(y.shape() == s, RuntimeError, "[dynamic_slice] output has shape ",
              shape_str(y.shape()), ", the values need ", shape_str(s));
  copy_box(static_cast<const std::byte*>(x.data()), static_cast<std::byte*>(y.data()), x.shape(), s,
           begin, itemsize(x.dtype()), true);
}

std::vector<TensorMeta> dynamic_slice_grad_infer(const InferContext& c) {
  const size_t rank = c.in(1).shape.size();
  check_bounds_input(c, 2, rank);
  MYCEL_CHECK(c.in(0).shape.size() == rank, ValueError,
              "[dynamic_slice_grad] input 'dout' must have x's rank ", rank, ", got shape ",
              shape_str(c.in(0).shape));
  return {{c.in(1).shape, c.in(0).dtype}};
}

void dynamic_slice_grad_kernel(const KernelContext& c) {
  const Tensor& dout = c.in(0);
  Tensor& dx = c.out(0);
  const std::vector<int64_t> begin = values(c.in(2));
  slice_shape(dx.shape(), begin, dout.shape(), "dynamic_slice_grad");
  std::memset(dx.data(), 0, dx.numel() * itemsize(dx.dtype()));
  copy_box(static_cast<const std::byte*>(dout.data()), static_cast<std::byte*>(dx.data()),
           dx.shape(), dout.shape(), begin, itemsize(dx.dtype()), false);
}

}  // namespace

MYCEL_REGISTER_OPS(dynamic_slice) {
  r.add(make_op("dynamic_slice", "DynamicSlice",
                "x[begin : begin + size] per dimension (size -1: to the end), begin and size 1-d "
                "integer tensors read when the kernel runs.",
                {{"x"}, {"begin"}, {"size"}}, {}, dynamic_slice_infer, dynamic_slice_kernel,
                every_dtype(), "bprop"));
  r.add(make_op("dynamic_slice_grad", "DynamicSliceGrad",
                "Zeros shaped like x with dout written at begin (dynamic_slice's gradient).",
                {{"dout"}, {"x"}, {"begin"}}, {}, dynamic_slice_grad_infer,
                dynamic_slice_grad_kernel, every_dtype(), "none"));
}

MYCEL_REGISTER_BPROPS(dynamic_slice) {
  b.add("dynamic_slice", [](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar(), GradVar(), GradVar()};
    return {g.call("dynamic_slice_grad", {g.dout(), g.input(0), g.input(1)}), GradVar(), GradVar()};
  });
}

}  // namespace mycel

// CTC loss (MindSpore's ops.ctc_loss / CTCLossV2): log_probs (T, N, C), padded targets (N, S),
// input_lengths (N,), target_lengths (N,); returns (loss, log_alpha). Kernels in kernels/cpu/ctc.h.
#include <array>
#include <map>

#include "mycel/kernels/cpu/ctc.h"
#include "mycel/ops/bprop.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

void check_int_input(const InferContext& c, size_t i, int64_t rank) {
  check_rank(c, i, rank, rank);
  const DType t = c.in(i).dtype;
  if (t != DType::int32 && t != DType::int64)
    MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i),
                "' must be int32 or int64, got ", dtype_name(t));
}

// Checks ctc_loss's four inputs starting at input `first`; returns (T, N, C, S).
std::array<int64_t, 4> check_ctc_inputs(const InferContext& c, size_t first) {
  check_float(c, first);
  check_rank(c, first, 3, 3);
  check_int_input(c, first + 1, 2);
  check_int_input(c, first + 2, 1);
  check_int_input(c, first + 3, 1);
  const Shape &lp = c.in(first).shape, &tg = c.in(first + 1).shape;
  const int64_t n = lp[1];
  for (size_t i = first + 1; i <= first + 3; ++i)
    if (c.in(i).shape[0] != n)
      MYCEL_THROW(ShapeError, "[", c.op.name, "] input '", input_name(c, i), "' shape ",
                  shape_str(c.in(i).shape), " must start with the batch size N = ", n,
                  " of log_probs (T, N, C) ", shape_str(lp));
  const int64_t blank = c.attrs.get_int("blank");
  if (blank < 0 || blank >= lp[2])
    MYCEL_THROW(ValueError, "[", c.op.name, "] attribute 'blank' = ", blank,
                " must be a class in [0, C) with C = log_probs.shape[2] = ", lp[2]);
  const std::string& r = c.attrs.get_str("reduction");
  if (r != "none" && r != "mean" && r != "sum")
    MYCEL_THROW(ValueError, "[", c.op.name,
                "] attribute 'reduction' must be 'mean', 'sum' or 'none', got '", r, "'");
  return {lp[0], n, lp[2], tg[1]};
}

std::vector<TensorMeta> infer_ctc(const InferContext& c) {
  const auto [t, n, classes, s] = check_ctc_inputs(c, 0);
  (void)classes;
  const DType dt = c.in(0).dtype;
  Shape loss = c.attrs.get_str("reduction") == "none" ? Shape{n} : Shape{};
  return {{loss, dt}, {{n, t, 2 * s + 1}, dt}};
}

std::vector<TensorMeta> infer_ctc_grad(const InferContext& c) {
  const auto [t, n, classes, s] = check_ctc_inputs(c, 1);
  (void)t, (void)classes, (void)s;
  check_same_dtype(c, 1, 0);
  const Shape want = c.attrs.get_str("reduction") == "none" ? Shape{n} : Shape{};
  if (c.in(0).shape != want)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input 'dout' shape ", shape_str(c.in(0).shape),
                " must be the loss shape ", shape_str(want));
  return {c.in(1)};
}

std::vector<AttrDef> ctc_attrs() {
  return {{"blank", AttrKind::kInt, int64_t{0}, false, {}},
          {"reduction", AttrKind::kStr, std::string("mean"), false, {}},
          {"zero_infinity", AttrKind::kBool, false, false, {}}};
}

}  // namespace

MYCEL_REGISTER_OPS(ctc_loss) {
  const std::vector<DType> dtypes{DType::float32, DType::float64};
  {
    OpDef d = make_op(
        "ctc_loss", "CTCLossV2",
        "Connectionist temporal classification loss of log_probs (T, N, C) against padded "
        "targets (N, S); returns (loss, log_alpha (N, T, 2S+1)). 'mean' divides each item's "
        "loss by its target length, then averages.",
        {{"log_probs"}, {"targets"}, {"input_lengths"}, {"target_lengths"}}, ctc_attrs(), infer_ctc,
        cpu::ctc_loss_kernel, dtypes, "bprop");
    d.tuple_output = true;
    r.add(std::move(d));
  }
  r.add(make_op("ctc_loss_grad", "CTCLossV2Grad",
                "Gradient of ctc_loss's loss with respect to log_probs, for dout of the loss.",
                {{"dout"}, {"log_probs"}, {"targets"}, {"input_lengths"}, {"target_lengths"}},
                ctc_attrs(), infer_ctc_grad, cpu::ctc_loss_grad_kernel, dtypes, "unsupported"));
}

MYCEL_REGISTER_BPROPS(ctc_loss) {
  // Only the loss carries a gradient (log_alpha is an intermediate MindSpore also returns).
  b.add("ctc_loss", [](BpropBuilder& g) -> std::vector<GradVar> {
    std::map<std::string, AttrValue> m;
    const auto& defs = g.op().attrs;
    for (size_t i = 0; i < defs.size(); ++i) m[defs[i].name] = g.attrs().values()[i];
    GradVar d =
        g.call("ctc_loss_grad",
               {g.tuple_get(g.dout(), 0), g.input(0), g.input(1), g.input(2), g.input(3)}, m);
    return {d, {}, {}, {}};
  });
}

}  // namespace mycel

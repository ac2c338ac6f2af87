// Loss ops. Reductions are "mean", "sum" or "none"; 16-bit floats compute in float32; softmax
// losses use log-sum-exp, so logits of any finite magnitude give finite results.
#include "mycel/kernels/cpu/loss.h"

#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

// Output shape for a reduction: `full` for "none", a scalar otherwise.
Shape reduced_shape(const InferContext& c, const Shape& full) {
  const std::string& r = c.attrs.get_str("reduction");
  if (r == "none") return full;
  if (r == "mean" || r == "sum") return {};
  MYCEL_THROW(ValueError, "[", c.op.name,
              "] attribute 'reduction' must be 'mean', 'sum' or 'none', got '", r, "'");
}

void check_label_dtype(const InferContext& c, size_t i) {
  DType t = c.in(i).dtype;
  if (t != DType::int32 && t != DType::int64)
    MYCEL_THROW(TypeError, "[", c.op.name, "] input '", input_name(c, i),
                "' must be int32 or int64, got ", dtype_name(t));
}

void check_same_shape(const InferContext& c, size_t i, size_t j) {
  if (c.in(i).shape != c.in(j).shape)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input '", input_name(c, j), "' shape ",
                shape_str(c.in(j).shape), " must equal '", input_name(c, i), "' shape ",
                shape_str(c.in(i).shape));
}

// logits (N, C) and class indices (N,) of an int dtype.
void check_logits_and_indices(const InferContext& c) {
  check_float(c, 0);
  check_rank(c, 0, 2, 2);
  check_rank(c, 1, 1, 1);
  check_label_dtype(c, 1);
  const Shape &x = c.in(0).shape, &t = c.in(1).shape;
  if (t[0] != x[0])
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input '", input_name(c, 1), "' shape ", shape_str(t),
                " and 'logits' shape ", shape_str(x), ": ", input_name(c, 1), ".shape[0] (", t[0],
                ") must equal logits.shape[0] (", x[0], ")");
}

// Optional input i (a weight) of logits' dtype whose shape broadcasts to logits' shape.
void check_weight(const InferContext& c, size_t i) {
  if (!c.has_input(i)) return;
  check_same_dtype(c, 0, i);
  const Shape &x = c.in(0).shape, &w = c.in(i).shape;
  bool ok = w.size() <= x.size();
  for (size_t k = 0; ok && k < w.size(); ++k) {
    int64_t wd = w[w.size() - 1 - k], xd = x[x.size() - 1 - k];
    ok = wd == xd || wd == 1;
  }
  if (!ok)
    MYCEL_THROW(ShapeError, "[", c.op.name, "] input '", input_name(c, i), "' shape ", shape_str(w),
                " does not broadcast to 'logits' shape ", shape_str(x));
}

std::vector<TensorMeta> infer_softmax_ce(const InferContext& c) {
  check_float(c, 0);
  check_rank(c, 0, 2, 2);
  check_same_dtype(c, 0, 1);
  check_same_shape(c, 0, 1);
  const Shape& x = c.in(0).shape;
  return {{{x[0]}, c.in(0).dtype}, {x, c.in(0).dtype}};
}

std::vector<TensorMeta> infer_sparse_ce(const InferContext& c) {
  check_logits_and_indices(c);
  return {{reduced_shape(c, {c.in(0).shape[0]}), c.in(0).dtype}};
}

std::vector<TensorMeta> infer_nll(const InferContext& c) {
  check_logits_and_indices(c);
  if (c.has_input(2)) {
    check_same_dtype(c, 0, 2);
    const Shape& w = c.in(2).shape;
    if (w.size() != 1 || w[0] != c.in(0).shape[1])
      MYCEL_THROW(ShapeError, "[nll_loss] input 'weight' shape ", shape_str(w), " must be (C,) = (",
                  c.in(0).shape[1], ",) for 'logits' shape ", shape_str(c.in(0).shape));
  }
  DType t = c.in(0).dtype;
  return {{reduced_shape(c, {c.in(0).shape[0]}), t}, {{}, t}};
}

// logits and labels of one float dtype and shape, then optional weights from index 2.
std::vector<TensorMeta> infer_binary_ce(const InferContext& c) {
  check_float(c, 0);
  check_same_dtype(c, 0, 1);
  check_same_shape(c, 0, 1);
  for (size_t i = 2; i < c.num_inputs(); ++i) check_weight(c, i);
  return {{reduced_shape(c, c.in(0).shape), c.in(0).dtype}};
}

std::vector<TensorMeta> infer_mse(const InferContext& c) {
  check_float(c, 0);
  check_same_dtype(c, 0, 1);
  Shape s = broadcast_shapes(c.in(0).shape, c.in(1).shape, "mse_loss");
  return {{reduced_shape(c, s), c.in(0).dtype}};
}

const AttrDef kReduction{"reduction", AttrKind::kStr, std::string("mean"), false, {}};

OpDef loss(std::string name, std::string cls, std::string doc, std::vector<InputDef> inputs,
           std::vector<AttrDef> attrs, InferFn infer, KernelFn kernel) {
  return make_op(std::move(name), std::move(cls), std::move(doc), std::move(inputs),
                 std::move(attrs), std::move(infer), std::move(kernel), float_dtypes());
}

}  // namespace

MYCEL_REGISTER_OPS(loss) {
  using namespace cpu;
  r.add(loss("softmax_cross_entropy_with_logits", "SoftmaxCrossEntropyWithLogits",
             "Cross entropy of logits (N, C) and dense label probabilities; returns (loss (N,), "
             "softmax - labels).",
             {{"logits"}, {"labels"}}, {}, infer_softmax_ce, softmax_cross_entropy_kernel));
  r.add(loss("sparse_softmax_cross_entropy_with_logits", "SparseSoftmaxCrossEntropyWithLogits",
             "Cross entropy of logits (N, C) and class indices (N,), reduced.",
             {{"logits"}, {"labels"}}, {kReduction}, infer_sparse_ce,
             sparse_softmax_cross_entropy_kernel));
  r.add(loss("nll_loss", "NLLLoss",
             "Negative log likelihood of log-probabilities (N, C) at targets (N,), optionally "
             "weighted per class; returns (loss, total_weight).",
             {{"logits"}, {"target"}, {"weight", true}},
             {kReduction, {"ignore_index", AttrKind::kInt, int64_t(-100), false, {}}}, infer_nll,
             nll_loss_kernel));
  r.add(loss("binary_cross_entropy", "BinaryCrossEntropy",
             "Binary cross entropy of probabilities and labels, optionally weighted (logs clamped "
             "at -100).",
             {{"logits"}, {"labels"}, {"weight", true}}, {kReduction}, infer_binary_ce,
             binary_cross_entropy_kernel));
  r.add(loss("binary_cross_entropy_with_logits", "BCEWithLogitsLoss",
             "Binary cross entropy of logits (sigmoid folded in, numerically stable), optionally "
             "weighted and with pos_weight.",
             {{"logits"}, {"label"}, {"weight", true}, {"pos_weight", true}}, {kReduction},
             infer_binary_ce, bce_with_logits_kernel));
  r.add(loss("mse_loss", "MSELoss", "Mean squared error (x - y)**2 with broadcasting, reduced.",
             {{"logits"}, {"labels"}}, {kReduction}, infer_mse, mse_loss_kernel));
}

}  // namespace mycel

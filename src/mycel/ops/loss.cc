// Loss ops. Reductions are "mean", "sum" or "none"; 16-bit floats compute in float32; softmax
// losses use log-sum-exp, so logits of any finite magnitude give finite results.
#include "mycel/kernels/cpu/loss.h"

#include <algorithm>

#include "mycel/ops/bprop.h"
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
                 std::move(attrs), std::move(infer), std::move(kernel), float_dtypes(), "bprop");
}

// Sharding: the batch splits (a reduced loss then ends in an AllReduce: "mean" sums the slices'
// means and divides by their count); the class dim stays whole (softmax over it). A weighted
// mean (nll_loss) divides by a total weight, which partial results do not combine, so it keeps
// the batch whole.
shard::LabelSpec class_loss_spec(const shard::ShardContext& c) {
  shard::LabelSpec sp;
  const std::string red = c.op.attr_index("reduction") >= 0 ? c.attrs.get_str("reduction") : "none";
  const bool dense_labels = c.op.name == "softmax_cross_entropy_with_logits";
  sp.inputs = {"nc", dense_labels ? "nc" : "n"};
  if (c.op.inputs.size() > 2) sp.inputs.push_back(c.has_input(2) ? "c" : "");
  sp.outputs = {red == "none" ? "n" : ""};
  if (dense_labels)
    sp.outputs.push_back("nc");
  else if (c.outputs.size() > 1)
    sp.outputs.push_back("");  // nll_loss's total weight: a sum
  sp.fixed = "c";
  if (c.in(0).shape.size() != 2) sp.fixed = "nc";  // only (N, C) logits split
  sp.reduce_op = red == "mean" ? "mean" : "sum";
  sp.no_partial = c.op.name == "nll_loss" && red == "mean";
  if (c.in(0).shape.size() != 2) {  // labels by rank; nothing splits
    for (size_t i = 0; i < sp.inputs.size(); ++i)
      if (c.has_input(i)) sp.inputs[i] = std::string(c.in(i).shape.size(), 'c');
    for (size_t o = 0; o < sp.outputs.size(); ++o)
      sp.outputs[o] = std::string(c.outputs[o].shape.size(), '1');
  }
  return sp;
}

OpDef with_rule(OpDef d, shard::LabelSpec (*spec)(const shard::ShardContext&)) {
  shard::set_label_rule(d, spec);
  return d;
}

// Elementwise losses: inputs broadcast together; "none" keeps the full shape, else a reduction.
shard::LabelSpec elementwise_loss_spec(const shard::ShardContext& c) {
  std::vector<const Shape*> shapes;
  for (size_t i = 0; i < c.inputs.size(); ++i)
    if (c.has_input(i)) shapes.push_back(&c.in(i).shape);
  Shape full;
  for (const Shape* s : shapes) {
    if (s->size() > full.size()) full.insert(full.begin(), s->size() - full.size(), 1);
    for (size_t d = 0; d < s->size(); ++d) {
      int64_t& f = full[full.size() - s->size() + d];
      if (f == 1) f = (*s)[d];
    }
  }
  shard::LabelSpec sp = shard::broadcast_spec(c, full);
  const std::string& red = c.attrs.get_str("reduction");
  if (red != "none") sp.outputs = {""};
  sp.reduce_op = red == "mean" ? "mean" : "sum";
  return sp;
}

}  // namespace

MYCEL_REGISTER_OPS(loss) {
  using namespace cpu;
  r.add(with_rule(
      loss("softmax_cross_entropy_with_logits", "SoftmaxCrossEntropyWithLogits",
           "Cross entropy of logits (N, C) and dense label probabilities; returns (loss (N,), "
           "softmax - labels).",
           {{"logits"}, {"labels"}}, {}, infer_softmax_ce, softmax_cross_entropy_kernel),
      class_loss_spec));
  r.add(with_rule(
      loss("sparse_softmax_cross_entropy_with_logits", "SparseSoftmaxCrossEntropyWithLogits",
           "Cross entropy of logits (N, C) and class indices (N,), reduced.",
           {{"logits"}, {"labels"}}, {kReduction}, infer_sparse_ce,
           sparse_softmax_cross_entropy_kernel),
      class_loss_spec));
  r.add(with_rule(
      loss("nll_loss", "NLLLoss",
           "Negative log likelihood of log-probabilities (N, C) at targets (N,), optionally "
           "weighted per class; returns (loss, total_weight).",
           {{"logits"}, {"target"}, {"weight", true}},
           {kReduction, {"ignore_index", AttrKind::kInt, int64_t(-100), false, {}}}, infer_nll,
           nll_loss_kernel),
      class_loss_spec));
  r.add(with_rule(
      loss("binary_cross_entropy", "BinaryCrossEntropy",
           "Binary cross entropy of probabilities and labels, optionally weighted (logs clamped "
           "at -100).",
           {{"logits"}, {"labels"}, {"weight", true}}, {kReduction}, infer_binary_ce,
           binary_cross_entropy_kernel),
      elementwise_loss_spec));
  r.add(with_rule(
      loss("binary_cross_entropy_with_logits", "BCEWithLogitsLoss",
           "Binary cross entropy of logits (sigmoid folded in, numerically stable), optionally "
           "weighted and with pos_weight.",
           {{"logits"}, {"label"}, {"weight", true}, {"pos_weight", true}}, {kReduction},
           infer_binary_ce, bce_with_logits_kernel),
      elementwise_loss_spec));
  r.add(with_rule(
      loss("mse_loss", "MSELoss", "Mean squared error (x - y)**2 with broadcasting, reduced.",
           {{"logits"}, {"labels"}}, {kReduction}, infer_mse, mse_loss_kernel),
      elementwise_loss_spec));
}

namespace {

// Loss rules differentiate the predictions only: labels, targets and class weights get no
// gradient (mse_loss, symmetric in its inputs, differentiates both).

bool is_static(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return d >= 0; });
}

// Broadcast of two shapes whose dims may be -1 (unknown until run time).
Shape broadcast_dims(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = da == 1 ? db : (db == 1 || da != -1) ? da : db;
  }
  return out;
}

// The loss sensitivity per unreduced element: dout for "none" and "sum" (a 0-d value broadcasts),
// dout / count for "mean", count being the elements of `full` (shape `full_shape`).
GradVar per_element_dout(BpropBuilder& g, const GradVar& full, const Shape& full_shape) {
  GradVar dout = g.dout();
  if (g.attrs().get_str("reduction") != "mean") return dout;
  const DType t = g.meta(g.input(0)).dtype;
  if (is_static(full_shape)) return g.mul(dout, g.scalar(1.0 / double(numel(full_shape)), t));
  return g.div(dout, g.sum(g.call("ones_like", {full}, {{"dtype", t}}), {}));
}

GradVar expand_last(BpropBuilder& g, GradVar v) {
  return g.call("expand_dims", {v}, {{"axis", int64_t{-1}}});
}

GradVar one_hot_like(BpropBuilder& g, GradVar labels, const TensorMeta& logits) {
  return g.call("one_hot", {labels}, {{"depth", logits.shape[1]}, {"dtype", logits.dtype}});
}

// d loss / d logits: dloss * (softmax - labels), plus softmax's vjp of the second output's dout.
std::vector<GradVar> softmax_ce_bprop(BpropBuilder& g) {
  GradVar dl = g.tuple_get(g.dout(), 0), dgrad = g.tuple_get(g.dout(), 1);
  GradVar p = g.call("softmax", {g.input(0)});
  GradVar through_grad = g.mul(p, g.sub(dgrad, g.sum(g.mul(dgrad, p), {-1}, true)));
  return {g.add(g.mul(expand_last(g, dl), g.tuple_get(g.out(), 1)), through_grad), {}};
}

// loss_i = logsumexp(x_i) - x_i[label_i]: dx = (softmax(x) - one_hot(label)) * dloss_i.
std::vector<GradVar> sparse_ce_bprop(BpropBuilder& g) {
  GradVar x = g.input(0), labels = g.input(1);
  const TensorMeta xm = g.meta(x);
  GradVar d = per_element_dout(g, labels, {xm.shape[0]});
  if (g.attrs().get_str("reduction") == "none") d = expand_last(g, d);
  GradVar diff = g.sub(g.call("softmax", {x}), one_hot_like(g, labels, xm));
  return {g.mul(diff, d), {}};
}

// loss_i = -w[t_i] x[i, t_i] (0 where t_i is ignore_index); "mean" divides by the total weight.
std::vector<GradVar> nll_bprop(BpropBuilder& g) {
  GradVar x = g.input(0), target = g.input(1), weight = g.input(2);
  const TensorMeta xm = g.meta(x);
  GradVar sel = one_hot_like(g, target, xm);  // an ignore_index outside [0, C) selects nothing
  const int64_t ignore = g.attrs().get_int("ignore_index");
  if (ignore >= 0 && ignore < xm.shape[1]) {
    GradVar keep = g.call("not_equal", {target, g.scalar(double(ignore), g.meta(target).dtype)});
    sel = g.mul(sel, expand_last(g, g.cast(keep, xm.dtype)));
  }
  if (weight) sel = g.mul(sel, weight);
  const std::string& r = g.attrs().get_str("reduction");
  GradVar d = g.tuple_get(g.dout(), 0);
  if (r == "none") d = expand_last(g, d);
  if (r == "mean") d = g.div(d, g.tuple_get(g.out(), 1));
  return {g.neg(g.mul(sel, d)), {}, {}};
}

// l = -w (y log p + (1 - y) log(1 - p)): dl/dp = w (p - y) / (p (1 - p)), the denominator held
// above 1e-12 as the forward's log clamp keeps the loss finite.
std::vector<GradVar> bce_bprop(BpropBuilder& g) {
  GradVar p = g.input(0), y = g.input(1), w = g.input(2);
  const TensorMeta pm = g.meta(p);
  GradVar one = g.scalar(1.0, pm.dtype);
  GradVar den = g.call("maximum", {g.mul(p, g.sub(one, p)), g.scalar(1e-12, pm.dtype)});
  GradVar dp = g.div(g.sub(p, y), den);
  if (w) dp = g.mul(dp, w);
  return {g.mul(dp, per_element_dout(g, p, pm.shape)), {}, {}};
}

// l = w ((1 - y) x + (1 + (pw - 1) y) softplus(-x)): dl/dx = w ((1 - y) - lw sigmoid(-x)) with
// lw = 1 + (pw - 1) y; without pos_weight that is w (sigmoid(x) - y).
std::vector<GradVar> bce_logits_bprop(BpropBuilder& g) {
  GradVar x = g.input(0), y = g.input(1), w = g.input(2), pw = g.input(3);
  const TensorMeta xm = g.meta(x);
  GradVar one = g.scalar(1.0, xm.dtype);
  GradVar s = g.call("sigmoid", {x});
  GradVar dx;
  if (pw) {
    GradVar lw = g.add(one, g.mul(g.sub(pw, one), y));
    dx = g.add(g.sub(one, y), g.mul(lw, g.sub(s, one)));
  } else {
    dx = g.sub(s, y);
  }
  if (w) dx = g.mul(dx, w);
  return {g.mul(dx, per_element_dout(g, x, xm.shape)), {}, {}, {}};
}

// l = (x - y)**2 broadcast: dx = 2 (x - y) dl summed back to x's shape, dy its negation.
std::vector<GradVar> mse_bprop(BpropBuilder& g) {
  GradVar x = g.input(0), y = g.input(1);
  const TensorMeta xm = g.meta(x);
  const Shape full = broadcast_dims(xm.shape, g.meta(y).shape);
  GradVar diff = g.sub(x, y);
  GradVar d = g.mul(g.mul(diff, g.scalar(2.0, xm.dtype)), per_element_dout(g, diff, full));
  return {g.reduce_to(d, x, full), g.reduce_to(g.neg(d), y, full)};
}

}  // namespace

MYCEL_REGISTER_BPROPS(loss) {
  b.add("softmax_cross_entropy_with_logits", softmax_ce_bprop);
  b.add("sparse_softmax_cross_entropy_with_logits", sparse_ce_bprop);
  b.add("nll_loss", nll_bprop);
  b.add("binary_cross_entropy", bce_bprop);
  b.add("binary_cross_entropy_with_logits", bce_logits_bprop);
  b.add("mse_loss", mse_bprop);
}

}  // namespace mycel

// Batching rules of the network ops: matmul and dense (batch dims of matmul), convolutions and
// pooling (the batch folded into N, or into the channel groups when the weights are batched too),
// norms and losses (the batch folded into N, each item reduced on its own).
#include <cmath>
#include <numeric>

#include "mycel/core/error.h"
#include "mycel/ops/batch.h"
#include "mycel/ops/nn_window.h"

namespace mycel {

namespace {

using namespace batch;

int64_t logical_rank(BatchBuilder& g, size_t i) {
  return static_cast<int64_t>(g.meta(g.input(i)).shape.size()) - (g.bdim(i) != kNotBatched);
}
Batched at_front(BatchBuilder& g, GradVar v) { return {v, std::vector<int>(g.tuple_size(v), 0)}; }
bool batched(BatchBuilder& g, size_t i) { return g.input(i).defined() && g.bdim(i) != kNotBatched; }

/// Inputs `folded` batched or broadcast to (B, N, ...) and merged to (B*N, ...); the op called on
/// them (others as they are, which must be unbatched); each output split back to (B, N, ...).
Batched fold_into_n(BatchBuilder& g, const std::vector<size_t>& folded,
                    const std::map<std::string, AttrValue>& attrs = {}) {
  for (size_t i = 0; i < g.num_inputs(); ++i)
    if (batched(g, i) && std::find(folded.begin(), folded.end(), i) == folded.end()) return {};
  std::vector<GradVar> in;
  for (size_t i = 0; i < g.num_inputs(); ++i) {
    bool fold = std::find(folded.begin(), folded.end(), i) != folded.end() && g.input(i).defined();
    in.push_back(fold ? merge_front(g, front(g, i)) : g.input(i));
  }
  GradVar out = g.call_self(in, attrs);
  size_t n = g.tuple_size(out);
  if (n == 1 && g.meta(out).shape.size() > 0)
    return at_front(g, split_front(g, out, g.batch_size()));
  // Outputs reduced over everything (nll_loss's total weight) are not per item: kNotBatched, for
  // the rule that called this to replace.
  std::vector<GradVar> items;
  std::vector<int> dims;
  for (size_t k = 0; k < n; ++k) {
    GradVar item = g.tuple_get(out, k);
    bool whole = g.meta(item).shape.empty();
    items.push_back(whole ? item : split_front(g, item, g.batch_size()));
    dims.push_back(whole ? kNotBatched : 0);
  }
  return {g.make_tuple(items), dims};
}

/// matmul: numpy batching, so the batch at the front of both operands broadcasts; a batched
/// vector operand (logical rank 1) has no batch axes to use: no rule.
Batched matmul_rule(BatchBuilder& g) {
  int64_t rx = logical_rank(g, 0), ry = logical_rank(g, 1);
  if (rx < 2 || ry < 2) return {};
  int64_t r = std::max(rx, ry);
  std::vector<GradVar> in;
  for (size_t i = 0; i < 2; ++i) {
    GradVar x = g.input(i);
    if (batched(g, i)) {
      x = front(g, i);
      for (int64_t k = logical_rank(g, i); k < r; ++k)
        x = g.call("expand_dims", {x}, {{"axis", int64_t{1}}});
    }
    in.push_back(x);
  }
  return at_front(g, g.call_self(in));
}

/// dense: a batched x folds into its leading axes; batched weights make it a batched matmul.
Batched dense_rule(BatchBuilder& g) {
  if (!batched(g, 1) && !batched(g, 2))
    return at_front(g, g.call_self({front(g, 0), g.input(1), g.input(2)}));
  if (logical_rank(g, 0) < 1) return {};
  GradVar x = front(g, 0);  // (B, ..., in)
  Shape xs = g.meta(x).shape;
  int64_t in = xs.back();
  int64_t m = std::accumulate(xs.begin() + 1, xs.end() - 1, int64_t{1}, std::multiplies<>());
  GradVar x3 = g.reshape_to(x, {g.batch_size(), m, in});
  GradVar y = g.call("matmul", {x3, front(g, 1)}, {{"transpose_b", true}});  // (B, m, out)
  if (g.input(2).defined())
    y = g.call("add",
               {y, batched(g, 2) ? g.call("expand_dims", {front(g, 2)}, {{"axis", int64_t{1}}})
                                 : g.input(2)});
  Shape ys(xs.begin(), xs.end() - 1);
  ys.push_back(g.meta(y).shape.back());
  return at_front(g, g.reshape_to(y, ys));
}

/// (B, N, C, H, W) -> (N, B*C, H, W): the batch as channel groups.
GradVar to_groups(BatchBuilder& g, GradVar v) {
  Shape s = g.meta(v).shape;
  v = g.call("transpose", {v}, {{"perm", std::vector<int64_t>{1, 0, 2, 3, 4}}});
  return g.reshape_to(v, {s[1], s[0] * s[2], s[3], s[4]});
}
/// (N, B*C, H, W) -> (B, N, C, H, W).
GradVar from_groups(BatchBuilder& g, GradVar v, int64_t b) {
  Shape s = g.meta(v).shape;
  v = g.reshape_to(v, {s[0], b, s[1] / b, s[2], s[3]});
  return g.call("transpose", {v}, {{"perm", std::vector<int64_t>{1, 0, 2, 3, 4}}});
}

/// conv2d(x, w, b): batched x alone folds into N; batched weights use B*groups groups.
Batched conv2d_rule(BatchBuilder& g) {
  if (!batched(g, 1) && !batched(g, 2)) return fold_into_n(g, {0});
  const int64_t B = g.batch_size();
  GradVar x = to_groups(g, front(g, 0));
  GradVar w = merge_front(g, front(g, 1));  // (B*O, C/groups, kh, kw)
  GradVar bias = g.input(2);
  if (bias.defined()) bias = merge_front(g, front(g, 2));
  GradVar y = g.call_self({x, w, bias}, {{"groups", g.attrs().get_int("groups") * B}});
  return at_front(g, from_groups(g, y, B));
}

/// conv2d_backprop_input(dout, w): as conv2d, input_size given per item.
Batched conv2d_backprop_input_rule(BatchBuilder& g) {
  std::vector<int64_t> size = g.attrs().get_ints("input_size");
  const int64_t B = g.batch_size();
  if (!batched(g, 1)) {
    size[0] *= B;
    return fold_into_n(g, {0}, {{"input_size", size}});
  }
  GradVar dy = to_groups(g, front(g, 0));
  GradVar w = merge_front(g, front(g, 1));
  std::vector<int64_t> grouped{size[0], size[1] * B, size[2], size[3]};
  GradVar dx =
      g.call_self({dy, w}, {{"input_size", grouped}, {"groups", g.attrs().get_int("groups") * B}});
  return at_front(g, from_groups(g, dx, B));
}

/// conv2d_backprop_filter(dout, x): one filter gradient per item. Without groups it is a forward
/// convolution over the batch (Opacus' trick in one op): x's channels become the batch N', each
/// item's dout its own filter group, stride and dilation trade places, so
/// out[c, (b, o), kh, kw] = sum over n, i, j of x_b[n, c, i*stride + kh*dil] * dout_b[n, o, i, j].
/// (oneDNN's grouped backward-weights with one channel per group is ~100x slower.) With groups,
/// the backward op itself with B*groups channel groups.
Batched conv2d_backprop_filter_rule(BatchBuilder& g) {
  const int64_t B = g.batch_size();
  std::vector<int64_t> fs = g.attrs().get_ints("filter_size");
  GradVar dy = front(g, 0), x = front(g, 1);
  if (g.attrs().get_int("groups") == 1) {
    Shape xs = g.meta(x).shape, ds = g.meta(dy).shape;  // (B, N, C, H, W), (B, N, O, h, w)
    Shape item(xs.begin() + 1, xs.end());
    cpu::WindowGeom w = conv2d_window(g.op(), g.attrs(), item, Shape(fs.begin(), fs.end()));
    GradVar xi = g.call("transpose", {x}, {{"perm", std::vector<int64_t>{2, 0, 1, 3, 4}}});
    xi = g.reshape_to(xi, {xs[2], B * xs[1], xs[3], xs[4]});
    GradVar f = g.call("transpose", {dy}, {{"perm", std::vector<int64_t>{0, 2, 1, 3, 4}}});
    f = g.reshape_to(f, {B * ds[2], ds[1], ds[3], ds[4]});
    GradVar out = g.call("conv2d", {xi, f},
                         {{"pad_mode", std::string("pad")},
                          {"pad", std::vector<int64_t>{w.pt, w.pb, w.pl, w.pr}},
                          {"stride", std::vector<int64_t>{w.dh, w.dw}},
                          {"dilation", std::vector<int64_t>{w.sh, w.sw}},
                          {"groups", B}});
    Shape os = g.meta(out).shape;  // (C, B*O, >= kh, >= kw): rows past the kernel are unused input
    if (os[2] != fs[2] || os[3] != fs[3])
      out = g.call("slice", {out},
                   {{"begin", std::vector<int64_t>{0, 0, 0, 0}},
                    {"size", std::vector<int64_t>{os[0], os[1], fs[2], fs[3]}}});
    out = g.reshape_to(out, {os[0], B, fs[0], fs[2], fs[3]});
    return at_front(g, g.call("transpose", {out}, {{"perm", std::vector<int64_t>{1, 2, 0, 3, 4}}}));
  }
  std::vector<int64_t> grouped{fs[0] * B, fs[1], fs[2], fs[3]};
  GradVar dw = g.call_self({to_groups(g, dy), to_groups(g, x)},
                           {{"filter_size", grouped}, {"groups", g.attrs().get_int("groups") * B}});
  return at_front(g, split_front(g, dw, B));
}

/// Elementwise losses (mse, binary cross entropies): the inputs lined up as elementwise ops line
/// them up (batch at 0, ranks matched, so broadcasting and per-element weights still apply), the op
/// with reduction "none", then each item reduced on its own over all its elements.
Batched elementwise_loss_rule(BatchBuilder& g) {
  int64_t r = 0;
  for (size_t i = 0; i < g.num_inputs(); ++i)
    if (g.input(i).defined()) r = std::max(r, logical_rank(g, i));
  std::vector<GradVar> in;
  for (size_t i = 0; i < g.num_inputs(); ++i) {
    GradVar x = g.input(i);
    // logits and labels always carry the batch (the cross entropies want equal shapes); weights
    // only when mapped (a shared one broadcasts as it is)
    if (x.defined() && (batched(g, i) || i < 2)) {
      x = front(g, i);
      for (int64_t k = logical_rank(g, i); k < r; ++k)
        x = g.call("expand_dims", {x}, {{"axis", int64_t{1}}});
    }
    in.push_back(x);
  }
  GradVar per = g.call_self(in, {{"reduction", std::string("none")}});
  Shape s = g.meta(per).shape;
  if (s.empty() ||
      s[0] != g.batch_size()) {  // every batched input was broadcast away: not per item
    return {};
  }
  const std::string red = g.attrs().get_str("reduction");
  if (red == "none" || s.size() == 1) return at_front(g, per);
  std::vector<int64_t> axes(s.size() - 1);
  std::iota(axes.begin(), axes.end(), 1);
  return at_front(g, g.call(red == "mean" ? "mean" : "sum", {per}, {{"axis", axes}}));
}

/// Losses over rows (N, C) -> (N,): the batch folds into N with reduction "none", then each item
/// is reduced on its own.
Batched row_loss_rule(BatchBuilder& g) {
  std::vector<size_t> all(g.num_inputs());
  std::iota(all.begin(), all.end(), 0);
  const std::string red = g.attrs().get_str("reduction");
  Batched per = fold_into_n(g, all, {{"reduction", std::string("none")}});
  if (!per.value.defined() || red == "none") return per;
  return at_front(
      g, g.call(red == "mean" ? "mean" : "sum", {per.value}, {{"axis", std::vector<int64_t>{1}}}));
}

/// nll_loss(logits, target, weight): (loss, total_weight) per item. The per-row losses come from
/// the op with reduction "none" over the folded batch; each item's total weight (weight[target], 0
/// at ignore_index) is summed here, and "mean" divides by it, as the op does for one item.
Batched nll_loss_rule(BatchBuilder& g) {
  if (batched(g, 2)) return {};
  Batched per = fold_into_n(g, {0, 1}, {{"reduction", std::string("none")}});
  if (!per.value.defined()) return {};
  GradVar rows = g.tuple_get(per.value, 0);  // (B, N)
  GradVar t = front(g, 1);                   // (B, N) targets
  const DType ft = g.meta(rows).dtype;
  GradVar keep =
      g.call("not_equal", {t, g.call("fill", {},
                                     {{"type", g.meta(t).dtype},
                                      {"shape", Shape{}},
                                      {"value", double(g.attrs().get_int("ignore_index"))}})});
  GradVar w = g.call("cast", {keep}, {{"dtype", ft}});
  if (g.input(2).defined()) {
    GradVar safe = g.call("select", {keep, t, g.call("zeros_like", {t})});
    w = g.call("mul", {w, g.call("gather", {g.input(2), safe}, {{"axis", int64_t{0}}})});
  }
  const std::vector<int64_t> axis1{1};
  GradVar total = g.call("sum", {w}, {{"axis", axis1}});
  const std::string red = g.attrs().get_str("reduction");
  GradVar loss = rows;
  if (red != "none") {
    loss = g.call("sum", {rows}, {{"axis", axis1}});
    if (red == "mean") loss = g.call("div", {loss, total});
  }
  return at_front(g, g.make_tuple({loss, total}));
}

/// x (N, C, ...) of every item as one (N, B*C, ...) input: the batch folded into the channels,
/// item b's channels at b*C .. b*C+C-1, so per-channel statistics stay per item.
GradVar fold_into_channels(BatchBuilder& g, size_t i) {
  GradVar v =
      batched(g, i) ? move_axis(g, g.input(i), g.bdim(i), 1) : move_axis(g, front(g, i), 0, 1);
  Shape s = g.meta(v).shape;  // (N, B, C, ...)
  Shape folded{s[0], s[1] * s[2]};
  folded.insert(folded.end(), s.begin() + 3, s.end());
  return g.reshape_to(v, folded);
}
/// A per-channel vector (C,) as the (B*C,) vector matching fold_into_channels.
GradVar channels_of_items(BatchBuilder& g, size_t i) {
  if (!g.input(i).defined()) return g.input(i);
  GradVar v = front(g, i);  // (B, C): an unbatched vector is repeated (a copy, never a view)
  Shape s = g.meta(v).shape;
  return g.reshape_to(v, {s[0] * s[1]});
}
/// The inverse of fold_into_channels for an output: (N, B*C, ...) -> (N, B, C, ...), batch at 1.
GradVar unfold_channels(BatchBuilder& g, GradVar v, int64_t b) {
  Shape s = g.meta(v).shape;
  Shape out{s[0], b, s[1] / b};
  out.insert(out.end(), s.begin() + 2, s.end());
  return g.reshape_to(v, out);
}
GradVar items_of_channels(BatchBuilder& g, GradVar v, int64_t b) {
  return g.reshape_to(v, {b, g.meta(v).shape[0] / b});
}

/// The running statistics after B items each updated them in turn, as the per-item loop did:
/// r_B = (1-m)^B r_0 + sum_b m (1-m)^(B-1-b) s_b. That is one update of momentum M = 1-(1-m)^B
/// towards the weighted means of the items' statistics (weights m (1-m)^(B-1-b) / M), which one
/// call of the op itself applies to the running statistics in place: its input is two rows per
/// channel, mean -+ sqrt(V/2), whose mean is the weighted mean and whose unbiased variance is the
/// weighted unbiased variance V. Built in float64 so the two rows carry the statistics exactly.
GradVar update_running_stats(BatchBuilder& g, GradVar xf) {
  const double m = g.attrs().get_float("momentum");
  const int64_t B = g.batch_size();
  const double M = 1 - std::pow(1 - m, static_cast<double>(B));
  if (!(M > 0)) return {};      // momentum 0 (as in a gradient's recomputed forward): no update
  Shape xs = g.meta(xf).shape;  // (N, B*C, ...)
  const int64_t C = xs[1] / B;
  std::vector<int64_t> axes{0};
  for (int64_t a = 2; a < static_cast<int64_t>(xs.size()); ++a) axes.push_back(a);
  GradVar x64 = g.call("stop_gradient", {g.call("cast", {xf}, {{"dtype", DType::float64}})});
  GradVar mean = items_of_channels(g, g.call("mean", {x64}, {{"axis", axes}}), B);  // (B, C)
  GradVar var =
      items_of_channels(g, g.call("var", {x64}, {{"axis", axes}, {"ddof", int64_t{1}}}), B);
  auto scalar = [&](double v) {
    return g.call("fill", {}, {{"type", DType::float64}, {"shape", Shape{}}, {"value", v}});
  };
  // weights (B, 1): m / M * (1-m)^(B-1-b)
  GradVar expo = g.call(
      "arange", {},
      {{"start", double(B - 1)}, {"limit", -1.0}, {"delta", -1.0}, {"dtype", DType::float64}});
  GradVar w = g.call("mul", {g.call("pow", {scalar(1 - m), expo}), scalar(m / M)});
  w = g.reshape_to(w, {B, 1});
  const std::vector<int64_t> axis0{0};
  GradVar mu = g.call("sum", {g.call("mul", {w, mean})}, {{"axis", axis0}});  // (C,)
  GradVar v = g.call("sum", {g.call("mul", {w, var})}, {{"axis", axis0}});
  GradVar d = g.call("sqrt", {g.call("mul", {v, scalar(0.5)})});
  GradVar rows = g.call("stack", {g.make_tuple({g.call("sub", {mu, d}), g.call("add", {mu, d})})},
                        {{"axis", int64_t{0}}});  // (2, C)
  const DType st = g.meta(g.input(3)).dtype;
  GradVar ones = g.call("fill", {}, {{"type", st}, {"shape", Shape{C}}, {"value", 1.0}});
  GradVar zeros = g.call("fill", {}, {{"type", st}, {"shape", Shape{C}}, {"value", 0.0}});
  return g.call_self({rows, ones, zeros, g.input(3), g.input(4)}, {{"momentum", M}});
}

/// batch_norm: the batch folded into the channels (each item normalized by its own statistics in
/// training, by the shared running ones in inference); the statistics outputs are per item. In
/// training the shared running statistics are updated as B updates in turn would (above); batched
/// running statistics run per item.
Batched batch_norm_rule(BatchBuilder& g) {
  if (batched(g, 3) || batched(g, 4) || logical_rank(g, 0) < 2) return {};
  const int64_t B = g.batch_size();
  if (!g.attrs().get_bool("is_training") && !batched(g, 1) && !batched(g, 2)) {
    // Inference with shared parameters: items are independent, so the batch joins N (no copies);
    // the statistics outputs do not depend on x then.
    GradVar out =
        g.call_self({merge_front(g, front(g, 0)), g.input(1), g.input(2), g.input(3), g.input(4)});
    GradVar y = split_front(g, g.tuple_get(out, 0), B);
    return {g.make_tuple({y, g.tuple_get(out, 1), g.tuple_get(out, 2)}),
            {0, kNotBatched, kNotBatched}};
  }
  GradVar xf = fold_into_channels(g, 0);
  GradVar out = g.call_self({xf, channels_of_items(g, 1), channels_of_items(g, 2),
                             channels_of_items(g, 3), channels_of_items(g, 4)});
  GradVar y = unfold_channels(g, g.tuple_get(out, 0), B);
  if (g.attrs().get_bool("is_training"))
    if (GradVar update = update_running_stats(g, xf); update.defined()) y = g.after(y, update);
  return {g.make_tuple({y, items_of_channels(g, g.tuple_get(out, 1), B),
                        items_of_channels(g, g.tuple_get(out, 2), B)}),
          {1, 0, 0}};
}

/// batch_norm_grad(dout, x, scale, saved_mean, saved_invstd, dmean, dinvstd): per channel in both
/// modes, so the batch folds into the channels as in batch_norm.
Batched batch_norm_grad_rule(BatchBuilder& g) {
  if (logical_rank(g, 1) < 2) return {};
  const int64_t B = g.batch_size();
  std::vector<GradVar> in{fold_into_channels(g, 0), fold_into_channels(g, 1)};
  for (size_t i = 2; i < g.num_inputs(); ++i) in.push_back(channels_of_items(g, i));
  GradVar out = g.call_self(in);
  return {g.make_tuple({unfold_channels(g, g.tuple_get(out, 0), B),
                        items_of_channels(g, g.tuple_get(out, 1), B),
                        items_of_channels(g, g.tuple_get(out, 2), B)}),
          {1, 0, 0}};
}

/// layer_norm normalizes trailing axes: the batch in front only shifts non-negative axes.
Batched layer_norm_rule(BatchBuilder& g) {
  if (batched(g, 1) || batched(g, 2)) return {};
  std::map<std::string, AttrValue> a;
  for (const char* n : {"begin_norm_axis", "begin_params_axis"}) {
    int64_t v = g.attrs().get_int(n);
    a[n] = v >= 0 ? v + 1 : v;
  }
  return at_front(g, g.call_self({front(g, 0), g.input(1), g.input(2)}, a));
}

/// layer_norm_grad(dout, x, gamma, mean, rstd, dmean, drstd) -> (dx, dgamma, dbeta): dx is per
/// row, so the batch in front only shifts the axes; the op's dgamma / dbeta sum over the whole
/// batch, so each item's are summed here from dout and x's normalized value (x - mean) * rstd.
Batched layer_norm_grad_rule(BatchBuilder& g) {
  if (batched(g, 2)) return {};
  const int64_t r = logical_rank(g, 1);
  int64_t bn = norm_axis(g, g.attrs().get_int("begin_norm_axis"), r);
  int64_t bp = norm_axis(g, g.attrs().get_int("begin_params_axis"), r);
  std::vector<GradVar> in;
  for (size_t i = 0; i < g.num_inputs(); ++i) in.push_back(i == 2 ? g.input(2) : front(g, i));
  GradVar out = g.call_self(in, {{"begin_norm_axis", bn + 1}, {"begin_params_axis", bp + 1}});
  GradVar dout = in[0];
  GradVar xhat = g.call("mul", {g.call("sub", {in[1], in[3]}), in[4]});
  std::vector<int64_t> lead;
  for (int64_t a = 1; a <= bp; ++a) lead.push_back(a);
  GradVar dgamma = g.call("mul", {dout, xhat}), dbeta = dout;
  if (!lead.empty()) {
    dgamma = g.call("sum", {dgamma}, {{"axis", lead}});
    dbeta = g.call("sum", {dbeta}, {{"axis", lead}});
  }
  return at_front(g, g.make_tuple({g.tuple_get(out, 0), dgamma, dbeta}));
}

}  // namespace

MYCEL_REGISTER_BATCH_RULES(nn) {
  b.add("matmul", matmul_rule);
  b.add("dense", dense_rule);
  b.add("conv2d", conv2d_rule);
  b.add("conv2d_backprop_input", conv2d_backprop_input_rule);
  b.add("conv2d_backprop_filter", conv2d_backprop_filter_rule);
  // NCHW ops that see each image on its own: the batch joins N.
  for (const char* n : {"max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "resize_bilinear",
                        "resize_nearest_neighbor"})
    b.add(n, [](BatchBuilder& g) { return fold_into_n(g, {0}); });
  for (const char* n : {"max_pool2d_grad", "avg_pool2d_grad", "resize_bilinear_grad",
                        "resize_nearest_neighbor_grad"})
    b.add(n, [](BatchBuilder& g) { return fold_into_n(g, {0, 1}); });
  b.add("softmax_cross_entropy_with_logits", [](BatchBuilder& g) {
    return fold_into_n(g, {0, 1});
  });
  b.add("sparse_softmax_cross_entropy_with_logits", row_loss_rule);
  for (const char* n : {"mse_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits"})
    b.add(n, elementwise_loss_rule);
  b.add("nll_loss", nll_loss_rule);
  b.add("layer_norm", layer_norm_rule);
  b.add("batch_norm", batch_norm_rule);
  b.add("batch_norm_grad", batch_norm_grad_rule);
  b.add("layer_norm_grad", layer_norm_grad_rule);
}

}  // namespace mycel

// Collective communication (MindSpore's AllReduce, AllGather, ReduceScatter, Broadcast, AlltoAll,
// Send, Receive, Barrier, Reduce): kernels call the Communicator (src/mycel/parallel). Every op is
// an `effect`, so graph mode never folds, merges, drops or reorders one: all ranks run the same
// sequence of collectives. Bprops are collectives too (AllGather <-> ReduceScatter, AllReduce(sum)
// -> AllReduce(sum), AlltoAll -> the inverse AlltoAll, Broadcast <-> Reduce to the root); they
// differentiate the sum of every rank's loss, as MindSpore's do.
#include <cstring>

#include "mycel/ops/bprop_util.h"
#include "mycel/ops/infer_util.h"
#include "mycel/parallel/communicator.h"

namespace mycel {
namespace {

using parallel::ReduceOp;

AttrDef group_attr() { return attr("group", AttrKind::kStr, std::string(parallel::kWorldGroup)); }
// MindSpore spells it `op`; the schema name differs so that it never collides with an `op`
// parameter of a generic entry point (ad.vjp(op, inputs, dout, **attrs)).
AttrDef reduce_attr() { return attr("reduce_op", AttrKind::kStr, std::string("sum"), {"op"}); }

const std::string& group_of(const Attrs& a) { return a.get_str("group"); }
int group_size(const InferContext& c) { return parallel::group_size(group_of(c.attrs), c.op.name); }
ReduceOp reduce_of(const Attrs& a, const std::string& op) {
  return parallel::parse_reduce_op(a.get_str("reduce_op"), op);
}
int int_attr(const Attrs& a, const char* name) { return static_cast<int>(a.get_int(name)); }

OpDef collective(std::string name, std::string cls, std::string doc, std::vector<InputDef> inputs,
                 std::vector<AttrDef> attrs, InferFn infer, KernelFn kernel, std::string grad) {
  OpDef d =
      make_op(std::move(name), std::move(cls), std::move(doc), std::move(inputs), std::move(attrs),
              std::move(infer), std::move(kernel), all_dtypes(), std::move(grad));
  d.effect = true;
  return d;
}

// Reductions: the op must exist and be defined on the dtype (no sum of bools).
std::vector<TensorMeta> infer_reduction(const InferContext& c) {
  ReduceOp r = reduce_of(c.attrs, c.op.name);
  if (c.in(0).dtype == DType::bool_ && (r == ReduceOp::kSum || r == ReduceOp::kProd))
    MYCEL_THROW(TypeError, "[", c.op.name, "] argument 'x': op '", c.attrs.get_str("reduce_op"),
                "' is not defined on bool tensors (use 'max' for any, 'min' for all)");
  group_size(c);  // the group must exist here
  return {c.in(0)};
}

std::vector<TensorMeta> infer_all_gather(const InferContext& c) {
  const TensorMeta& x = c.in(0);
  if (x.shape.empty())
    MYCEL_THROW(ValueError,
                "[all_gather] argument 'x' must have at least 1 dimension (gathered along "
                "dim 0), got a 0-d tensor");
  TensorMeta out = x;
  if (out.shape[0] >= 0) out.shape[0] *= group_size(c);
  return {out};
}

std::vector<TensorMeta> infer_reduce_scatter(const InferContext& c) {
  TensorMeta out = infer_reduction(c)[0];
  const int n = group_size(c);
  if (out.shape.empty() || (out.shape[0] >= 0 && out.shape[0] % n != 0))
    MYCEL_THROW(ValueError,
                "[reduce_scatter] argument 'x': dim 0 must be divisible by the group size ", n,
                ", got shape ", shape_str(out.shape));
  if (out.shape[0] >= 0) out.shape[0] /= n;
  return {out};
}

// Checks that attribute `root_attr` names a rank of the group.
void check_root(const InferContext& c, const char* root_attr) {
  const int n = group_size(c), root = int_attr(c.attrs, root_attr);
  if (root < 0 || root >= n)
    MYCEL_THROW(ValueError, "[", c.op.name, "] argument '", root_attr,
                "' must be a rank of group '", group_of(c.attrs), "' in [0, ", n, "), got ", root);
}

std::vector<TensorMeta> infer_rooted(const InferContext& c, const char* root_attr) {
  check_root(c, root_attr);
  return {c.in(0)};
}

std::vector<TensorMeta> infer_all_to_all(const InferContext& c) {
  const TensorMeta& x = c.in(0);
  const int n = group_size(c);
  const int64_t nd = static_cast<int64_t>(x.shape.size());
  if (c.attrs.get_int("split_count") != n)
    MYCEL_THROW(ValueError, "[all_to_all] argument 'split_count' must equal the group size ", n,
                ", got ", c.attrs.get_int("split_count"));
  const int64_t s = normalize_axis(c.attrs.get_int("split_dim"), nd, "all_to_all");
  const int64_t k = normalize_axis(c.attrs.get_int("concat_dim"), nd, "all_to_all");
  if (x.shape[s] >= 0 && x.shape[s] % n != 0)
    MYCEL_THROW(ValueError, "[all_to_all] argument 'x': dim ", s,
                " (split_dim) must be divisible by split_count ", n, ", got shape ",
                shape_str(x.shape));
  TensorMeta out = x;
  out.shape[s] /= n;
  out.shape[k] *= n;
  return {out};
}

std::vector<TensorMeta> infer_receive(const InferContext& c) {
  const auto& shape = c.attrs.get_ints("shape");
  for (int64_t d : shape)
    if (d < 0)
      MYCEL_THROW(ValueError, "[receive] argument 'shape' must have sizes >= 0, got ",
                  shape_str(shape));
  check_root(c, "src_rank");
  return {{shape, c.attrs.get_dtype("dtype")}};
}

// Kernels: the Communicator does the work; normalized dims as infer computed them.
void all_to_all_kernel(const KernelContext& c) {
  const int64_t nd = c.in(0).ndim();
  parallel::alltoall(
      c.in(0), c.out(0),
      static_cast<int>(normalize_axis(c.attrs.get_int("split_dim"), nd, "all_to_all")),
      static_cast<int>(normalize_axis(c.attrs.get_int("concat_dim"), nd, "all_to_all")),
      group_of(c.attrs));
}

}  // namespace

MYCEL_REGISTER_OPS(collective) {
  r.add(collective(
      "all_reduce", "AllReduce",
      "Reduces x over every rank of `group` (op: sum, max, min, prod); all get the result.",
      {{"x"}}, {reduce_attr(), group_attr()}, infer_reduction,
      [](const KernelContext& c) {
        parallel::allreduce(c.in(0), c.out(0), reduce_of(c.attrs, "all_reduce"), group_of(c.attrs));
      },
      "bprop"));
  r.add(collective(
      "all_gather", "AllGather",
      "Concatenates x of every rank of `group` along dim 0, in rank order.", {{"x"}},
      {group_attr()}, infer_all_gather,
      [](const KernelContext& c) { parallel::allgather(c.in(0), c.out(0), group_of(c.attrs)); },
      "bprop"));
  r.add(collective(
      "reduce_scatter", "ReduceScatter",
      "Reduces x over `group`, then rank k keeps the k-th slice along dim 0.", {{"x"}},
      {reduce_attr(), group_attr()}, infer_reduce_scatter,
      [](const KernelContext& c) {
        parallel::reduce_scatter(c.in(0), c.out(0), reduce_of(c.attrs, "reduce_scatter"),
                                 group_of(c.attrs));
      },
      "bprop"));
  r.add(collective(
      "broadcast", "Broadcast",
      "Every rank of `group` gets root_rank's x (root_rank is a rank of the group).", {{"x"}},
      {attr("root_rank", AttrKind::kInt), group_attr()},
      [](const InferContext& c) { return infer_rooted(c, "root_rank"); },
      [](const KernelContext& c) {
        parallel::broadcast(c.in(0), c.out(0), int_attr(c.attrs, "root_rank"), group_of(c.attrs));
      },
      "bprop"));
  r.add(collective(
      "reduce", "Reduce", "Reduces x over `group` into dest_rank; the other ranks get zeros.",
      {{"x"}}, {attr("dest_rank", AttrKind::kInt), reduce_attr(), group_attr()},
      [](const InferContext& c) {
        infer_reduction(c);
        return infer_rooted(c, "dest_rank");
      },
      [](const KernelContext& c) {
        parallel::reduce(c.in(0), c.out(0), reduce_of(c.attrs, "reduce"),
                         int_attr(c.attrs, "dest_rank"), group_of(c.attrs));
      },
      "bprop"));
  r.add(collective("all_to_all", "AlltoAll",
                   "Splits x along split_dim into split_count parts, sends part k to rank k and "
                   "concatenates the parts "
                   "received along concat_dim.",
                   {{"x"}},
                   {attr("split_count", AttrKind::kInt), attr("split_dim", AttrKind::kInt),
                    attr("concat_dim", AttrKind::kInt), group_attr()},
                   infer_all_to_all, all_to_all_kernel, "bprop"));
  r.add(collective(
      "send", "Send",
      "Sends x to dest_rank of `group` (matched by a Receive with the same sr_tag); returns x.",
      {{"x"}}, {attr("sr_tag", AttrKind::kInt), attr("dest_rank", AttrKind::kInt), group_attr()},
      [](const InferContext& c) { return infer_rooted(c, "dest_rank"); },
      [](const KernelContext& c) {
        parallel::send(c.in(0), int_attr(c.attrs, "dest_rank"), int_attr(c.attrs, "sr_tag"),
                       group_of(c.attrs));
        if (c.in(0).nbytes()) std::memcpy(c.out(0).data(), c.in(0).data(), c.in(0).nbytes());
      },
      "bprop"));
  r.add(collective(
      "receive", "Receive",
      "Receives a tensor of `shape` and `dtype` sent by src_rank with the same sr_tag.", {},
      {attr("sr_tag", AttrKind::kInt), attr("src_rank", AttrKind::kInt),
       attr("shape", AttrKind::kInts), attr("dtype", AttrKind::kDType, DType::float32),
       group_attr()},
      infer_receive,
      [](const KernelContext& c) {
        parallel::recv(c.out(0), int_attr(c.attrs, "src_rank"), int_attr(c.attrs, "sr_tag"),
                       group_of(c.attrs));
      },
      "bprop"));
  OpDef barrier = collective(
      "barrier", "Barrier",
      "Waits until every rank of `group` has reached it; returns a 0-d int32 zero.", {},
      {group_attr()},
      [](const InferContext& c) -> std::vector<TensorMeta> {
        group_size(c);
        return {{Shape{}, DType::int32}};
      },
      [](const KernelContext& c) {
        parallel::barrier(group_of(c.attrs));
        *c.out(0).data<int32_t>() = 0;
      },
      "none");
  barrier.dtypes = {DType::int32};  // its one output; it has no input
  r.add(std::move(barrier));

  // The split AllReduce that overlaps data parallel's gradient buckets with the backward: the
  // start returns the buffer the sum lands in, the wait (given that buffer) completes it. Graph
  // mode runs the start as soon as its input exists and the wait just before its result is used
  // (OpDef::placement). `elementwise` lets the memory planner put each output over its dying
  // input, so neither copies. Used on gradients only: not differentiable.
  OpDef start = collective(
      "all_reduce_start", "AllReduceStart",
      "Starts a non-blocking AllReduce of x over `group`; returns the buffer all_reduce_wait "
      "completes.",
      {{"x"}}, {reduce_attr(), group_attr()}, infer_reduction,
      [](const KernelContext& c) {
        parallel::allreduce_start(c.in(0), c.out(0), reduce_of(c.attrs, "all_reduce_start"),
                                  group_of(c.attrs));
      },
      "none");
  start.elementwise = true;
  start.placement = Placement::kEarly;
  r.add(std::move(start));
  OpDef wait = collective(
      "all_reduce_wait", "AllReduceWait",
      "Completes the AllReduce all_reduce_start began into x and returns its result.", {{"x"}}, {},
      [](const InferContext& c) { return std::vector<TensorMeta>{c.in(0)}; },
      [](const KernelContext& c) {
        parallel::allreduce_wait(c.in(0));
        if (c.in(0).data() != c.out(0).data() && c.in(0).nbytes())
          std::memcpy(c.out(0).data(), c.in(0).data(), c.in(0).nbytes());
      },
      "none");
  wait.elementwise = true;
  wait.placement = Placement::kLate;
  r.add(std::move(wait));
}

MYCEL_REGISTER_BPROPS(collective) {
  auto with_group = [](BpropBuilder& g, std::map<std::string, AttrValue> a) {
    a["group"] = g.attrs().get_str("group");
    return a;
  };
  // AllReduce: y = reduce_r x_r on every rank; d(sum_r L_r)/dx_r gathers every rank's dout.
  b.add("all_reduce", [with_group](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar()};
    const std::string& op = g.attrs().get_str("reduce_op");
    if (op == "sum")
      return {g.call("all_reduce", {g.dout()}, with_group(g, {{"reduce_op", std::string("sum")}}))};
    if (op == "prod") {
      GradVar s = g.call("all_reduce", {g.mul(g.dout(), g.out())},
                         with_group(g, {{"reduce_op", std::string("sum")}}));
      return {g.div(s, g.input(0))};
    }
    // max/min: the summed dout flows to the ranks holding the extreme (ties all get it).
    GradVar s =
        g.call("all_reduce", {g.dout()}, with_group(g, {{"reduce_op", std::string("sum")}}));
    GradVar mask =
        bprop::as_mask(g, g.call("equal", {g.input(0), g.out()}), g.meta(g.input(0)).dtype);
    return {g.mul(s, mask)};
  });
  b.add("all_gather", [with_group](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar()};
    return {
        g.call("reduce_scatter", {g.dout()}, with_group(g, {{"reduce_op", std::string("sum")}}))};
  });
  b.add("reduce_scatter", [with_group](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar()};
    if (g.attrs().get_str("reduce_op") != "sum")
      MYCEL_THROW(NotSupported, "[reduce_scatter] the gradient is defined for op 'sum' only, got '",
                  g.attrs().get_str("reduce_op"), "'");
    return {g.call("all_gather", {g.dout()}, with_group(g, {}))};
  });
  // Broadcast: every rank's output is root's input, so root's gradient sums every dout.
  b.add("broadcast", [with_group](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar()};
    return {g.call("reduce", {g.dout()},
                   with_group(g, {{"dest_rank", g.attrs().get_int("root_rank")},
                                  {"reduce_op", std::string("sum")}}))};
  });
  b.add("reduce", [with_group](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar()};
    if (g.attrs().get_str("reduce_op") != "sum")
      MYCEL_THROW(NotSupported, "[reduce] the gradient is defined for op 'sum' only, got '",
                  g.attrs().get_str("reduce_op"), "'");
    return {g.call("broadcast", {g.dout()},
                   with_group(g, {{"root_rank", g.attrs().get_int("dest_rank")}}))};
  });
  // Send -> Receive: the receiver's backward sends the gradient of what it received back to this
  // rank (same tag, the other direction); Send's own output is x, so its dout adds to that.
  b.add("send", [with_group](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar()};
    TensorMeta x = g.meta(g.input(0));
    GradVar remote = g.call("receive", {},
                            with_group(g, {{"sr_tag", g.attrs().get_int("sr_tag")},
                                           {"src_rank", g.attrs().get_int("dest_rank")},
                                           {"shape", x.shape},
                                           {"dtype", x.dtype}}));
    return {g.add(g.dout(), remote)};
  });
  // Receive -> Send: the gradient of the received tensor goes back to its sender. Receive has no
  // input, so nothing reads the Send's result: the J transform keeps it as an effect of the
  // backward.
  b.add("receive", [with_group](BpropBuilder& g) -> std::vector<GradVar> {
    if (is_floating(g.out_meta(0).dtype))
      g.call("send", {g.dout()},
             with_group(g, {{"sr_tag", g.attrs().get_int("sr_tag")},
                            {"dest_rank", g.attrs().get_int("src_rank")}}));
    return {};
  });
  b.add("all_to_all", [with_group](BpropBuilder& g) -> std::vector<GradVar> {
    if (!bprop::is_float(g, g.input(0))) return {GradVar()};
    return {g.call("all_to_all", {g.dout()},
                   with_group(g, {{"split_count", g.attrs().get_int("split_count")},
                                  {"split_dim", g.attrs().get_int("concat_dim")},
                                  {"concat_dim", g.attrs().get_int("split_dim")}}))};
  });
}

}  // namespace mycel

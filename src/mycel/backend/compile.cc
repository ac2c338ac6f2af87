// Lowering: each reachable graph becomes a Function of registers and instructions; its free
// variables (closure.cc) are extra parameters that every call site passes from its own scope.
// Tuples exist only at compile time: a node's value is a tree of registers, so make_tuple and
// tuple_getitem cost nothing at run time.
#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "mycel/backend/detail.h"
#include "mycel/backend/effect_order.h"
#include "mycel/backend/place_split.h"
#include "mycel/ir/func_graph.h"

namespace mycel::backend {
namespace detail {
namespace {

using ir::FuncGraph;
using ir::Node;
using ir::NodePtr;

/// A node's value: one register, or a tuple of values.
struct Val {
  int reg = -1;
  bool tuple = false;
  std::vector<Val> items;
};

void flatten(const Val& v, std::vector<int>& out) {
  if (!v.tuple) return out.push_back(v.reg);
  for (const Val& i : v.items) flatten(i, out);
}
std::vector<int> flat(const Val& v) {
  std::vector<int> r;
  flatten(v, r);
  return r;
}

std::string where(const Node* n) {
  if (!n) return "";
  std::string s = n->loc().known() ? " at " + n->loc().str() : "";
  if (n->loc().text) s += ": " + *n->loc().text;
  return s;
}

bool is_weight(const NodePtr& n) {
  auto* p = ir::as_parameter(n);
  return p && p->is_weight();
}

/// A callee resolved at compile time: a graph with leading arguments bound by partial.
struct FnRef {
  const FuncGraph* g = nullptr;
  std::vector<Val> bound;
};

class Lowerer {
 public:
  Lowerer(const FuncGraph& top, ProgramImpl& p) : top_(top), p_(p), effects_(&top) {}

  void run() {
    Closures c = convert_closures(top_);
    graphs_ = std::move(c.graphs);
    index_ = std::move(c.index);
    fv_ = std::move(c.fv);
    p_.fns.resize(graphs_.size());
    for (size_t i = 0; i < graphs_.size(); ++i) lower_graph(static_cast<int>(i));
  }

 private:
  // ---- registers ----

  int new_reg(RegInfo info) {
    fn_->regs.push_back(std::move(info));
    return static_cast<int>(fn_->regs.size()) - 1;
  }

  Val make_val(const ir::AbstractPtr& a, const Node* n) {
    MYCEL_CHECK(a, RuntimeError, "[backend] node without an abstract value in @", g_->name(),
                " (the backend needs analysed, monomorphic graphs)", where(n));
    RegInfo r;
    switch (a->kind()) {
      case ir::AbstractKind::kTensor: {
        auto& t = static_cast<const ir::AbstractTensor&>(*a);
        r.type = RegType::kTensor;
        r.meta = {t.shape(), t.dtype()};
        break;
      }
      case ir::AbstractKind::kScalar: {
        auto k = static_cast<const ir::AbstractScalar&>(*a).type();
        if (k == ir::ValueKind::kBool)
          r.type = RegType::kBool;
        else if (k == ir::ValueKind::kInt)
          r.type = RegType::kInt;
        else if (k == ir::ValueKind::kFloat)
          r.type = RegType::kFloat;
        else
          MYCEL_THROW(NotSupported, "[backend] run-time scalar of type ", a->repr(),
                      " (only bool, int and float scalars exist at run time)", where(n));
        break;
      }
      case ir::AbstractKind::kTuple: {
        Val v;
        v.tuple = true;
        for (const auto& i : static_cast<const ir::AbstractTuple&>(*a).items())
          v.items.push_back(make_val(i, n));
        return v;
      }
      case ir::AbstractKind::kNone:
        r.type = RegType::kNone;
        break;
      case ir::AbstractKind::kFunction:
        MYCEL_THROW(NotSupported, "[backend] a function value used as data in @", g_->name(),
                    " (closures must be called or eliminated before the backend)", where(n));
    }
    return Val{new_reg(std::move(r)), false, {}};
  }

  // An entry parameter's value. Python scalars and None inside a tuple argument are constants
  // here, as a top-level one is (opt::bind_constant_inputs): analysis specialized the graph on
  // their values, and the caller does not pass them (CompiledGraph::flatten_input).
  Val entry_val(const ir::AbstractPtr& a, const Node* n) {
    if (a && a->kind() == ir::AbstractKind::kTuple) {
      Val v;
      v.tuple = true;
      for (const auto& i : static_cast<const ir::AbstractTuple&>(*a).items())
        v.items.push_back(entry_val(i, n));
      return v;
    }
    if (a && a->kind() == ir::AbstractKind::kNone) return const_val(*ir::none(), n);
    if (a && a->kind() == ir::AbstractKind::kScalar) {
      const ir::ValuePtr& c = static_cast<const ir::AbstractScalar&>(*a).value();
      if (c && (c->kind() == ir::ValueKind::kBool || c->kind() == ir::ValueKind::kInt ||
                c->kind() == ir::ValueKind::kFloat))
        return const_val(*c, n);
    }
    return make_val(a, n);
  }

  int const_reg(const ir::Value& v, const Node* n) {
    RegInfo r;
    r.is_const = true;
    switch (v.kind()) {
      case ir::ValueKind::kNone:
        r.type = RegType::kNone;
        break;
      case ir::ValueKind::kBool:
        r.type = RegType::kBool;
        r.value.i = static_cast<const ir::BoolValue&>(v).value();
        break;
      case ir::ValueKind::kInt:
        r.type = RegType::kInt;
        r.value.i = static_cast<const ir::IntValue&>(v).value();
        break;
      case ir::ValueKind::kFloat:
        r.type = RegType::kFloat;
        r.value.f = static_cast<const ir::FloatValue&>(v).value();
        break;
      case ir::ValueKind::kTensor:
        r.type = RegType::kTensor;
        r.value.t = static_cast<const ir::TensorValue&>(v).tensor();
        r.meta = r.value.t.meta();
        break;
      default:
        MYCEL_THROW(NotSupported, "[backend] constant ", v.repr(), " used as a run-time value in @",
                    g_->name(), where(n));
    }
    return new_reg(std::move(r));
  }

  Val const_val(const ir::Value& v, const Node* n) {
    if (v.kind() == ir::ValueKind::kTuple || v.kind() == ir::ValueKind::kList) {
      Val t;
      t.tuple = true;
      for (const auto& i : static_cast<const ir::SequenceValue&>(v).items())
        t.items.push_back(const_val(*i, n));
      return t;
    }
    return Val{const_reg(v, n), false, {}};
  }

  const Val& value_of(const NodePtr& n) {
    auto it = vals_.find(n.get());
    if (it != vals_.end()) return it->second;
    if (auto* c = ir::as_constant(n)) return vals_[n.get()] = const_val(*c->value(), n.get());
    if (is_weight(n)) {
      RegInfo r;
      r.type = RegType::kTensor;
      r.is_const = true;
      r.value.t = ir::as_parameter(n)->bound();
      r.meta = r.value.t.meta();
      return vals_[n.get()] = Val{new_reg(std::move(r)), false, {}};
    }
    MYCEL_THROW(RuntimeError, "[backend] node used in @", g_->name(), " is not in its scope",
                where(n.get()));
  }

  // ---- graphs ----

  void lower_graph(int fi) {
    g_ = graphs_[fi];
    fn_ = &p_.fns[fi];
    fn_->name = g_->name();
    vals_.clear();
    for (const NodePtr& pn : g_->parameters()) {
      auto* prm = ir::as_parameter(pn);
      if (prm->is_weight()) continue;  // captured: value_of makes a constant register
      Val v = fi == 0 ? entry_val(pn->abstract(), pn.get()) : make_val(pn->abstract(), pn.get());
      for (int r : flat(v)) {
        if (fn_->regs[r].is_const) continue;  // not passed (entry_val)
        fn_->params.push_back(r);
        fn_->param_names.push_back(prm->name());
      }
      vals_[pn.get()] = v;
    }
    for (const NodePtr& n : fv_[g_]) {
      Val v = make_val(n->abstract(), n.get());
      for (int r : flat(v)) {
        fn_->params.push_back(r);
        fn_->param_names.push_back(n->debug_name().empty() ? "<free variable>" : n->debug_name());
      }
      vals_[n.get()] = v;
    }
    for (const NodePtr& a : schedule())
      if (!is_function_valued(a)) lower_apply(a);
    fn_->outputs = flat(value_of(g_->output()));
    fn_->raises = ir::is_prim_call(g_->output(), ir::Prim::kRaise);
    fn_->output_node = g_->output().get();
    if (fi == 0) copy_written_weights();
    if (!fn_->code.empty() && fn_->code.back().code == Code::kCall &&
        fn_->code.back().node == g_->output().get() && fn_->code.back().out == fn_->outputs)
      fn_->code.back().tail = true;
  }

  // A step returning a weight it also writes returns the value read at its start (the write
  // comes after every read): the output is a copy taken before any instruction runs.
  void copy_written_weights() {
    const auto& written = effects_.written(g_);
    for (const Node* w : written) {
      auto it = vals_.find(w);
      if (it == vals_.end() || it->second.tuple) continue;
      const int r = it->second.reg;
      int copy = -1;
      for (int& o : fn_->outputs)
        if (o == r) {
          if (copy < 0) {
            RegInfo info;
            info.type = RegType::kTensor;
            info.meta = fn_->regs[r].meta;
            copy = new_reg(std::move(info));
            Instr in{};
            in.code = Code::kCopy;
            in.in = {r};
            in.out = {copy};
            in.node = w;
            fn_->code.insert(fn_->code.begin(), std::move(in));
          }
          o = copy;
        }
    }
  }

  // This graph's applies in dependency order. A node a closure uses as a free variable is a
  // dependency of every node that references the closure's graph (so of the call).
  std::vector<NodePtr> schedule() {
    std::vector<NodePtr> order;
    std::unordered_set<const Node*> done;
    auto mine = [&](const NodePtr& n) { return n && n->is_apply() && n->graph() == g_; };
    auto deps = [&](const NodePtr& n) {
      std::vector<NodePtr> d;
      for (const NodePtr& in : static_cast<ir::Apply*>(n.get())->inputs()) {
        if (mine(in)) d.push_back(in);
        if (const FuncGraph* k = ir::constant_graph(in))
          for (const NodePtr& v : fv_[k])
            if (mine(v)) d.push_back(v);
      }
      auto e = extra_.find(n.get());
      if (e != extra_.end())
        for (const NodePtr& r : e->second) d.push_back(r);
      // Popped from the back: first input first, except that depend(value, effect) runs its
      // effect first (a print before an `if` whose branch raises or prints must come first).
      if (!ir::is_prim_call(n, ir::Prim::kDepend)) std::reverse(d.begin(), d.end());
      return d;
    };
    std::vector<std::pair<NodePtr, std::vector<NodePtr>>> stack;
    auto push = [&](const NodePtr& n) {
      if (!mine(n) || done.count(n.get())) return;
      done.insert(n.get());
      stack.push_back({n, deps(n)});
    };
    auto drain = [&] {
      while (!stack.empty()) {
        auto& [n, d] = stack.back();
        if (!d.empty()) {
          NodePtr next = d.back();
          d.pop_back();
          push(next);
          continue;
        }
        order.push_back(n);
        stack.pop_back();
      }
    };
    auto run = [&] {
      push(g_->output());
      drain();
      // Free variables of closures that are not reached otherwise (e.g. returned via depend).
      for (const FuncGraph* k : g_->used_graphs())
        for (const NodePtr& v : fv_[k]) {
          push(v);
          drain();
        }
    };
    run();
    // Writes of weights (assign) go after every read of the weight: schedule again with those
    // edges.
    extra_ = effects_.deps(g_, order);
    if (!extra_.empty()) {
      order.clear();
      done.clear();
      run();
    }
    // Split collectives: starts as early, waits as late as their data allows.
    order = place_split_collectives(order, deps);
    extra_.clear();
    return order;
  }

  // Switch and partial applications that produce functions are lowered at their call.
  bool is_function_valued(const NodePtr& n) {
    if (ir::constant_graph(n)) return true;
    if (ir::is_prim_call(n, ir::Prim::kPartial)) return true;
    if (ir::is_prim_call(n, ir::Prim::kSwitch)) {
      auto* a = ir::as_apply(n);
      return is_function_valued(a->arg(1)) && is_function_valued(a->arg(2));
    }
    return false;
  }

  Instr& emit(Code c, const Node* n) {
    fn_->code.push_back(Instr{});
    fn_->code.back().code = c;
    fn_->code.back().node = n;
    return fn_->code.back();
  }

  // print's pieces: a constant string, or a value (a tuple as "(a, b)", its tensors as repr).
  static void print_text(Instr& in, std::string s) {
    in.in.push_back(-1 - static_cast<int>(in.text.size()));
    in.text.push_back(std::move(s));
    in.as_repr.push_back(0);
  }
  static void print_value(Instr& in, const Val& v, bool in_tuple) {
    if (!v.tuple) {
      in.in.push_back(v.reg);
      in.as_repr.push_back(in_tuple);
      return;
    }
    print_text(in, "(");
    for (size_t k = 0; k < v.items.size(); ++k) {
      if (k) print_text(in, ", ");
      print_value(in, v.items[k], true);
    }
    print_text(in, v.items.size() == 1 ? ",)" : ")");
  }

  void lower_apply(const NodePtr& node) {
    auto* a = ir::as_apply(node);
    if (auto* c = ir::as_constant(a->callee())) {
      if (c->value()->kind() == ir::ValueKind::kOp) return lower_op(node, a, *c->value());
      if (c->value()->kind() == ir::ValueKind::kPrim)
        return lower_prim(node, a, static_cast<const ir::PrimValue&>(*c->value()).prim());
    }
    lower_call(node, a);
  }

  void lower_op(const NodePtr& node, ir::Apply* a, const ir::Value& v) {
    auto& ov = static_cast<const ir::OpValue&>(v);
    const OpDef& op = ov.op();
    std::vector<int> ins;
    for (size_t i = 0; i < a->num_args(); ++i) {
      const Val& x = value_of(a->arg(i));
      for (int r : flat(x)) {
        RegType t = fn_->regs[r].type;
        if (t == RegType::kNone)
          r = -1;
        else if (t != RegType::kTensor)
          MYCEL_THROW(NotSupported, "[", op.name, "] input ", i, " is a Python scalar in @",
                      g_->name(), "; graph mode expects scalar_to_tensor before op inputs",
                      where(node.get()));
        ins.push_back(r);
      }
    }
    Val out = make_val(node->abstract(), node.get());
    Instr& in = emit(op.view && !out.tuple ? Code::kView : Code::kKernel, node.get());
    in.op = &op;
    in.attrs = ov.attrs();
    in.in = std::move(ins);
    in.out = flat(out);
    for (int r : in.out)
      MYCEL_CHECK(fn_->regs[r].type == RegType::kTensor, RuntimeError, "[", op.name,
                  "] output abstract is not a tensor in @", g_->name(), where(node.get()));
    vals_[node.get()] = std::move(out);
  }

  int scalar_reg(const NodePtr& n, const char* what) {
    const Val& v = value_of(n);
    MYCEL_CHECK(!v.tuple, NotSupported, "[backend] ", what, " of a tuple", where(n.get()));
    return v.reg;
  }

  void lower_prim(const NodePtr& node, ir::Apply* a, ir::Prim p) {
    using ir::Prim;
    const Node* n = node.get();
    switch (p) {
      case Prim::kMakeTuple:
      case Prim::kMakeList: {
        Val t;
        t.tuple = true;
        for (size_t i = 0; i < a->num_args(); ++i) t.items.push_back(value_of(a->arg(i)));
        vals_[n] = std::move(t);
        return;
      }
      case Prim::kTupleGetItem: {
        Val t = value_of(a->arg(0));
        auto* c = ir::as_constant(a->arg(1));
        MYCEL_CHECK(t.tuple && c && c->value()->kind() == ir::ValueKind::kInt, NotSupported,
                    "[backend] tuple_getitem needs a tuple and a constant index", where(n));
        int64_t i = static_cast<const ir::IntValue&>(*c->value()).value();
        int64_t size = static_cast<int64_t>(t.items.size());
        if (i < 0) i += size;
        MYCEL_CHECK(i >= 0 && i < size, IndexError, "[backend] tuple index out of range", where(n));
        vals_[n] = t.items[i];
        return;
      }
      case Prim::kTupleLen: {
        const Val& t = value_of(a->arg(0));
        vals_[n] = Val{const_reg(*ir::integer(static_cast<int64_t>(t.items.size())), n), false, {}};
        return;
      }
      case Prim::kDepend:
        vals_[n] = value_of(a->arg(0));
        return;
      case Prim::kSwitch: {
        Instr& in = emit(Code::kSelect, n);
        in.cond = scalar_reg(a->arg(0), "switch condition");
        in.in = flat(value_of(a->arg(1)));
        in.in_b = flat(value_of(a->arg(2)));
        Val out = make_val(node->abstract(), n);
        fn_->code.back().out = flat(out);
        MYCEL_CHECK(fn_->code.back().in.size() == fn_->code.back().out.size() &&
                        fn_->code.back().in_b.size() == fn_->code.back().out.size(),
                    RuntimeError, "[backend] switch branches differ in structure", where(n));
        vals_[n] = std::move(out);
        return;
      }
      case Prim::kScalarToTensor: {
        auto* c = ir::as_constant(a->arg(1));
        MYCEL_CHECK(c && c->value()->kind() == ir::ValueKind::kDType, NotSupported,
                    "[backend] scalar_to_tensor needs a constant dtype", where(n));
        int s = scalar_reg(a->arg(0), "scalar_to_tensor");
        Val out = make_val(node->abstract(), n);
        Instr& in = emit(Code::kScalarToTensor, n);
        in.in = {s};
        in.out = {out.reg};
        in.dtype = static_cast<const ir::DTypeValue&>(*c->value()).value();
        vals_[n] = std::move(out);
        return;
      }
      case Prim::kTensorToScalar: {
        int t = scalar_reg(a->arg(0), "tensor_to_scalar");
        Val out = make_val(node->abstract(), n);
        Instr& in = emit(Code::kTensorToScalar, n);
        in.in = {t};
        in.out = {out.reg};
        vals_[n] = std::move(out);
        return;
      }
      case Prim::kShape: {
        int t = scalar_reg(a->arg(0), "shape");
        Val out;
        out.tuple = true;
        const Shape s = fn_->regs[t].meta.shape;  // a copy: new_reg grows regs
        for (size_t d = 0; d < s.size(); ++d) {
          if (s[d] != ir::kDynamic) {
            out.items.push_back(Val{const_reg(*ir::integer(s[d]), n), false, {}});
            continue;
          }
          RegInfo r;
          r.type = RegType::kInt;
          int reg = new_reg(r);
          Instr& in = emit(Code::kDim, n);
          in.in = {t};
          in.out = {reg};
          in.axis = static_cast<int64_t>(d);
          out.items.push_back(Val{reg, false, {}});
        }
        vals_[n] = std::move(out);
        return;
      }
      case Prim::kRank: {
        int t = scalar_reg(a->arg(0), "rank");
        int64_t r = static_cast<int64_t>(fn_->regs[t].meta.shape.size());
        vals_[n] = Val{const_reg(*ir::integer(r), n), false, {}};
        return;
      }
      case Prim::kAssign: {
        int w = scalar_reg(a->arg(0), "assign");
        // A weight, or an input of the compiled function: its register holds the caller's
        // tensor, so the write lands in the Parameter (or Tensor) passed in.
        MYCEL_CHECK(effects_.is_state(a->arg(0)) && fn_->regs[w].type == RegType::kTensor,
                    NotSupported,
                    "[backend] assign needs a Parameter or a tensor input of the compiled "
                    "function as its target, got ",
                    "a value passed on to it (an item of *args, or a tensor input carried "
                    "through a loop or into a called function): write an input outside loops, "
                    "and pass it to construct as an argument of its own",
                    where(n));
        Instr& in = emit(Code::kAssign, n);
        in.in = {w, scalar_reg(a->arg(1), "assign")};
        vals_[n] = value_of(a->arg(1));
        return;
      }
      case Prim::kPrint: {  // pieces written one after another: text, values, tuples as "(a, b)"
        Instr print{};
        for (size_t i = 0; i < a->num_args(); ++i) {
          ir::Constant* c = ir::as_constant(a->arg(i));
          if (c && c->value()->kind() == ir::ValueKind::kStr)  // print("loss", x): no register
            print_text(print, static_cast<const ir::StrValue&>(*c->value()).value());
          else
            print_value(print, value_of(a->arg(i)), false);
        }
        Instr& in = emit(Code::kPrint, n);
        in.in = std::move(print.in);
        in.text = std::move(print.text);
        in.as_repr = std::move(print.as_repr);
        vals_[n] = Val{const_reg(*ir::none(), n), false, {}};
        return;
      }
      case Prim::kRaise: {  // its other inputs are effects, scheduled before it as dependencies
        auto* c = ir::as_constant(a->arg(0));
        MYCEL_CHECK(c, NotSupported, "[backend] raise needs a constant exception", where(n));
        emit(Code::kRaise, n).raised = c->value();
        vals_[n] = Val{const_reg(*ir::none(), n), false, {}};
        return;
      }
      case Prim::kScalarAdd:
      case Prim::kScalarSub:
      case Prim::kScalarMul:
      case Prim::kScalarDiv:
      case Prim::kScalarFloorDiv:
      case Prim::kScalarMod:
      case Prim::kScalarPow:
      case Prim::kScalarNeg:
      case Prim::kScalarEq:
      case Prim::kScalarNe:
      case Prim::kScalarLt:
      case Prim::kScalarLe:
      case Prim::kScalarGt:
      case Prim::kScalarGe:
      case Prim::kScalarNot: {
        std::vector<int> ops;
        for (size_t i = 0; i < a->num_args(); ++i) {
          int r = scalar_reg(a->arg(i), ir::prim_name(p));
          RegType t = fn_->regs[r].type;
          MYCEL_CHECK(t == RegType::kInt || t == RegType::kFloat || t == RegType::kBool,
                      NotSupported, "[backend] ", ir::prim_name(p), " operand ", i,
                      " is not a scalar", where(n));
          ops.push_back(r);
        }
        Val out = make_val(node->abstract(), n);
        Instr& in = emit(Code::kScalar, n);
        in.prim = p;
        in.in = std::move(ops);
        in.out = {out.reg};
        vals_[n] = std::move(out);
        return;
      }
      default:
        MYCEL_THROW(NotSupported, "[backend] graph primitive ", ir::prim_name(p),
                    " must be folded or eliminated before the backend (in @", g_->name(), ")",
                    where(n));
    }
  }

  FnRef resolve(const NodePtr& n) {
    if (const FuncGraph* g = ir::constant_graph(n)) return FnRef{g, {}};
    if (ir::is_prim_call(n, ir::Prim::kPartial)) {
      auto* a = ir::as_apply(n);
      FnRef r = resolve(a->arg(0));
      for (size_t i = 1; i < a->num_args(); ++i) r.bound.push_back(value_of(a->arg(i)));
      return r;
    }
    MYCEL_THROW(NotSupported, "[backend] callee in @", g_->name(),
                " is not a graph, a partial application or a switch between them", where(n.get()));
  }

  Target make_target(const FnRef& f, ir::Apply* call) {
    Target t;
    t.fn = index_.at(f.g);
    for (const Val& b : f.bound) flatten(b, t.args);
    for (size_t i = 0; i < call->num_args(); ++i) flatten(value_of(call->arg(i)), t.args);
    for (const NodePtr& v : fv_[f.g]) flatten(value_of(v), t.args);
    return t;
  }

  void lower_call(const NodePtr& node, ir::Apply* a) {
    std::vector<FnRef> refs;
    int cond = -1;
    if (ir::is_prim_call(a->callee(), ir::Prim::kSwitch)) {
      auto* sw = ir::as_apply(a->callee());
      cond = scalar_reg(sw->arg(0), "switch condition");
      refs = {resolve(sw->arg(1)), resolve(sw->arg(2))};
    } else {
      refs = {resolve(a->callee())};
    }
    std::vector<Target> targets;
    for (const FnRef& r : refs) targets.push_back(make_target(r, a));
    Val out = make_val(node->abstract(), node.get());
    Instr& in = emit(Code::kCall, node.get());
    in.cond = cond;
    in.targets = std::move(targets);
    in.out = flat(out);
    vals_[node.get()] = std::move(out);
  }

  const FuncGraph& top_;
  ProgramImpl& p_;
  std::vector<const FuncGraph*> graphs_;
  std::unordered_map<const FuncGraph*, int> index_;
  std::unordered_map<const FuncGraph*, std::vector<NodePtr>> fv_;
  EffectOrder effects_;                                          // assign after reads
  std::unordered_map<const Node*, std::vector<NodePtr>> extra_;  // ... as scheduling edges
  // Per graph being lowered.
  const FuncGraph* g_ = nullptr;
  Function* fn_ = nullptr;
  std::unordered_map<const Node*, Val> vals_;
};

}  // namespace

void lower(const ir::FuncGraph& top, ProgramImpl& p) { Lowerer(top, p).run(); }

}  // namespace detail
}  // namespace mycel::backend

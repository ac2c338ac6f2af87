// Analysis-internal abstract values (function values with their defining context, unions of
// functions from data-dependent switches, dicts, opaque Python objects, the "not yet known"
// result of a recursive call) and the lattice operations on abstracts: join, widen, constants.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::analysis::detail {

struct Context;

/// Where a graph constant was created, and which specializations calls of it asked for.
/// Sites whose values reach the same memoized call (one clone serves both) are merged: the later
/// one forwards to the first, so both constants are replaced by the clones either call asked for.
struct Site {
  ir::FuncGraph* graph = nullptr;     // the original graph
  Context* env = nullptr;             // where its free variables live
  std::vector<ir::FuncGraph*> specs;  // distinct specialized clones (of the root)
  std::shared_ptr<Site> merged_into;  // set when this site forwards to another
  bool direct = false;                // its calls call their clones directly
  Site* root() {
    Site* s = this;
    while (s->merged_into) s = s->merged_into.get();
    return s;
  }
  void add(ir::FuncGraph* g) {
    Site* r = root();
    for (auto* s : r->specs)
      if (s == g) return;
    r->specs.push_back(g);
  }
  /// The specializations asked for through this site or any site merged with it.
  const std::vector<ir::FuncGraph*>& all_specs() { return root()->specs; }
};
/// Merges the site of every function value inside `from` (tuples, partial arguments) into the
/// site of the function value at the same place in `into`.
void merge_sites(const ir::AbstractPtr& from, const ir::AbstractPtr& into);

/// A function value: a graph closure (graph + the context its free variables live in), an op or
/// a graph primitive, with arguments bound by partial().
class FnAbs : public ir::AbstractFunction {
 public:
  FnAbs(ir::ValuePtr callee, Context* env, std::shared_ptr<Site> site,
        std::vector<ir::AbstractPtr> bound = {})
      : ir::AbstractFunction(std::move(callee), std::move(bound)),
        env_(env),
        site_(std::move(site)) {}
  Context* env() const { return env_; }
  const std::shared_ptr<Site>& site() const { return site_; }
  ir::FuncGraph* graph() const;  // nullptr unless a graph closure

 private:
  Context* env_;
  std::shared_ptr<Site> site_;
};

/// One of several functions (the result of switch on a run-time condition).
class FnUnion : public ir::Abstract {
 public:
  FnUnion(std::vector<std::shared_ptr<const FnAbs>> fns, ir::SourceLoc loc)
      : ir::Abstract(ir::AbstractKind::kFunction), fns_(std::move(fns)), loc_(std::move(loc)) {}
  const std::vector<std::shared_ptr<const FnAbs>>& fns() const { return fns_; }
  const ir::SourceLoc& loc() const { return loc_; }
  std::string repr() const override;
  bool equals(const ir::Abstract& o) const override;

 private:
  std::vector<std::shared_ptr<const FnAbs>> fns_;
  ir::SourceLoc loc_;
};

/// A dict with constant keys: a tuple of values plus the keys.
class DictAbs : public ir::AbstractTuple {
 public:
  DictAbs(std::vector<ir::ValuePtr> keys, std::vector<ir::AbstractPtr> values)
      : ir::AbstractTuple(std::move(values)), keys_(std::move(keys)) {}
  const std::vector<ir::ValuePtr>& keys() const { return keys_; }
  std::string repr() const override;

 private:
  std::vector<ir::ValuePtr> keys_;
};

/// A record: an object of a Python class that graph mode builds at run time (a CSRTensor, a
/// @jit_class instance), carried as the tuple of its run-time fields. Fields known at compile
/// time (a CSRTensor's shape, an int) are kept here as values and take no place in the tuple, so
/// the backend sees only tensors; the class is a compile-time tag that selects its methods.
class RecordAbs : public ir::AbstractTuple {
 public:
  /// names: every field in order; statics: per name its compile-time value, or nullptr for a
  /// run-time field; items: the run-time fields' abstracts, in the order of the names.
  RecordAbs(ir::ValuePtr cls, std::vector<std::string> names, std::vector<ir::ValuePtr> statics,
            std::vector<ir::AbstractPtr> items)
      : ir::AbstractTuple(std::move(items)),
        cls_(std::move(cls)),
        names_(std::move(names)),
        statics_(std::move(statics)) {}
  const ir::ValuePtr& cls() const { return cls_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<ir::ValuePtr>& statics() const { return statics_; }
  /// The class's name as the printer shows it ("CSRTensor").
  std::string class_name() const;
  /// The index of field `name` in names(), or -1.
  int field(const std::string& name) const;
  /// The position in the tuple of run-time field `k` (an index into names()).
  size_t item_of(size_t k) const;
  /// The same record with other run-time items (join, widening, finalization).
  std::shared_ptr<const RecordAbs> with_items(std::vector<ir::AbstractPtr> items) const {
    return std::make_shared<RecordAbs>(cls_, names_, statics_, std::move(items));
  }
  /// Same class, fields and compile-time values (the run-time items may differ).
  bool same_layout(const RecordAbs& o) const;
  std::string repr() const override;
  bool equals(const ir::Abstract& o) const override;

 private:
  ir::ValuePtr cls_;
  std::vector<std::string> names_;
  std::vector<ir::ValuePtr> statics_;
};
inline const RecordAbs* as_record(const ir::AbstractPtr& a) {
  return dynamic_cast<const RecordAbs*>(a.get());
}

/// A gradient function made in the graph, `grad_op(fn, weights)`: calling it specializes fn for
/// the call's arguments and gives the gradients' abstract; ad::expand_grad_calls later replaces the
/// call by a call of fn's gradient graph.
class GradFnAbs : public ir::Abstract {
 public:
  GradFnAbs(std::shared_ptr<const ir::GradOpValue> op, ir::AbstractPtr fn, ir::AbstractPtr weights)
      : ir::Abstract(ir::AbstractKind::kFunction),
        op_(std::move(op)),
        fn_(std::move(fn)),
        weights_(std::move(weights)) {}
  const ir::GradOpValue& op() const { return *op_; }
  const std::shared_ptr<const ir::GradOpValue>& op_ptr() const { return op_; }
  const ir::AbstractPtr& fn() const { return fn_; }
  const ir::AbstractPtr& weights() const { return weights_; }  // None, or a tuple of tensors
  std::string repr() const override { return "grad_fn<" + op_->repr() + ", " + fn_->repr() + ">"; }
  bool equals(const ir::Abstract& o) const override;

 private:
  std::shared_ptr<const ir::GradOpValue> op_;
  ir::AbstractPtr fn_, weights_;
};

/// A vmap function made in the graph, `vmap_op(fn)`: calling it specializes fn for one item (the
/// mapped axes removed) and gives the output with the batch inserted at out_axes;
/// ad::expand_vmap_calls later replaces the call by a call of fn's batched graph.
class VmapFnAbs : public ir::Abstract {
 public:
  VmapFnAbs(std::shared_ptr<const ir::VmapOpValue> op, ir::AbstractPtr fn)
      : ir::Abstract(ir::AbstractKind::kFunction), op_(std::move(op)), fn_(std::move(fn)) {}
  const ir::VmapOpValue& op() const { return *op_; }
  const std::shared_ptr<const ir::VmapOpValue>& op_ptr() const { return op_; }
  const ir::AbstractPtr& fn() const { return fn_; }
  std::string repr() const override { return "vmap_fn<" + op_->repr() + ", " + fn_->repr() + ">"; }
  bool equals(const ir::Abstract& o) const override;

 private:
  std::shared_ptr<const ir::VmapOpValue> op_;
  ir::AbstractPtr fn_;
};

/// One item's inputs of a vmap call: `batched` (the call's argument abstracts) with the mapped
/// axes removed; sets the batch size and in_axes spelled out to each argument's structure with
/// axes normalized. Errors (ValueError) name the argument, the axis and the shape.
std::vector<ir::AbstractPtr> unbatched_inputs(const std::vector<ir::AbstractPtr>& batched,
                                              const ir::BatchAxes& in_axes, int64_t& batch_size,
                                              std::vector<ir::BatchAxes>& expanded);
/// The abstract of a vmap call's result: one item's output `a` with the batch inserted at out_axes
/// (every tensor under a mapped entry; None leaves it as it is).
ir::AbstractPtr batched_output(const ir::AbstractPtr& a, const ir::BatchAxes& out_axes,
                               int64_t batch_size);

/// A constant of a kind analysis cannot interpret (a Python object): callable only through the
/// compile-time evaluation hook.
class OpaqueAbs : public ir::Abstract {
 public:
  explicit OpaqueAbs(ir::ValuePtr v)
      : ir::Abstract(ir::AbstractKind::kFunction), v_(std::move(v)) {}
  const ir::ValuePtr& value() const { return v_; }
  std::string repr() const override { return "opaque:" + v_->repr(); }
  bool equals(const ir::Abstract& o) const override;

 private:
  ir::ValuePtr v_;
};

/// The result of a recursive call whose callee's output is not known yet (bottom of the lattice).
class PendingAbs : public ir::Abstract {
 public:
  PendingAbs() : ir::Abstract(ir::AbstractKind::kNone) {}
  std::string repr() const override { return "<pending>"; }
  bool equals(const ir::Abstract& o) const override { return typeid(o) == typeid(*this); }
};

/// The value of an expression that raises when it runs (a `raise` left for run time, a call
/// that always raises): there is none. It joins away at a switch like pending (the other
/// branch gives the type), and an expression using it is that raise; unlike pending it is final.
class RaisesAbs : public PendingAbs {
 public:
  std::string repr() const override { return "<raises>"; }
};

ir::AbstractPtr pending();
bool is_pending(const ir::AbstractPtr& a);
ir::AbstractPtr raises();
bool is_raises(const ir::AbstractPtr& a);
/// True when `a` holds a pending part anywhere (tuple items).
bool has_pending(const ir::AbstractPtr& a);

/// The abstract of a constant value (graph values need a context: see Engine).
ir::AbstractPtr abstract_of_value(const ir::ValuePtr& v);
/// The constant value `a` stands for, when fully known (scalars with values, None, tuples of
/// those); nullptr otherwise.
ir::ValuePtr constant_of(const ir::AbstractPtr& a);
/// Scalar abstract helpers.
ir::AbstractPtr scalar_abs(ir::ValueKind type, ir::ValuePtr value = nullptr);
const ir::AbstractScalar* as_scalar(const ir::AbstractPtr& a);
const ir::AbstractTensor* as_tensor(const ir::AbstractPtr& a);
const ir::AbstractTuple* as_tuple(const ir::AbstractPtr& a);

/// Least upper bound for control-flow merges: equal abstracts stay; scalars of one type lose
/// differing values; tensors of one dtype and rank get kDynamic where dims differ; tuples join
/// item-wise; functions form a union. Returns nullptr when they cannot be joined.
ir::AbstractPtr join(const ir::AbstractPtr& a, const ir::AbstractPtr& b, const ir::SourceLoc& loc);
/// Widening for recursion: like join, and constants always lose their values.
ir::AbstractPtr widen(const ir::AbstractPtr& a, const ir::AbstractPtr& b);

/// A text key for a signature; closures are keyed by graph and context identity.
std::string key_of(const ir::AbstractPtr& a);

/// "\n<file>:<line>: <source line>" for a known location, "" otherwise.
std::string where(const ir::SourceLoc& loc);
/// "\n  called from <file>:<line>: <source line>" for the site of a function call, so an error
/// inside the callee shows the chain of calls that led there; "" for an unknown location and for
/// the calls of control-flow blocks (sites on `if`/`while`/`for`/... lines: not user calls).
std::string called_from(const ir::SourceLoc& loc);
/// Rethrows the exception in flight as the same error class, with `suffix` appended (and each
/// occurrence of `placeholder`, when given, shown as "?": dynamic dims in infer messages).
[[noreturn]] void rethrow_with(const std::string& suffix, const std::string& placeholder = "");

}  // namespace mycel::analysis::detail

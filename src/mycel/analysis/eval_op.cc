// Op calls: canonical unresolved form -> resolved form. Attribute arguments must be compile-time
// constants; Python scalar inputs become tensors of the eager weak-scalar dtype; promote_inputs
// ops get explicit casts; the output abstract comes from the op's own infer.
//
// Dynamic dims: infer runs on concrete sizes, so every kDynamic input dim is replaced by a
// placeholder size and infer runs twice, with two different placeholders; an output dim that
// differs between the runs depends on a dynamic dim and becomes kDynamic. Checks between sizes
// let the placeholder match any size (core/dynamic_dims.h): a dynamic dim broadcast against n is
// n, against 1 stays dynamic; the backend's shape plan infers again on the real sizes, so a
// mismatch is the op's own error when the program runs.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>

#include "mycel/analysis/engine.h"
#include "mycel/core/dynamic_dims.h"
#include "mycel/core/error.h"
#include "mycel/ops/data_dependent.h"

namespace mycel::analysis::detail {

using namespace ir;

namespace {
// Highly divisible (n! and twice it), so a dynamic dim splits as a consistent program splits it
// (reshape of (b * s, d) into (b, -1, d)); an output dim that depends on it still differs. The
// largest pair whose sizes keep every input (and outputs 2**8 times larger) within the registry's
// 2**56 elements is used: 7! for up to four dynamic dims, smaller factorials for more.
struct Placeholders {
  int64_t a, b;
};
constexpr Placeholders kPlaceholders[] = {
    {5040, 10080}, {720, 1440}, {120, 240}, {24, 48}, {6, 12}};

Placeholders placeholders_for(const std::vector<const Shape*>& shapes) {
  for (const Placeholders& p : kPlaceholders) {
    bool fits = true;
    for (const Shape* s : shapes) {
      double log2_count = 0;
      for (int64_t d : *s)
        log2_count += std::log2(static_cast<double>(d == kDynamic ? p.b : std::max<int64_t>(d, 1)));
      fits &= log2_count <= 48;
    }
    if (fits) return p;
  }
  return kPlaceholders[std::size(kPlaceholders) - 1];
}

// reshape of x with dynamic dims: x's element count is known only at run time, and placeholder
// sizes would fail reshape's count check (MindSpore's `reshape(unique(x)[0], (3, 3))`). The
// first dynamic dim of `shape` (x's, placeholders filled in) is sized so the count fits the
// target: the target's count when it has no -1 (the result is static), else the target's known
// part times the placeholder (the -1 dim comes out dynamic). The run time checks the real count
// (the backend infers reshape again on the actual sizes).
void fit_reshape_count(Shape& shape, const Shape& abstract, const std::vector<int64_t>& target,
                       int64_t placeholder) {
  int64_t known = 1, static_part = 1;
  bool has_minus_one = false;
  for (int64_t t : target) {
    if (t == -1)
      has_minus_one = true;
    else if (t < 0 || __builtin_mul_overflow(known, t, &known))
      return;  // reshape's own infer names the problem
  }
  size_t first = abstract.size();
  for (size_t d = 0; d < abstract.size(); ++d) {
    if (abstract[d] != kDynamic)
      static_part *= abstract[d];
    else if (first == abstract.size())
      first = d;
  }
  if (first == abstract.size() || static_part == 0 || known == 0) return;
  for (size_t d = first + 1; d < abstract.size(); ++d)
    if (abstract[d] == kDynamic) shape[d] = 1;
  if (!has_minus_one) {
    if (known % static_part == 0) shape[first] = known / static_part;
  } else if (int64_t n; !__builtin_mul_overflow(known, placeholder, &n)) {
    shape[first] = n;
  }
}

// Python's scalar arithmetic for the operator an op spells (its registry trait).
std::optional<Prim> scalar_prim(PyOperator o) {
  switch (o) {
    case PyOperator::kAdd:
      return Prim::kScalarAdd;
    case PyOperator::kSub:
      return Prim::kScalarSub;
    case PyOperator::kMul:
      return Prim::kScalarMul;
    case PyOperator::kDiv:
      return Prim::kScalarDiv;
    case PyOperator::kFloorDiv:
      return Prim::kScalarFloorDiv;
    case PyOperator::kMod:
      return Prim::kScalarMod;
    case PyOperator::kPow:
      return Prim::kScalarPow;
    case PyOperator::kEq:
      return Prim::kScalarEq;
    case PyOperator::kNe:
      return Prim::kScalarNe;
    case PyOperator::kLt:
      return Prim::kScalarLt;
    case PyOperator::kLe:
      return Prim::kScalarLe;
    case PyOperator::kGt:
      return Prim::kScalarGt;
    case PyOperator::kGe:
      return Prim::kScalarGe;
    case PyOperator::kNone:
    case PyOperator::kGetItem:
      break;
  }
  return std::nullopt;
}

std::optional<AttrValue> to_attr(const ValuePtr& v) {
  switch (v->kind()) {
    case ValueKind::kNone:
      return AttrValue{};
    case ValueKind::kBool:
      return AttrValue{static_cast<const BoolValue&>(*v).value()};
    case ValueKind::kInt:
      return AttrValue{static_cast<const IntValue&>(*v).value()};
    case ValueKind::kFloat:
      return AttrValue{static_cast<const FloatValue&>(*v).value()};
    case ValueKind::kStr:
      return AttrValue{static_cast<const StrValue&>(*v).value()};
    case ValueKind::kDType:
      return AttrValue{static_cast<const DTypeValue&>(*v).value()};
    case ValueKind::kTuple:
    case ValueKind::kList: {
      const auto& items = static_cast<const SequenceValue&>(*v).items();
      bool any_float = false;
      for (const auto& i : items) {
        if (i->kind() == ValueKind::kFloat)
          any_float = true;
        else if (i->kind() != ValueKind::kInt && i->kind() != ValueKind::kBool)
          return std::nullopt;
      }
      auto num = [](const ValuePtr& i) -> double {
        if (i->kind() == ValueKind::kFloat) return static_cast<const FloatValue&>(*i).value();
        if (i->kind() == ValueKind::kBool) return static_cast<const BoolValue&>(*i).value();
        return static_cast<double>(static_cast<const IntValue&>(*i).value());
      };
      if (any_float) {
        std::vector<double> d;
        for (const auto& i : items) d.push_back(num(i));
        return AttrValue{d};
      }
      std::vector<int64_t> n;
      for (const auto& i : items)
        n.push_back(i->kind() == ValueKind::kBool ? static_cast<const BoolValue&>(*i).value()
                                                  : static_cast<const IntValue&>(*i).value());
      return AttrValue{n};
    }
    case ValueKind::kTensor: {  // a constant int tensor of rank <= 1 (MindSpore's bounds)
      const Tensor& t = static_cast<const TensorValue&>(*v).tensor();
      if (!is_integral(t.dtype()) || t.ndim() > 1) return std::nullopt;
      Tensor w = t.to(DType::int64);
      std::vector<int64_t> n(w.data<int64_t>(), w.data<int64_t>() + w.numel());
      if (t.ndim() == 0) return AttrValue{n[0]};
      return AttrValue{n};
    }
    default:
      return std::nullopt;
  }
}

// Eager's weak-scalar rule (bind_ops.cc): a Python scalar takes the tensors' dtype unless it is
// of a higher kind.
DType weak_scalar_dtype(ValueKind k, bool have_base, DType base) {
  if (k == ValueKind::kBool) return have_base ? base : DType::bool_;
  if (k == ValueKind::kInt) return !have_base || is_bool(base) ? DType::int64 : base;
  if (have_base && is_complex(base)) return base;  // complex * 0.5 stays complex
  return !have_base || !is_floating(base) ? DType::float32 : base;
}

bool is_weak_scalar(const AbstractPtr& a) {
  auto* s = as_scalar(a);
  return s && (s->type() == ValueKind::kBool || s->type() == ValueKind::kInt ||
               s->type() == ValueKind::kFloat);
}

AbstractPtr tensor_abs(Shape s, DType t) {
  return std::make_shared<AbstractTensor>(std::move(s), t);
}

// Python's == on constants: numbers by value (2 == 2.0 == True), tuples and lists item by item
// (a tuple never equals a list), anything else (dtypes, strings, None) by identity of value.
bool python_equal(const Value& x, const Value& y) {
  auto num = [](const Value& v) {
    return v.kind() == ValueKind::kBool || v.kind() == ValueKind::kInt ||
           v.kind() == ValueKind::kFloat;
  };
  auto as_double = [](const Value& v) -> double {
    if (v.kind() == ValueKind::kFloat) return static_cast<const FloatValue&>(v).value();
    if (v.kind() == ValueKind::kBool) return static_cast<const BoolValue&>(v).value();
    return static_cast<double>(static_cast<const IntValue&>(v).value());
  };
  if (num(x) && num(y)) return as_double(x) == as_double(y);
  if ((x.kind() == ValueKind::kTuple || x.kind() == ValueKind::kList) && x.kind() == y.kind()) {
    const auto& a = static_cast<const SequenceValue&>(x).items();
    const auto& b = static_cast<const SequenceValue&>(y).items();
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!python_equal(*a[i], *b[i])) return false;
    return true;
  }
  return x.equals(y);
}
}  // namespace

namespace {
/// strided_slice(t, begin, end, strides, masks...) on a tuple t: one index or one constant slice.
NodePtr tuple_subscript(Engine& e, Context* ctx, const std::vector<NodePtr>& args,
                        const SourceLoc& loc) {
  const auto* t = as_tuple(args[0]->abstract());
  auto ints = [&](size_t k) {
    std::vector<int64_t> v;
    ValuePtr c = constant_of(args[k]->abstract());
    if (!c || c->kind() != ValueKind::kTuple)
      MYCEL_THROW(NotSupported, "[getitem] a tuple can only be indexed with constants", where(loc));
    for (const auto& i : static_cast<const SequenceValue&>(*c).items()) {
      if (i->kind() != ValueKind::kInt)
        MYCEL_THROW(NotSupported, "[getitem] a tuple can only be indexed with integer constants",
                    where(loc));
      v.push_back(static_cast<const IntValue&>(*i).value());
    }
    return v;
  };
  auto mask = [&](size_t k) {
    ValuePtr c = constant_of(args[k]->abstract());
    return c && c->kind() == ValueKind::kInt ? static_cast<const IntValue&>(*c).value()
                                             : int64_t{0};
  };
  std::vector<int64_t> begin = ints(1), end = ints(2), strides = ints(3);
  if (begin.size() != 1 || mask(6) || mask(7))
    MYCEL_THROW(NotSupported, "[getitem] a tuple takes one index or slice, got ", begin.size(),
                where(loc));
  const int64_t n = static_cast<int64_t>(t->items().size());
  auto item = [&](int64_t i) {
    if (is_prim_call(args[0], Prim::kMakeTuple) || is_prim_call(args[0], Prim::kMakeList))
      return as_apply(args[0])->arg(i);
    return e.emit(
        ctx,
        {e.constant(ctx, prim_value(Prim::kTupleGetItem)), args[0], e.constant(ctx, integer(i))},
        t->items()[i], loc);
  };
  if (mask(8) & 1) {  // t[i]
    int64_t i = begin[0] < 0 ? begin[0] + n : begin[0];
    if (i < 0 || i >= n)
      MYCEL_THROW(IndexError, "[getitem] tuple index ", begin[0], " out of range for ", n, " items",
                  where(loc));
    return item(i);
  }
  int64_t step = strides[0];
  if (step == 0) MYCEL_THROW(ValueError, "[getitem] slice step cannot be zero", where(loc));
  auto clamp = [&](int64_t v) {  // Python's slice bounds
    if (v < 0) v += n;
    int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? n : n - 1;
    return std::min(std::max(v, lo), hi);
  };
  int64_t b = (mask(4) & 1) ? (step > 0 ? 0 : n - 1) : clamp(begin[0]);
  int64_t en = (mask(5) & 1) ? (step > 0 ? n : -1) : clamp(end[0]);
  std::vector<NodePtr> items;
  for (int64_t i = b; step > 0 ? i < en : i > en; i += step) items.push_back(item(i));
  return eval_prim_call(e, ctx, t->is_list() ? Prim::kMakeList : Prim::kMakeTuple, items, loc);
}
}  // namespace

/// reshape(x, (x.shape[0], -1)) with x.shape[0] dynamic: a shape with run-time items that are
/// dynamic dims of x itself becomes a constant shape with one -1. The run-time item turns into
/// the -1, and a -1 the user wrote into the size it must have, computed from x's static dims
/// (the dynamic dim cancels). Otherwise one run-time item among constants, and no -1
/// (reshape(b * s, d) with a dynamic s), becomes the -1: numel fixes its value, the one a
/// consistent program computes. nullptr when the items are of neither form (the caller then
/// reports the usual compile-time-constant error).
static ValuePtr reshape_dynamic_shape(const NodePtr& x, const NodePtr& shape,
                                      const SourceLoc& loc) {
  auto* xt = as_tensor(x->abstract());
  auto* st = as_tuple(shape->abstract());
  if (!xt || !st || !is_prim_call(shape, Prim::kMakeTuple)) return nullptr;
  auto dim_of_x = [&](const NodePtr& n) -> int64_t {  // k when n is x.shape[k], else -1
    if (!is_prim_call(n, Prim::kTupleGetItem)) return -1;
    const NodePtr& sh = as_apply(n)->arg(0);
    ValuePtr k = constant_of(as_apply(n)->arg(1)->abstract());
    if (!is_prim_call(sh, Prim::kShape) || as_apply(sh)->arg(0) != x || !k ||
        k->kind() != ValueKind::kInt)
      return -1;
    return static_cast<const IntValue&>(*k).value();
  };
  const auto* items = as_apply(shape);
  std::vector<int64_t> out;
  std::vector<int64_t> used;  // dynamic dims of x the shape names
  size_t other_runtime = 0;   // other run-time items (b * s, a loop counter, ...)
  int minus_at = -1;
  int64_t known = 1;  // product of the constant sizes given
  for (size_t i = 0; i < items->num_args(); ++i) {
    ValuePtr v = constant_of(st->items()[i]);
    if (v && v->kind() == ValueKind::kInt) {
      int64_t d = static_cast<const IntValue&>(*v).value();
      if (d == -1)
        minus_at = static_cast<int>(i);
      else
        known *= d;
      out.push_back(d);
      continue;
    }
    int64_t k = dim_of_x(items->arg(i));
    if (k < 0)
      ++other_runtime;
    else
      used.push_back(k);
    out.push_back(-1);
  }
  if (other_runtime > 0) {
    if (other_runtime + used.size() != 1 || minus_at >= 0)
      MYCEL_THROW(NotSupported, "[reshape] argument 'shape' ", shape->abstract()->repr(), " for x ",
                  x->abstract()->repr(), " has ", other_runtime + used.size(),
                  " values known only at run time", minus_at >= 0 ? " and a -1" : "",
                  ": at most one size may be unknown when compiling (it becomes the -1); "
                  "write the others as constants",
                  where(loc));
    std::vector<ValuePtr> vals;
    for (int64_t d : out) vals.push_back(integer(d));
    return tuple(std::move(vals));
  }
  int64_t rank = static_cast<int64_t>(xt->shape().size()), static_numel = 1;
  std::vector<int64_t> dynamic;
  for (int64_t k = 0; k < rank; ++k) {
    if (xt->shape()[k] == kDynamic)
      dynamic.push_back(k);
    else
      static_numel *= xt->shape()[k];
  }
  if (used.size() != 1 || dynamic.size() != 1 || used[0] != dynamic[0])
    MYCEL_THROW(NotSupported,
                "[reshape] argument 'shape' may name one dynamic dim of x (x.shape[k]) "
                "when x has exactly one; got ",
                shape->abstract()->repr(), " for x ", x->abstract()->repr(),
                ": write the shape with one -1 and constants, e.g. reshape(-1, k)", where(loc));
  if (minus_at >= 0) {
    if (known == 0 || static_numel % known != 0)
      MYCEL_THROW(ValueError, "[reshape] cannot reshape ", x->abstract()->repr(), " into ",
                  shape->abstract()->repr(), where(loc));
    out[minus_at] = static_numel / known;
  }
  std::vector<ValuePtr> vals;
  for (int64_t d : out) vals.push_back(integer(d));
  return tuple(std::move(vals));
}

/// zeros/ones/fill((n, x.shape[k], ...)) with x.shape[k] a dynamic dim (an RNN's initial state
/// for a dynamic batch): a dynamic_fill that reads those sizes from x when the program runs. A
/// size computed at run time (an integer 0-d tensor or int) is read from its value there.
/// nullptr when the shape is not constants and dims of tensors (the caller then reports the
/// usual compile-time-constant error).
static NodePtr dynamic_fill(Engine& e, Context* ctx, const OpDef& op,
                            const std::vector<NodePtr>& args, const SourceLoc& loc) {
  const NodePtr& shape = args[op.attr_index("shape")];
  auto* st = as_tuple(shape->abstract());
  if (!st || !is_prim_call(shape, Prim::kMakeTuple)) return nullptr;
  std::vector<NodePtr> refs;
  std::vector<ValuePtr> sizes, triples;
  const auto* items = as_apply(shape);
  for (size_t i = 0; i < items->num_args(); ++i) {
    ValuePtr v = constant_of(st->items()[i]);
    if (v && v->kind() == ValueKind::kInt) {
      sizes.push_back(v);
      continue;
    }
    const NodePtr& n = items->arg(i);  // x.shape[k]?
    if (!is_prim_call(n, Prim::kTupleGetItem) || !is_prim_call(as_apply(n)->arg(0), Prim::kShape)) {
      // A size the program computes (a 0-d integer tensor, a run-time int): the result's dim is
      // data-dependent, and dynamic_fill reads the value when it runs.
      const AbstractPtr& a = st->items()[i];
      auto* t = as_tensor(a);
      auto* sc = as_scalar(a);
      if (!(t && t->shape().empty() && is_integral(t->dtype())) &&
          !(sc && sc->type() == ValueKind::kInt))
        return nullptr;
      refs.push_back(n);
      sizes.push_back(integer(-1));
      for (int64_t v :
           {static_cast<int64_t>(i), static_cast<int64_t>(refs.size() - 1), int64_t{-1}})
        triples.push_back(integer(v));
      continue;
    }
    ValuePtr k = constant_of(as_apply(n)->arg(1)->abstract());
    if (!k || k->kind() != ValueKind::kInt) return nullptr;
    const NodePtr& x = as_apply(as_apply(n)->arg(0))->arg(0);
    size_t r = std::find(refs.begin(), refs.end(), x) - refs.begin();
    if (r == refs.size()) refs.push_back(x);
    sizes.push_back(integer(-1));
    for (int64_t t : {static_cast<int64_t>(i), static_cast<int64_t>(r),
                      static_cast<const IntValue&>(*k).value()})
      triples.push_back(integer(t));
  }
  ValuePtr value = floating(op.fill.value);
  if (!op.fill.value_attr.empty()) {
    value = constant_of(args[op.attr_index(op.fill.value_attr)]->abstract());
    if (!value) return nullptr;  // the value must be known when compiling, as for fill itself
  }
  static const OpDef& fill = Registry::get().at("dynamic_fill");
  std::vector<NodePtr> fill_args{eval_prim_call(e, ctx, Prim::kMakeTuple, refs, loc),
                                 e.constant(ctx, tuple(std::move(sizes))),
                                 e.constant(ctx, tuple(std::move(triples))), e.constant(ctx, value),
                                 args[op.attr_index("dtype")]};
  return eval_op_call(e, ctx, OpValue(&fill, Attrs()), fill_args, loc);
}

namespace {
// An op called with an attribute known only at run time (strided_slice's bounds as tensors):
// the registry's "<name>_dynamic" variant, which takes those attributes as int tensor inputs
// (the constant ones become constant tensors) and the rest as attributes; nullptr if there is
// none or an argument fits neither (a tuple of run-time ints).
NodePtr dynamic_attr_variant(Engine& e, Context* ctx, const OpDef& op, const Attrs& preset,
                             const std::vector<NodePtr>& args, const SourceLoc& loc) {
  const OpDef* dyn = Registry::get().find(op.name + "_dynamic");
  const size_t n_in = op.inputs.size();
  if (!dyn || dyn->inputs.size() <= n_in) return nullptr;
  // The value of attribute `name`: the argument's constant, else the preset one, else the default.
  auto value_of = [&](const std::string& name, NodePtr* node) -> std::optional<AttrValue> {
    const int j = op.attr_index(name);
    if (j < 0) return std::nullopt;
    if (n_in + j < args.size()) {
      *node = args[n_in + j];
      if (as_tensor((*node)->abstract())) return std::nullopt;
      ValuePtr v = constant_of((*node)->abstract());
      if (!v) return std::nullopt;
      if (v->kind() != ValueKind::kNone) return to_attr(v);
    }
    if (preset.values().size() == op.attrs.size() &&
        !std::holds_alternative<std::monostate>(preset.values()[j]))
      return preset.values()[j];
    return op.attrs[j].default_value;
  };
  std::vector<NodePtr> in(args.begin(), args.begin() + n_in);
  int64_t length = -1;  // of the first bound given as a tensor: an empty tuple means all ones
  for (size_t i = n_in; i < dyn->inputs.size(); ++i) {
    NodePtr node;
    if (value_of(dyn->inputs[i].name, &node) == std::nullopt && node &&
        as_tensor(node->abstract())) {
      const Shape& s = as_tensor(node->abstract())->shape();
      if (length < 0) length = s.empty() ? 1 : s[0];
    }
  }
  for (size_t i = n_in; i < dyn->inputs.size(); ++i) {
    NodePtr node;
    std::optional<AttrValue> v = value_of(dyn->inputs[i].name, &node);
    if (!v) {
      if (!node || !as_tensor(node->abstract())) return nullptr;
      in.push_back(node);
      continue;
    }
    std::vector<int64_t> vals;
    if (auto* ints = std::get_if<std::vector<int64_t>>(&*v))
      vals = *ints;
    else if (auto* one = std::get_if<int64_t>(&*v))
      vals = {*one};
    else
      return nullptr;
    if (vals.empty() && length > 0) vals.assign(length, 1);
    Tensor t = Tensor::empty({static_cast<int64_t>(vals.size())}, DType::int64);
    std::copy(vals.begin(), vals.end(), t.data<int64_t>());
    in.push_back(e.constant(ctx, tensor_value(t)));
  }
  std::map<std::string, AttrValue> named;
  for (const AttrDef& d : dyn->attrs) {
    NodePtr node;
    std::optional<AttrValue> v = value_of(d.name, &node);
    if (!v) return nullptr;
    if (!std::holds_alternative<std::monostate>(*v)) named[d.name] = *v;
  }
  Attrs attrs;
  try {
    attrs = make_attrs(*dyn, named);
  } catch (...) {
    rethrow_with(where(loc));
  }
  return eval_op_call(e, ctx, OpValue(dyn, attrs), in, loc);
}
}  // namespace

NodePtr eval_op_call(Engine& e, Context* ctx, const OpValue& opv, const std::vector<NodePtr>& args,
                     const SourceLoc& loc) {
  const OpDef& op = opv.op();
  const size_t n_in = op.inputs.size(), n_attr = op.attrs.size();
  const bool variadic = n_in > 0 && op.inputs.back().variadic;
  for (const NodePtr& a : args)  // an input that raises first: the op is never computed
    if (is_raises(a->abstract())) return a;
  for (const NodePtr& a : args)
    if (has_pending(a->abstract())) {
      std::vector<NodePtr> in{e.constant(ctx, op_value(&op, opv.attrs()))};
      in.insert(in.end(), args.begin(), args.end());
      return e.emit(ctx, in, pending(), loc);
    }

  // An operator on two Python scalars the parser could not tell from tensors (an item of a tuple
  // attribute, a call's result): Python scalar arithmetic, as eagerly.
  if (args.size() == 2 && as_scalar(args[0]->abstract()) && as_scalar(args[1]->abstract())) {
    const std::optional<Prim> scalar = scalar_prim(op.py_operator);
    const ValueKind k0 = as_scalar(args[0]->abstract())->type(),
                    k1 = as_scalar(args[1]->abstract())->type();
    auto numeric = [](ValueKind k) {
      return k == ValueKind::kInt || k == ValueKind::kFloat || k == ValueKind::kBool;
    };
    if (scalar && numeric(k0) && numeric(k1)) return eval_prim_call(e, ctx, *scalar, args, loc);
  }

  // == and != between compile-time values that are not both numbers (x.dtype == mycel.float32,
  // x.shape == (2, 3), a str against None): Python's equality, folded.
  const PyOperator py = op.py_operator;
  if ((py == PyOperator::kEq || py == PyOperator::kNe) && args.size() == 2 &&
      !as_tensor(args[0]->abstract()) && !as_tensor(args[1]->abstract()))
    if (ValuePtr x = constant_of(args[0]->abstract()), y = constant_of(args[1]->abstract()); x && y)
      return e.constant(ctx, boolean(python_equal(*x, *y) == (py == PyOperator::kEq)));

  // Python's tuple + tuple (a tuple built up in an unrolled loop): concatenation.
  if (py == PyOperator::kAdd && args.size() == 2 && as_tuple(args[0]->abstract()) &&
      as_tuple(args[1]->abstract()) && !dynamic_cast<const DictAbs*>(args[0]->abstract().get()))
    return eval_prim_call(
        e, ctx, Prim::kUnpackCall,
        {e.constant(ctx, prim_value(as_tuple(args[0]->abstract())->is_list() ? Prim::kMakeList
                                                                             : Prim::kMakeTuple)),
         args[0], args[1]},
        loc);

  // Python's tuple * int and int * tuple with the int known at compile time (DropPath's
  // `(1,) * (x.ndim - 1)`): the tuple repeated.
  if (py == PyOperator::kMul && args.size() == 2) {
    const int t = as_tuple(args[0]->abstract()) ? 0 : as_tuple(args[1]->abstract()) ? 1 : -1;
    ValuePtr n = t >= 0 ? constant_of(args[1 - t]->abstract()) : nullptr;
    if (n && n->kind() == ValueKind::kInt &&
        !dynamic_cast<const DictAbs*>(args[t]->abstract().get())) {
      const int64_t k = static_cast<const IntValue&>(*n).value();
      const size_t len = as_tuple(args[t]->abstract())->items().size();
      if (k > 0 && len > 0 && static_cast<uint64_t>(k) > (uint64_t{1} << 20) / len)
        MYCEL_THROW(ValueError, "[mul] repeating a tuple of ", len, " items ", k,
                    " times makes more than 2**20 items", where(loc));
      std::vector<NodePtr> in{
          e.constant(ctx, prim_value(as_tuple(args[t]->abstract())->is_list() ? Prim::kMakeList
                                                                              : Prim::kMakeTuple))};
      for (int64_t i = 0; i < k; ++i) in.push_back(args[t]);
      return eval_prim_call(e, ctx, Prim::kUnpackCall, in, loc);
    }
  }

  // t[i] and t[a:b:c] on a tuple the parser could not tell from a tensor (a call's result).
  if (py == PyOperator::kGetItem && args.size() == 9 && as_tuple(args[0]->abstract()) &&
      !dynamic_cast<const DictAbs*>(args[0]->abstract().get()))
    return tuple_subscript(e, ctx, args, loc);

  if (op.fill.on && n_in == 0 && args.size() == n_attr &&
      !constant_of(args[op.attr_index("shape")]->abstract()))
    if (NodePtr n = dynamic_fill(e, ctx, op, args, loc)) return n;

  // Attributes: fold the constant arguments (or keep the callee's when already resolved).
  Attrs attrs = opv.attrs();
  // Attributes may trail the inputs positionally, the last ones left out for their defaults (an
  // op passed as a value and called reduce(x, (1,)), or P.ReduceSum()(*(x, axis))).
  if (n_attr > 0 && args.size() > n_in && args.size() <= n_in + n_attr) {
    std::vector<AttrValue> given(n_attr);
    // the left-out ones: the callee's (a Primitive's preset values), else the defaults
    if (attrs.values().size() == n_attr) given = attrs.values();
    for (size_t j = 0; j < args.size() - n_in; ++j) {
      AbstractPtr a = args[n_in + j]->abstract();
      if (op.attrs[j].name == op.dynamic_shape_attr && !constant_of(a))
        if (ValuePtr shape = reshape_dynamic_shape(args[0], args[n_in + j], loc))
          a = abstract_of_value(shape);
      ValuePtr v = constant_of(a);
      if (!v)
        if (NodePtr n = dynamic_attr_variant(e, ctx, op, opv.attrs(), args, loc)) return n;
      if (!v)
        MYCEL_THROW(
            TypeError, "[", op.name, "] attribute '", op.attrs[j].name,
            "' must be a compile-time constant in graph mode, got a value known only at run "
            "time (",
            a->repr(), ")", where(loc));
      auto av = to_attr(v);
      if (!av)
        MYCEL_THROW(TypeError, "[", op.name, "] attribute '", op.attrs[j].name, "' expects ",
                    attr_kind_name(op.attrs[j].kind), ", got ", v->repr(), where(loc));
      given[j] = std::move(*av);
    }
    try {
      attrs = make_attrs(op, std::move(given));
    } catch (...) {
      rethrow_with(where(loc));
    }
  } else if (args.size() != n_in) {
    MYCEL_THROW(TypeError, "[", op.name, "] expects ", n_in, " inputs and ", n_attr,
                " attributes in graph IR, got ", args.size(), " arguments", where(loc));
  }

  // Flatten the inputs (a variadic input is one tuple node) into entries.
  struct Entry {
    NodePtr node;
    AbstractPtr abs;
    size_t def;  // index into op.inputs
  };
  std::vector<Entry> flat;
  for (size_t i = 0; i < n_in; ++i) {
    const NodePtr& n = args[i];
    if (variadic && i + 1 == n_in) {
      auto* t = as_tuple(n->abstract());
      if (!t)
        MYCEL_THROW(TypeError, "[", op.name, "] input '", op.inputs[i].name,
                    "' must be a tuple or list of tensors, got ", n->abstract()->repr(),
                    where(loc));
      Apply* mt = as_apply(n);
      bool literal = mt && (is_prim_call(n, Prim::kMakeTuple) || is_prim_call(n, Prim::kMakeList));
      for (size_t k = 0; k < t->items().size(); ++k) {
        NodePtr item = literal ? mt->arg(k)
                               : e.emit(ctx,
                                        {e.constant(ctx, prim_value(Prim::kTupleGetItem)), n,
                                         e.constant(ctx, integer(static_cast<int64_t>(k)))},
                                        t->items()[k], loc);
        flat.push_back({item, t->items()[k], i});
      }
    } else {
      flat.push_back({n, n->abstract(), i});
    }
  }

  // Classify, and apply the weak-scalar rule exactly as eager dispatch does.
  bool have_base = false, have_scalar = false;
  DType base = DType::bool_;
  for (Entry& en : flat) {
    const InputDef& d = op.inputs[en.def];
    if (en.abs->kind() == AbstractKind::kNone) {
      if (!d.optional || d.variadic)
        MYCEL_THROW(TypeError, "[", op.name, "] input '", d.name, "' must be a tensor, got None",
                    where(loc));
      en.node = nullptr;
    } else if (auto* t = as_tensor(en.abs)) {
      base = have_base ? promote_types(base, t->dtype()) : t->dtype();
      have_base = true;
    } else if (is_weak_scalar(en.abs)) {
      have_scalar = true;
    } else {
      MYCEL_THROW(TypeError, "[", op.name, "] input '", d.name, "' expects a tensor, got ",
                  en.abs->repr(), where(loc));
    }
  }
  const OpDef& cast = Registry::get().at("cast");
  auto emit_cast = [&](Entry& en, DType to) {
    auto* t = as_tensor(en.abs);
    en.abs = tensor_abs(t->shape(), to);
    en.node = e.emit(
        ctx,
        {e.constant(ctx, op_value(&cast, make_attrs(cast, std::map<std::string, AttrValue>{{"dtype",
                                                                                            to}}))),
         en.node},
        en.abs, loc);
  };
  DType common = base;
  bool have_common = have_base;
  for (Entry& en : flat) {
    if (!en.node || !is_weak_scalar(en.abs)) continue;
    DType sd = weak_scalar_dtype(as_scalar(en.abs)->type(), have_base, base);
    en.abs = tensor_abs({}, sd);
    en.node = e.emit(ctx,
                     {e.constant(ctx, prim_value(Prim::kScalarToTensor)), en.node,
                      e.constant(ctx, dtype_value(sd))},
                     en.abs, loc);
    if (!have_common || (is_floating(sd) && !is_floating(common)) ||
        (is_integral(sd) && is_bool(common)))
      common = sd;
    have_common = true;
  }
  if (op.promote_inputs) {
    // With scalars eager casts to `common`; without, call_op promotes all inputs to one dtype.
    bool first = true;
    DType target = common;
    if (!have_scalar)
      for (const Entry& en : flat)
        if (en.node) {
          DType t = as_tensor(en.abs)->dtype();
          target = first ? t : promote_types(target, t);
          first = false;
        }
    for (Entry& en : flat)
      if (en.node && as_tensor(en.abs)->dtype() != target) emit_cast(en, target);
  }
  if (!op.dtypes.empty() && static_cast<size_t>(op.dtype_input) < flat.size()) {
    const Entry& en = flat[op.dtype_input];
    if (en.node && !op.supports(as_tensor(en.abs)->dtype())) {
      std::string list;
      for (DType t : op.dtypes) list += (list.empty() ? "" : ", ") + std::string(dtype_name(t));
      MYCEL_THROW(TypeError, "[", op.name, "] input '", op.inputs[en.def].name,
                  "' has unsupported dtype ", dtype_name(as_tensor(en.abs)->dtype()),
                  "; supported: ", list, where(loc));
    }
  }

  // Output abstracts from the op's infer (twice when dims are dynamic).
  bool dynamic = false;
  std::vector<const Shape*> in_shapes;
  for (const Entry& en : flat)
    if (en.node) {
      dynamic |= as_tensor(en.abs)->is_dynamic();
      in_shapes.push_back(&as_tensor(en.abs)->shape());
    }
  const Placeholders ph = dynamic ? placeholders_for(in_shapes) : kPlaceholders[0];
  auto run_infer = [&](int64_t placeholder) {
    std::vector<TensorMeta> metas(flat.size());
    std::vector<const TensorMeta*> ptrs(flat.size(), nullptr);
    for (size_t i = 0; i < flat.size(); ++i)
      if (flat[i].node) {
        auto* t = as_tensor(flat[i].abs);
        metas[i] = {t->shape(), t->dtype()};
        for (int64_t& d : metas[i].shape)
          if (d == kDynamic) d = placeholder;
        ptrs[i] = &metas[i];
      }
    if (dynamic && !op.dynamic_shape_attr.empty() && ptrs[0])  // reshape's element count
      fit_reshape_count(metas[0].shape, as_tensor(flat[0].abs)->shape(),
                        attrs.get_ints(op.dynamic_shape_attr), placeholder);
    // Size checks between dims (broadcasting, dims_agree) let the placeholder match any size.
    DynamicPlaceholderScope scope(dynamic ? placeholder : 0);
    return infer_allowing_data_dependent(op, InferContext{op, ptrs, attrs});
  };
  std::vector<TensorMeta> outs, outs_b;
  int64_t running = ph.a;
  try {
    outs = run_infer(ph.a);
    running = ph.b;
    if (dynamic) outs_b = run_infer(ph.b);
  } catch (...) {
    rethrow_with(where(loc), dynamic ? std::to_string(running) : "");
  }
  std::vector<AbstractPtr> out_abs;
  for (size_t k = 0; k < outs.size(); ++k) {
    Shape s = outs[k].shape;
    if (dynamic) {
      if (outs_b[k].shape.size() != s.size())
        MYCEL_THROW(NotSupported, "[", op.name,
                    "] the rank of its output depends on a dynamic dimension", where(loc));
      for (size_t d = 0; d < s.size(); ++d)
        if (s[d] != outs_b[k].shape[d]) s[d] = kDynamic;
    }
    out_abs.push_back(tensor_abs(s, outs[k].dtype));
  }
  AbstractPtr result = out_abs.size() == 1 ? out_abs[0] : std::make_shared<AbstractTuple>(out_abs);

  // The resolved call: the op with its attributes, then the (converted) inputs.
  std::vector<NodePtr> inputs{e.constant(ctx, op_value(&op, attrs))};
  size_t f = 0;
  for (size_t i = 0; i < n_in; ++i) {
    if (variadic && i + 1 == n_in) {
      std::vector<NodePtr> items{e.constant(ctx, prim_value(Prim::kMakeTuple))};
      std::vector<AbstractPtr> item_abs;
      bool changed = false;
      auto* t = as_tuple(args[i]->abstract());
      for (size_t k = 0; k < t->items().size(); ++k, ++f) {
        items.push_back(flat[f].node);
        item_abs.push_back(flat[f].abs);
        changed |= !flat[f].abs->equals(*t->items()[k]) || !is_prim_call(args[i], Prim::kMakeTuple);
      }
      inputs.push_back(changed ? e.emit(ctx, items, std::make_shared<AbstractTuple>(item_abs), loc)
                               : args[i]);
    } else {
      inputs.push_back(flat[f].node ? flat[f].node
                                    : args[i]);  // absent optional: its None constant
      ++f;
    }
  }
  NodePtr out = e.emit(ctx, inputs, result, loc);
  if (op.tuple_output && out_abs.size() == 1)  // split into one part: still a tuple
    return e.emit(ctx, {e.constant(ctx, prim_value(Prim::kMakeTuple)), out},
                  std::make_shared<AbstractTuple>(out_abs), loc);
  return out;
}

}  // namespace mycel::analysis::detail

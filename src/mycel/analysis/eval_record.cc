// Records (objects of a class built at run time in graph mode): construction, field reads,
// methods and properties (parsed on demand through the record hooks), Python operators on
// records (their dunder methods), and the shape/ndim/dtype of a record (its own attributes).
#include <map>

#include "mycel/analysis/engine.h"
#include "mycel/analysis/records.h"
#include "mycel/core/error.h"
#include "mycel/ir/raised.h"

namespace mycel::analysis {

namespace {
RecordHooks& hooks_slot() {
  static RecordHooks h;
  return h;
}
}  // namespace

void set_record_hooks(RecordHooks hooks) { hooks_slot() = std::move(hooks); }
const RecordHooks& record_hooks() { return hooks_slot(); }

}  // namespace mycel::analysis

namespace mycel::analysis::detail {

using namespace ir;

namespace {
constexpr const char* kMakeRecord = "py:mycel.common.graph_syntax.make_record";
constexpr const char* kRecordAttr = "py:mycel.common.graph_syntax.record_attr";
constexpr const char* kRecordMethod = "py:mycel.common.graph_syntax.record_method";
constexpr const char* kCallMethod = "py:mycel.common.graph_syntax.call_method";

std::string str_of(const AbstractPtr& a) {
  ValuePtr v = constant_of(a);
  return v && v->kind() == ValueKind::kStr ? static_cast<const StrValue&>(*v).value() : "";
}

std::vector<std::string> strs_of(const AbstractPtr& a, const SourceLoc& loc) {
  ValuePtr v = constant_of(a);
  if (!v || v->kind() != ValueKind::kTuple)
    MYCEL_THROW(TypeError, "[record] expected a constant tuple of names, got ", a->repr(),
                where(loc));
  std::vector<std::string> out;
  for (const auto& s : static_cast<const SequenceValue&>(*v).items()) {
    if (s->kind() != ValueKind::kStr)
      MYCEL_THROW(TypeError, "[record] names must be str, got ", s->repr(), where(loc));
    out.push_back(static_cast<const StrValue&>(*s).value());
  }
  return out;
}

RecordMember member_of(const RecordAbs& r, const std::string& name, const SourceLoc& loc) {
  const RecordHooks& h = record_hooks();
  if (!h.member)
    MYCEL_THROW(NotSupported, "[record] ", r.class_name(), ".", name,
                ": no record hook registered (import mycel)", where(loc));
  RecordMember m = h.member(*r.cls(), name);
  if (m.kind == RecordMember::kMissing) {
    if (m.value) throw RaisedError(m.value, loc);
    MYCEL_THROW(TypeError, "[record] '", r.class_name(), "' has no field or method '", name, "'",
                where(loc));
  }
  return m;
}

// Python's binary operators and their reflected forms, for records (the op the parser wrote).
const std::map<std::string, std::pair<const char*, const char*>>& dunders() {
  static const std::map<std::string, std::pair<const char*, const char*>> m = {
      {"add", {"__add__", "__radd__"}},          {"sub", {"__sub__", "__rsub__"}},
      {"mul", {"__mul__", "__rmul__"}},          {"div", {"__truediv__", "__rtruediv__"}},
      {"matmul", {"__matmul__", "__rmatmul__"}}, {"neg", {"__neg__", nullptr}},
  };
  return m;
}
}  // namespace

// A record class's method or getter: a top-level graph of its own (parsed on demand), whose
// clone nests in the outermost context being analysed, so the values it is handed (a Cell held
// in a field, whose graph nests in the compiled Cell's) stay in scope.
NodePtr Engine::method_node(Context* ctx, FuncGraph* g) {
  Context* root = ctx;
  while (root && root->env) root = root->env;
  auto node = std::make_shared<Constant>(nullptr, graph_value(g));
  auto site = std::make_shared<Site>();
  site->graph = g;
  site->env = root;
  sites_[node.get()] = site;
  site_nodes_.push_back(node);
  node->set_abstract(std::make_shared<FnAbs>(graph_value(g), root, site));
  return node;
}

NodePtr Engine::record_field(Context* ctx, const NodePtr& rec, size_t k, const SourceLoc& loc) {
  const RecordAbs& r = *as_record(rec->abstract());
  if (r.statics()[k]) return constant(ctx, r.statics()[k]);
  return eval_prim_call(*this, ctx, Prim::kTupleGetItem,
                        {rec, constant(ctx, integer(static_cast<int64_t>(r.item_of(k))))}, loc);
}

NodePtr Engine::record_attr(Context* ctx, const NodePtr& rec, const std::string& name,
                            const SourceLoc& loc) {
  const RecordAbs& r = *as_record(rec->abstract());
  if (int k = r.field(name); k >= 0) return record_field(ctx, rec, static_cast<size_t>(k), loc);
  RecordMember m = member_of(r, name, loc);
  switch (m.kind) {
    case RecordMember::kMethod:  // a bound method: the method with self bound
      return eval_prim_call(*this, ctx, Prim::kPartial, {method_node(ctx, m.graph), rec}, loc);
    case RecordMember::kProperty:
      return call(ctx, method_node(ctx, m.graph), {rec}, loc);
    case RecordMember::kFunction:
      return method_node(ctx, m.graph);
    default:
      return constant(ctx, m.value);
  }
}

NodePtr Engine::record_method(Context* ctx, const NodePtr& rec, const std::string& name,
                              const std::vector<std::string>& keywords,
                              const std::vector<NodePtr>& args, const SourceLoc& loc) {
  const RecordAbs& r = *as_record(rec->abstract());
  if (r.field(name) >= 0)  // a field holding a function (a Cell, a graph) is called as it is
    return call(ctx, record_field(ctx, rec, static_cast<size_t>(r.field(name)), loc), args, loc);
  RecordMember m = member_of(r, name, loc);
  if (m.kind != RecordMember::kMethod && m.kind != RecordMember::kFunction) {
    NodePtr f = record_attr(ctx, rec, name, loc);
    if (!keywords.empty())
      MYCEL_THROW(TypeError, "[record] ", r.class_name(), ".", name,
                  ": keyword arguments need a method", where(loc));
    return call(ctx, f, args, loc);
  }
  // Bind the arguments by the method's parameters: self, the positional ones, the keywords (the
  // last keywords.size() of args), then the compile-time defaults.
  FuncGraph* g = m.graph;
  const auto& params = g->parameters();
  const std::string qual = r.class_name() + "." + name;
  std::vector<NodePtr> full(params.size());
  size_t next = 0;
  if (m.kind == RecordMember::kMethod) {
    if (params.empty())
      MYCEL_THROW(TypeError, "[record] method ", qual, " has no self parameter", where(loc));
    full[next++] = rec;
  }
  const size_t n_pos = args.size() - keywords.size();
  for (size_t i = 0; i < n_pos; ++i, ++next) {
    if (next >= params.size())
      MYCEL_THROW(TypeError, "[record] ", qual, "() takes ", params.size(), " arguments",
                  m.kind == RecordMember::kMethod ? " (self included)" : "", ", got more",
                  where(loc));
    full[next] = args[i];
  }
  for (size_t k = 0; k < keywords.size(); ++k) {
    size_t i = 0;
    while (i < params.size() && as_parameter(params[i])->name() != keywords[k]) ++i;
    if (i == params.size() || (m.kind == RecordMember::kMethod && i == 0))
      MYCEL_THROW(TypeError, "[record] ", qual, "() got an unexpected keyword argument '",
                  keywords[k], "'", where(loc));
    if (full[i])
      MYCEL_THROW(TypeError, "[record] ", qual, "() got multiple values for argument '",
                  keywords[k], "'", where(loc));
    full[i] = args[n_pos + k];
  }
  const auto& defaults = g->default_values();
  for (size_t i = 0; i < full.size(); ++i) {
    if (full[i]) continue;
    if (i < defaults.size() && defaults[i]) {
      full[i] = constant(ctx, defaults[i]);
      continue;
    }
    MYCEL_THROW(TypeError, "[record] ", qual, "() missing required argument '",
                as_parameter(params[i])->name(), "'", where(loc));
  }
  return call(ctx, method_node(ctx, g), full, loc, /*bound=*/true);
}

NodePtr Engine::record_call(Context* ctx, const Value& callee, const std::vector<NodePtr>& args,
                            const SourceLoc& loc) {
  const std::string name = callee.repr();
  if (name == kMakeRecord) {  // make_record(cls, names, *fields)
    if (args.size() < 2)
      MYCEL_THROW(TypeError, "[make_record] takes a class and field names", where(loc));
    Constant* cls = as_constant(args[0]);
    std::vector<std::string> names = strs_of(args[1]->abstract(), loc);
    if (!cls || names.size() != args.size() - 2)
      MYCEL_THROW(TypeError, "[make_record] needs a constant class and one value per field",
                  where(loc));
    std::vector<ValuePtr> statics;
    std::vector<AbstractPtr> items;
    std::vector<NodePtr> in{constant(ctx, prim_value(Prim::kMakeTuple))};
    for (size_t i = 2; i < args.size(); ++i) {
      const AbstractPtr& a = args[i]->abstract();
      ValuePtr v = constant_of(a);
      if (!v)
        if (auto* o = dynamic_cast<const OpaqueAbs*>(a.get())) v = o->value();
      statics.push_back(v);
      if (!v) {
        items.push_back(a);
        in.push_back(args[i]);
      }
    }
    return emit(ctx, std::move(in),
                std::make_shared<RecordAbs>(cls->value(), std::move(names), std::move(statics),
                                            std::move(items)),
                loc);
  }
  if (name == kRecordAttr && args.size() == 3) {  // record_attr(x, name, thunk or None)
    const std::string attr = str_of(args[1]->abstract());
    if (as_record(args[0]->abstract())) return record_attr(ctx, args[0], attr, loc);
    if (args[2]->abstract()->kind() != AbstractKind::kNone) return call(ctx, args[2], {}, loc);
    if (constant_of(args[0]->abstract()) || as_constant(args[0])) return nullptr;  // Python's
    const std::string msg = "attribute '" + attr + "' of " + args[0]->abstract()->repr() +
                            " is not supported in graph mode; tensors offer .shape, .ndim, "
                            ".dtype, .size, .T and their methods, records (CSRTensor, "
                            "@jit_class objects) their fields, properties and methods";
    if (record_hooks().attribute_error) throw RaisedError(record_hooks().attribute_error(msg), loc);
    MYCEL_THROW(NotSupported, "[specialize] ", msg, where(loc));
  }
  const bool method = name == kRecordMethod, py_method = name == kCallMethod;
  if ((method && args.size() >= 4) || (py_method && args.size() >= 3)) {
    // record_method(x, name, keywords, thunk, *args) / call_method(x, name, keywords, *args)
    const size_t first = method ? 4 : 3;
    if (!as_record(args[0]->abstract())) {
      if (method) return call(ctx, args[3], {}, loc);  // not a record: the Tensor method
      return nullptr;
    }
    std::vector<std::string> keywords = strs_of(args[2]->abstract(), loc);
    std::vector<NodePtr> rest(args.begin() + first, args.end());
    return record_method(ctx, args[0], str_of(args[1]->abstract()), keywords, rest, loc);
  }
  return nullptr;
}

NodePtr Engine::record_op(Context* ctx, const OpDef& op, const std::vector<NodePtr>& args,
                          const SourceLoc& loc) {
  const size_t n_in = std::min(op.inputs.size(), args.size());
  int at = -1;
  for (size_t i = 0; i < n_in && at < 0; ++i)
    if (as_record(args[i]->abstract())) at = static_cast<int>(i);
  if (at < 0) return nullptr;
  const RecordAbs& r = *as_record(args[at]->abstract());
  auto it = dunders().find(op.name);
  if (it != dunders().end()) {
    if (n_in == 1) return record_method(ctx, args[0], it->second.first, {}, {}, loc);
    if (n_in == 2) {
      const char* m = at == 0 ? it->second.first : it->second.second;
      RecordMember mm = member_of(r, m, loc);  // raises the AttributeError when missing
      (void)mm;
      return record_method(ctx, args[at], m, {}, {args[1 - at]}, loc);
    }
  }
  MYCEL_THROW(TypeError, "[", op.name, "] argument ", at, " is a ", r.class_name(),
              " (a record), not a tensor; call its methods (e.g. to_dense()) instead", where(loc));
}

NodePtr Engine::record_prim(Context* ctx, Prim p, const std::vector<NodePtr>& args,
                            const SourceLoc& loc) {
  if ((p != Prim::kShape && p != Prim::kRank && p != Prim::kDTypeOf) || args.size() != 1 ||
      !as_record(args[0]->abstract()))
    return nullptr;
  const char* attr = p == Prim::kShape ? "shape" : p == Prim::kRank ? "ndim" : "dtype";
  return record_attr(ctx, args[0], attr, loc);
}

}  // namespace mycel::analysis::detail

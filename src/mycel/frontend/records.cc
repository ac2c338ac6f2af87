// Records: objects of a class that compiled code builds at run time (@jit_class classes and
// MindSpore's sparse containers). cls(args) calls its __init__, parsed so that `self.f = v`
// writes a local and the function returns make_record(cls, names, fields...); attributes and
// methods of values only analysis knows go through record_attr / record_method, which analysis
// resolves by the value's abstract (a record's field or method, else the Tensor meaning).
#include <nanobind/stl/string.h>

#include <algorithm>
#include <tuple>

#include "mycel/frontend/parser.h"

namespace mycel::frontend {

namespace {
nb::object graph_syntax(const char* name) {
  return nb::module_::import_("mycel.common.graph_syntax").attr(name);
}
}  // namespace

void Parser::begin_record_init(Scope* s, Block* entry, nb::handle def, nb::handle self_arg) {
  s->record_self = str_attr(self_arg, "arg");
  write(entry, s->record_self, unbound_);  // only self.f is readable: the record is not built yet
  s->locals.insert(s->record_self);
  // The fields: every self.f the body assigns, in source order.
  std::vector<std::tuple<int, int, std::string>> found;
  nb::object store = ast_.attr("Store");
  for (nb::handle n : ast_.attr("walk")(def)) {
    if (ast_type(n) != "Attribute" || !nb::isinstance(n.attr("ctx"), store)) continue;
    nb::handle v = n.attr("value");
    if (ast_type(v) != "Name" || str_attr(v, "id") != s->record_self) continue;
    found.emplace_back(nb::cast<int>(n.attr("lineno")), nb::cast<int>(n.attr("col_offset")),
                       str_attr(n, "attr"));
  }
  std::sort(found.begin(), found.end());
  for (auto& [line, col, name] : found) {
    (void)line;
    (void)col;
    if (std::find(s->record_fields.begin(), s->record_fields.end(), name) == s->record_fields.end())
      s->record_fields.push_back(name);
    s->locals.insert(s->record_self + "." + name);
    s->assigned.insert(s->record_self + "." + name);  // carried through branches and loops
  }
}

namespace {
// A value the parser knows to be a tensor, never a record: an op's result, a tensor constant, a
// weight. Its methods need no choice at analysis.
bool surely_tensor(const NodePtr& n) {
  if (ir::Constant* c = ir::as_constant(n)) return c->value()->kind() == ir::ValueKind::kTensor;
  if (n->is_parameter()) return static_cast<const ir::Parameter&>(*n).is_weight();
  auto* a = ir::as_apply(n);
  ir::Constant* callee = a ? ir::as_constant(a->callee()) : nullptr;
  return callee && callee->value()->kind() == ir::ValueKind::kOp &&
         !static_cast<const ir::OpValue&>(*callee->value()).op().tuple_output;
}
}  // namespace

NodePtr Parser::record_value(Block* b, const SourceLoc& loc) {
  Scope* s = b->scope;
  std::vector<ir::ValuePtr> names;
  std::vector<NodePtr> in{constant(py_object(graph_syntax("make_record"))),
                          constant(py_object(s->record_class))};
  std::vector<NodePtr> fields;
  for (const std::string& f : s->record_fields) {
    names.push_back(ir::string(f));
    NodePtr v;
    try {
      v = read(b, s->record_self + "." + f, loc);
    } catch (const FrontendError&) {
      error(loc, "AttributeError",
            "'" + str_attr(s->record_class, "__name__") + "'.__init__ does not set field '" + f +
                "' on every path; graph mode needs every field set before __init__ returns");
    }
    if (v == unbound_)
      error(loc, "AttributeError",
            "'" + str_attr(s->record_class, "__name__") + "'.__init__ does not set field '" + f +
                "' on every path; graph mode needs every field set before __init__ returns");
    fields.push_back(v);
  }
  in.push_back(constant(ir::tuple(std::move(names))));
  in.insert(in.end(), fields.begin(), fields.end());
  return apply(b, std::move(in), loc);
}

NodePtr Parser::record_construct(Block* b, nb::handle cls, std::vector<NodePtr> args,
                                 std::vector<std::pair<std::string, NodePtr>> kw,
                                 const SourceLoc& loc) {
  // A class may give graph mode its own __init__ (CSRTensor: the eager one reads index values).
  nb::object init = nb::getattr(cls, "_mycel_graph_init", nb::none());
  if (init.is_none()) init = cls.attr("__init__");
  if (!PyFunction_Check(init.ptr())) {  // object.__init__: a record without fields
    if (!args.empty() || !kw.empty())
      error(loc, "TypeError", str_attr(cls, "__name__") + "() takes no arguments");
    return apply(b,
                 {constant(py_object(graph_syntax("make_record"))), constant(py_object(cls)),
                  constant(ir::tuple({}))},
                 loc);
  }
  auto key = std::make_pair(init.ptr(), cls.ptr());
  FuncGraph* g = nullptr;
  if (auto it = fn_cache_.find(key); it != fn_cache_.end()) {
    g = it->second;
  } else {
    next_record_class_ = nb::borrow(cls);
    keep_alive_.push_back(nb::borrow(cls));
    try {
      g = parse_function(init, nb::handle(), str_attr(cls, "__name__") + ".__init__", top_, false,
                         loc);
    } catch (...) {
      next_record_class_ = nb::object();
      throw;
    }
    fn_cache_[key] = g;
  }
  return call_value(b, constant(ir::graph_value(g)), std::move(args), std::move(kw), loc);
}

NodePtr Parser::value_attribute(Block* b, NodePtr base, const std::string& attr, NodePtr thunk,
                                const SourceLoc& loc) {
  return apply(b,
               {constant(py_object(graph_syntax("record_attr"))), std::move(base),
                constant(ir::string(attr)), std::move(thunk)},
               loc);
}

NodePtr Parser::tensor_method(Block* b, NodePtr self, const std::string& m,
                              std::vector<NodePtr> args,
                              std::vector<std::pair<std::string, NodePtr>> kw,
                              const SourceLoc& loc) {
  // Only names that some record class defines need the choice at analysis (others reach a
  // record through call_method, which analysis dispatches as well).
  nb::object names = graph_syntax("record_method_names")();
  if (surely_tensor(self) || PySequence_Contains(names.ptr(), nb::str(m.c_str()).ptr()) != 1)
    return plain_tensor_method(b, std::move(self), m, std::move(args), std::move(kw), loc);
  bool seq = false, scalar = false;  // what the parser knows of the Tensor method's result
  NodePtr t = thunk(b, m, [&](Block* tb) {
    NodePtr r = plain_tensor_method(tb, self, m, args, kw, loc);
    seq = seq_nodes.count(r.get()) > 0;
    scalar = scalar_nodes.count(r.get()) > 0;
    return r;
  });
  std::vector<ir::ValuePtr> keys;
  std::vector<NodePtr> in{constant(py_object(graph_syntax("record_method"))), self,
                          constant(ir::string(m))};
  std::vector<NodePtr> values;
  for (auto& [k, v] : kw) {
    keys.push_back(ir::string(k));
    values.push_back(v);
  }
  in.push_back(constant(ir::tuple(std::move(keys))));
  in.push_back(t);
  in.insert(in.end(), args.begin(), args.end());
  in.insert(in.end(), values.begin(), values.end());
  NodePtr r = apply(b, std::move(in), loc);
  if (seq) seq_nodes.insert(r.get());  // len(x.split(2)) counts the tuple, as for a tensor
  if (scalar) scalar_nodes.insert(r.get());
  return r;
}

}  // namespace mycel::frontend

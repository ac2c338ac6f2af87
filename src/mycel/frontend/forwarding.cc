// Forwarding `f(*args, **kwargs)`: a function that passes its own *args and **kwargs on (a
// wrapper Cell's `construct(self, *args, **kwargs): return self.fn(*args, **kwargs)`) is parsed
// once per call shape, the number of arguments *args collects and the keywords **kwargs collects,
// which every call site knows when it binds its arguments. In such a parse the forwarded tuple
// and dict have known items, so the call binds by name as any other call does. The first parse,
// made without a shape when the function is first named, gives its signature; its forwarding
// calls become an error raised only if that graph itself is ever analyzed.
//
// A call the parser cannot bind (its callee is known only to analysis) is bound by analysis
// (Engine::bind_positional) from what set_analysis_binding records on the graph.
#include "mycel/frontend/parser.h"

namespace mycel::frontend {

void Parser::set_analysis_binding(FuncGraph* g, const Signature& sig) {
  std::vector<ir::ValuePtr> dv(sig.names.size());
  for (size_t i = 0; i < sig.names.size(); ++i)
    if (ir::Constant* c = sig.defaults[i] ? ir::as_constant(sig.defaults[i]) : nullptr)
      dv[i] = c->value();
  g->set_default_values(std::move(dv));
  g->set_var_params({sig.n_positional, sig.vararg, sig.kwarg});
}

bool Parser::forwards_param(Block* b, nb::handle v, bool kwargs) const {
  const Scope* s = b->scope;
  const std::string& name = kwargs ? s->kwarg_name : s->vararg_name;
  // Only a function parsed from its Python object can be parsed again (a def nested in parsed
  // code is a closure over its parse), and only its own parameter, never rebound.
  return s->outer == nullptr && !name.empty() && ast_type(v) == "Name" &&
         str_attr(v, "id") == name && !s->assigned.count(name);
}

NodePtr Parser::forwarding_without_shape(Block* b, nb::handle call) {
  b->scope->wants_call_shape = true;
  static nb::handle raise_later =
      nb::object(nb::module_::import_("mycel.common.graph_syntax").attr("forwarding_without_call"))
          .release();
  const std::string message =
      "'" + b->scope->name +
      "' forwards its *args/**kwargs; in graph mode it must be called directly (each call's "
      "arguments decide what it forwards), not used as a value";
  SourceLoc loc = loc_of(call);
  return apply(b, {constant(py_object(raise_later)), constant(ir::string(message))}, loc);
}

std::vector<NodePtr> Parser::forwarded_args(Block* b, const NodePtr& args, const SourceLoc& loc) {
  std::vector<NodePtr> items;
  for (size_t i = 0; i < *b->scope->vararg_len; ++i)
    items.push_back(
        prim(b, Prim::kTupleGetItem, {args, constant(ir::integer(static_cast<int64_t>(i)))}, loc));
  return items;
}

std::vector<std::pair<std::string, NodePtr>> Parser::forwarded_kwargs(Block* b,
                                                                      const NodePtr& kwargs,
                                                                      const SourceLoc& loc) {
  std::vector<std::pair<std::string, NodePtr>> items;
  for (const std::string& k : *b->scope->kwarg_keys)
    items.emplace_back(k, prim(b, Prim::kDictGetItem, {kwargs, constant(ir::string(k))}, loc));
  return items;
}

FuncGraph* Parser::shaped_graph(FuncGraph* g, const Signature& sig, size_t n_args,
                                const std::vector<std::pair<std::string, NodePtr>>& kw,
                                const SourceLoc& loc) {
  auto it = forwarders_.find(g);
  if (it == forwarders_.end()) return g;
  CallShape shape;
  if (sig.vararg >= 0 && n_args > sig.n_positional) shape.vararg_len = n_args - sig.n_positional;
  for (const auto& [k, v] : kw) {  // the keywords bind_args gives **kwargs
    auto named = std::find(sig.names.begin(), sig.names.end(), k);
    if (sig.kwarg >= 0 &&
        (named == sig.names.end() || static_cast<int>(named - sig.names.begin()) == sig.kwarg))
      shape.kwarg_keys.push_back(k);
  }
  auto key = std::make_pair(static_cast<const FuncGraph*>(g), shape);
  if (auto s = shaped_.find(key); s != shaped_.end()) return s->second;
  const Forwarder f = it->second;
  // parse_function caches by (function, self): keep the first parse there, which names resolve to.
  auto cache_key = std::make_pair(f.fn.ptr(), f.self.ptr());
  FuncGraph* first = fn_cache_[cache_key];
  pending_shape_ = shape;
  FuncGraph* shaped = parse_function(f.fn, f.self, f.name, f.parent, false, loc);
  fn_cache_[cache_key] = first;
  if (f.self.is_valid() && nb::isinstance(f.self, cell_type_)) {  // as cell_graph does
    shaped->set_cell_label(cell_label(f.self));
    attach_bprop(shaped, f.self, f.name, loc);
  }
  shaped_[key] = shaped;
  return shaped;
}

}  // namespace mycel::frontend

// Name resolution the way Python does it (locals, enclosing functions, closure cells, globals,
// builtins) and the conversion of Python objects met on the way into IR nodes: Parameters become
// weight parameters of the top graph, Cells and user functions parsed graphs, plain values
// constants, and anything else a py:<name> constant for compile-time evaluation.
#include "mycel/frontend/parser.h"
#include "mycel/frontend/py_convert.h"

namespace mycel::frontend {

ir::ValuePtr py_object(nb::handle o) {
  std::string name;
  if (PyModule_Check(o.ptr())) {
    name = str_attr(o, "__name__");
  } else if (o.ptr() == Py_Ellipsis || PySlice_Check(o.ptr())) {
    name = nb::cast<std::string>(nb::repr(o));
  } else if (nb::hasattr(o, "__qualname__") && nb::isinstance<nb::str>(o.attr("__qualname__"))) {
    name = str_attr(o, "__qualname__");
    nb::object mod = nb::getattr(o, "__module__", nb::none());
    if (nb::isinstance<nb::str>(mod) && nb::cast<std::string>(mod) != "builtins")
      name = nb::cast<std::string>(mod) + "." + name;
  } else {
    name = nb::cast<std::string>(
               nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(o.ptr()))).attr("__name__")) +
           " object";
  }
  return std::make_shared<PyObjectValue>(nb::borrow(o), name);
}

const PyObjectValue* py_object_of(const NodePtr& n) {
  ir::Constant* c = ir::as_constant(n);
  if (!c || c->value()->kind() != ir::ValueKind::kExternal) return nullptr;
  return static_cast<const PyObjectValue*>(c->value().get());
}

NodePtr Parser::lookup(Block* b, const std::string& name, const SourceLoc& loc) {
  Scope* s = b->scope;
  // A local not bound on every path into here (a variable first assigned inside a loop): None.
  if (s->locals.count(name)) return constant(ir::none());
  for (Scope* sc = s; sc->outer; sc = sc->outer)
    if (sc->outer->locals.count(name)) return read(sc->def_block, name, loc);
  Scope* root = s;
  while (root->outer) root = root->outer;
  if (root->closure.contains(name.c_str())) return object_node(b, root->closure[name.c_str()], loc);
  if (root->globals.is_valid() && nb::cast<nb::dict>(root->globals).contains(name.c_str()))
    return object_node(b, nb::cast<nb::dict>(root->globals)[name.c_str()], loc);
  if (nb::hasattr(builtins_, name.c_str()))
    return object_node(b, builtins_.attr(name.c_str()), loc);
  error(loc, "NameError", "name '" + name + "' is not defined");
}

NodePtr Parser::weight(nb::handle param, const std::string& name) {
  auto it = weights_.find(param.ptr());
  if (it != weights_.end()) return it->second;
  NodePtr p = top_->add_parameter(name);
  static_cast<ir::Parameter*>(p.get())->bind(nb::cast<Tensor>(param));
  keep_alive_.push_back(nb::borrow(param));
  weights_[param.ptr()] = p;
  return p;
}

bool Parser::is_user_function(nb::handle fn) const {
  if (!PyFunction_Check(fn.ptr())) return false;
  nb::object mod = nb::getattr(fn, "__module__", nb::none());
  if (nb::isinstance<nb::str>(mod) && nb::cast<std::string>(mod).rfind("mycel.common", 0) == 0)
    return false;
  std::string file = nb::cast<std::string>(fn.attr("__code__").attr("co_filename"));
  for (const std::string& p : library_prefixes_)
    if (!p.empty() && file.rfind(p, 0) == 0)
      return false;  // numpy, the standard library: interpret
  return true;
}

const OpDef* Parser::op_of_function(nb::handle fn) const {
  auto it = op_funcs_.find(fn.ptr());
  return it == op_funcs_.end() ? nullptr : it->second;
}

bool Parser::op_handle_of(nb::handle obj, const OpDef** op, std::vector<AttrValue>* preset) const {
  nb::handle h = obj;
  nb::object bound;
  if (nb::isinstance(obj, prim_type_)) {
    bound = obj.attr("_bound");
    h = bound;
  }
  if (ast_type(h) != "OpHandle") return false;
  *op = &Registry::get().at(str_attr(h, "name"));
  preset->assign((*op)->attrs.size(), AttrValue{});
  nb::dict d = nb::cast<nb::dict>(h.attr("preset"));
  for (auto [k, v] : d) {
    int i = (*op)->attr_index(nb::cast<std::string>(k));
    if (i >= 0) (*preset)[i] = py::to_attr(**op, (*op)->attrs[i], v);
  }
  return true;
}

namespace {
// A parse error inside a called function or Cell gets the call site as a traceback frame,
// "  called from file:line: text", the format analysis uses for errors found later.
[[noreturn]] void rethrow_called_from(const FrontendError& e, const SourceLoc& loc,
                                      const std::string* cell = nullptr) {
  if (!loc.known() || (loc.file && *loc.file == e.file && loc.line == e.line)) throw e;
  throw FrontendError(
      e.kind,
      std::string(e.what()) + "\n  called from " + loc.line_str() + (cell ? "\n    " + *cell : ""),
      e.file, e.line, e.col, e.text);
}
}  // namespace

FuncGraph* Parser::function_graph(nb::handle fn, nb::handle self, const SourceLoc& loc) {
  auto key = std::make_pair(fn.ptr(), self.ptr());
  auto it = fn_cache_.find(key);
  if (it != fn_cache_.end()) return it->second;
  try {
    return parse_function(fn, self, str_attr(fn, "__name__"), top_, false, loc);
  } catch (const FrontendError& e) {
    rethrow_called_from(e, loc);
  }
}

FuncGraph* Parser::cell_graph(nb::handle cell, const SourceLoc& loc) {
  nb::object fn = nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(cell.ptr()))).attr("construct");
  auto key = std::make_pair(fn.ptr(), cell.ptr());
  auto it = fn_cache_.find(key);
  if (it != fn_cache_.end()) return it->second;
  std::string name = nb::cast<std::string>(
      nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(cell.ptr()))).attr("__name__"));
  FuncGraph* g = nullptr;
  try {
    g = parse_function(fn, cell, name, top_, false, loc);
  } catch (const FrontendError& e) {
    rethrow_called_from(e, loc, cell_label(cell).get());
  }
  g->set_cell_label(cell_label(cell));
  attach_bprop(g, cell, name, loc);
  return g;
}

void Parser::attach_bprop(FuncGraph* g, nb::handle cell, const std::string& name,
                          const SourceLoc& loc) {
  // A custom bprop(self, *inputs, out, dout) defined by the Cell's class (MindSpore's Cell.bprop).
  nb::object bprop = nb::getattr(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(cell.ptr()))),
                                 "bprop", nb::none());
  if (bprop.is_none() || !PyFunction_Check(bprop.ptr())) return;
  FuncGraph* b = parse_function(bprop, cell, name + "_bprop", top_, false, loc);
  size_t inputs = 0;
  for (const NodePtr& p : g->parameters())
    inputs += !static_cast<ir::Parameter*>(p.get())->is_weight();
  if (b->parameters().size() != inputs + 2)
    error(loc.known()               ? loc
          : b->parameters().empty() ? loc
                                    : b->parameters()[0]->loc(),
          "TypeError",
          name + ".bprop must take the inputs of construct plus out and dout (" +
              std::to_string(inputs + 2) + " arguments), it takes " +
              std::to_string(b->parameters().size()));
  g->set_bprop(b);
}

NodePtr Parser::cast_float(Block* b, NodePtr x, nb::handle dtype, const SourceLoc& loc) {
  if (!float_input_cast_.is_valid())
    float_input_cast_ = nb::module_::import_("mycel.nn.cell").attr("_cast_float_input");
  NodePtr helper = constant(ir::graph_value(function_graph(float_input_cast_, nb::handle(), loc)));
  return call_value(b, helper, {std::move(x), object_node(b, dtype, loc)}, {}, loc);
}

NodePtr Parser::cast_cell_weight(Block* b, nb::handle cell, nb::handle param, NodePtr node,
                                 const SourceLoc& loc) {
  nb::object dtype = nb::cast<nb::dict>(cell.attr("__dict__")).get("_float_dtype", nb::none());
  // Only trainable weights: buffers such as running statistics may be assigned, and an assign
  // needs the Parameter itself, not a cast of it.
  if (dtype.is_none() || !nb::cast<bool>(nb::getattr(param, "requires_grad", nb::bool_(false))))
    return node;
  return cast_float(b, std::move(node), dtype, loc);
}

NodePtr Parser::planned_cell_weight(Block* b, nb::handle cell, const std::string& attr,
                                    nb::handle param, NodePtr node, const SourceLoc& loc) {
  // Cell.shard(parameter_plan=...) leaves {attribute name: strategy} on the Cell owning the
  // weight. Only trainable weights: a buffer may be assigned, which needs the Parameter itself.
  // A weight stored as this rank's slice (slice_parameters=True, mycel.parallel.sliced) is read
  // as the whole weight it is part of; the semi-auto pass reads the slice in place.
  if (nb::object l = nb::getattr(param, "layout", nb::none()); !l.is_none()) {
    std::vector<AttrValue> at;
    for (size_t k = 0; k < 3; ++k) {
      std::vector<int64_t> v;
      for (nb::handle x : l[k]) v.push_back(nb::cast<int64_t>(x));
      at.emplace_back(std::move(v));
    }
    node = op_call(b, Registry::get().at("sliced_weight"), at, {std::move(node)}, {}, loc);
  }
  nb::object plan = nb::cast<nb::dict>(cell.attr("__dict__")).get("_shard_param_plan", nb::none());
  if (plan.is_none() || !nb::cast<bool>(nb::getattr(param, "requires_grad", nb::bool_(false))))
    return node;
  nb::object dims = nb::cast<nb::dict>(plan).get(attr.c_str(), nb::none());
  return dims.is_none() ? node : shard_hint(b, std::move(node), dims, loc, /*layout_only=*/true);
}

NodePtr Parser::object_node(Block* b, nb::handle obj, const SourceLoc& loc) {
  PyObject* o = obj.ptr();
  if (obj.is_none()) return constant(ir::none());
  if (PyBool_Check(o)) return constant(ir::boolean(o == Py_True));
  if (PyLong_Check(o)) return constant(ir::integer(nb::cast<int64_t>(obj)));
  if (PyFloat_Check(o)) return constant(ir::floating(PyFloat_AsDouble(o)));
  if (PyUnicode_Check(o)) return constant(ir::string(nb::cast<std::string>(obj)));
  if (nb::isinstance<DType>(obj)) return constant(ir::dtype_value(nb::cast<DType>(obj)));
  if (nb::isinstance(obj, param_type_)) {
    nb::object n = nb::getattr(obj, "name", nb::none());
    if (assigned_ && assigned_->count(o)) {
      const Assigned& a = assigned_->at(o);
      if (a.block == b) return a.value;  // straight after ops.assign: the value it wrote
      error(loc, "ValueError",
            "Parameter '" + (n.is_none() ? std::string("?") : nb::cast<std::string>(n)) +
                "' is read after ops.assign wrote it (line " + std::to_string(a.loc.line) +
                ") on a path through a branch or loop; in graph mode a step reads its "
                "Parameters before writing them, so use the value you assigned instead");
    }
    return weight(obj, n.is_none() ? std::string("param") : nb::cast<std::string>(n));
  }
  if (nb::isinstance<Tensor>(obj)) return constant(ir::tensor_value(nb::cast<Tensor>(obj)));
  nb::module_ np = nb::module_::import_("numpy");
  if (nb::isinstance(obj, np.attr("ndarray")) || nb::isinstance(obj, np.attr("generic")))
    return constant(ir::tensor_value(py::to_tensor(obj)));
  if (nb::isinstance(obj, cell_list_type_) || PyTuple_Check(o) || PyList_Check(o)) {
    std::vector<NodePtr> items;
    for (nb::handle x : obj) items.push_back(object_node(b, x, loc));
    return sequence(b, PyList_Check(o) ? Prim::kMakeList : Prim::kMakeTuple, std::move(items), loc);
  }
  if (nb::isinstance(obj, cell_type_)) return constant(ir::graph_value(cell_graph(obj, loc)));
  if (PyDict_Check(o)) {
    std::vector<std::pair<ir::ValuePtr, ir::ValuePtr>> items;
    std::vector<ir::ValuePtr> keys;
    std::vector<NodePtr> values;
    bool all_const = true;
    for (auto [k, v] : nb::borrow<nb::dict>(obj)) {
      ir::Constant* kc = ir::as_constant(object_node(b, k, loc));
      if (!kc) error(loc, "TypeError", "dict keys must be constants in graph mode");
      NodePtr vn = object_node(b, v, loc);
      all_const = all_const && vn->is_constant();
      keys.push_back(kc->value());
      values.push_back(vn);
      if (all_const) items.push_back({kc->value(), ir::as_constant(vn)->value()});
    }
    if (all_const) return constant(std::make_shared<ir::DictValue>(std::move(items)));
    return prim(b, Prim::kMakeDict,
                {constant(ir::tuple(keys)), prim(b, Prim::kMakeTuple, values, loc)}, loc);
  }
  if (nb::hasattr(obj, "_mycel_grad_spec") && !PyType_Check(o)) return grad_object(b, obj, loc);
  if (nb::hasattr(obj, "_mycel_vmap_spec") && !PyType_Check(o)) return vmap_object(b, obj, loc);
  if (nb::hasattr(obj, "_mycel_graph_function") && !PyType_Check(o))  // a @jit function
    return object_node(b, graph_function_of(obj), loc);
  auto pf = prim_funcs_.find(o);
  if (pf != prim_funcs_.end())
    return constant(ir::prim_value(pf->second));  // ops.assign, ops.depend
  if (is_user_function(obj))
    return constant(ir::graph_value(function_graph(obj, nb::handle(), loc)));
  if (PyMethod_Check(o)) {
    nb::object fn = obj.attr("__func__"), self = obj.attr("__self__");
    if (is_user_function(fn)) return constant(ir::graph_value(function_graph(fn, self, loc)));
  }
  return constant(py_object(obj));
}

NodePtr Parser::grad_object(Block* b, nb::handle obj, const SourceLoc& loc) {
  nb::dict d = nb::cast<nb::dict>(obj.attr("_mycel_grad_spec")());
  ir::GradFlags f;
  for (nb::handle p : d["positions"]) f.positions.push_back(nb::cast<int>(p));
  f.positions_tuple = nb::cast<bool>(d["positions_tuple"]);
  f.all_positions = nb::cast<bool>(d["all_positions"]);
  f.with_weights = nb::cast<bool>(d["with_weights"]);
  f.return_value = nb::cast<bool>(d["return_value"]);
  f.has_aux = nb::cast<bool>(d["has_aux"]);
  f.sens_param = nb::cast<bool>(d["sens_param"]);
  NodePtr op = constant(std::make_shared<ir::GradOpValue>(std::move(f)));
  if (!d.contains("fn")) return op;  // GradOperation: called with (fn, weights) in the graph
  // mycel.grad(fn, ...): the gradient function itself
  return apply(b, {op, object_node(b, d["fn"], loc), object_node(b, d["weights"], loc)}, loc);
}

namespace {
/// in_axes / out_axes as MindSpore spells them: an int, None, or a (nested) tuple of those.
ir::BatchAxes batch_axes(nb::handle h) {
  if (h.is_none()) return ir::BatchAxes::none();
  if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
    std::vector<ir::BatchAxes> items;
    for (nb::handle x : h) items.push_back(batch_axes(x));
    return ir::BatchAxes::tuple(std::move(items));
  }
  if (!PyLong_Check(h.ptr()) || PyBool_Check(h.ptr()))
    throw nb::type_error("vmap: in_axes and out_axes must be an int, None, or a tuple of them");
  return ir::BatchAxes::at(nb::cast<int64_t>(h));
}
}  // namespace

NodePtr Parser::vmap_object(Block* b, nb::handle obj, const SourceLoc& loc) {
  nb::dict d = nb::cast<nb::dict>(obj.attr("_mycel_vmap_spec")());
  NodePtr op = constant(
      std::make_shared<ir::VmapOpValue>(batch_axes(d["in_axes"]), batch_axes(d["out_axes"])));
  return apply(b, {op, function_value(b, object_node(b, d["fn"], loc), loc)}, loc);
}

NodePtr Parser::transform_call(Block* b, nb::handle fn, std::vector<NodePtr> args,
                               std::vector<std::pair<std::string, NodePtr>> kw,
                               const SourceLoc& loc) {
  std::string kind = nb::cast<std::string>(fn.attr("_mycel_transform"));
  if (kind == "vjp") return vjp_call(b, std::move(args), std::move(kw), loc);
  std::vector<std::string> names =
      kind == "vmap" ? std::vector<std::string>{"fn", "in_axes", "out_axes"}
                     : std::vector<std::string>{"fn", "grad_position", "weights", "has_aux"};
  std::string fname = kind == "vmap" ? "vmap" : kind;
  std::vector<NodePtr> bound(names.size());
  if (args.size() > names.size())
    error(loc, "TypeError",
          fname + "() takes at most " + std::to_string(names.size()) + " arguments, got " +
              std::to_string(args.size()));
  for (size_t i = 0; i < args.size(); ++i) bound[i] = args[i];
  for (auto& [k, v] : kw) {
    size_t i = std::find(names.begin(), names.end(), k) - names.begin();
    if (i == names.size())
      error(loc, "TypeError", fname + "() got an unexpected keyword argument '" + k + "'");
    if (bound[i])
      error(loc, "TypeError", fname + "() got multiple values for argument '" + k + "'");
    bound[i] = v;
  }
  if (!bound[0]) error(loc, "TypeError", fname + "() missing required argument 'fn'");
  // The options must be known here (they decide the graph), the function and weights may be values.
  auto option = [&](size_t i, nb::object def) -> nb::object {
    if (!bound[i]) return def;
    nb::object o = to_python(bound[i]);
    if (!o.is_valid())
      error(
          loc, "TypeError",
          fname + "(): argument '" + names[i] + "' must be a compile-time constant in graph mode");
    return o;
  };
  if (kind == "vmap") {
    ir::BatchAxes in, out;
    try {
      in = batch_axes(option(1, nb::int_(0)));
      out = batch_axes(option(2, nb::int_(0)));
    } catch (nb::python_error& e) {
      error(loc, "TypeError", e.what());
    } catch (nb::builtin_exception& e) {
      error(loc, "TypeError", e.what());
    }
    NodePtr op = constant(std::make_shared<ir::VmapOpValue>(std::move(in), std::move(out)));
    return apply(b, {op, function_value(b, bound[0], loc)}, loc);
  }
  ir::GradFlags f;
  nb::object pos = option(1, nb::int_(0));
  if (nb::isinstance<nb::tuple>(pos) || nb::isinstance<nb::list>(pos)) {
    for (nb::handle p : pos) f.positions.push_back(nb::cast<int>(p));
    f.positions_tuple = true;
  } else if (!pos.is_none()) {
    f.positions.push_back(nb::cast<int>(pos));
  }
  f.has_aux = nb::cast<bool>(option(3, nb::bool_(false)));
  f.return_value = kind == "value_and_grad";
  NodePtr weights = bound[2] ? bound[2] : constant(ir::none());
  ir::Constant* wc = ir::as_constant(weights);
  f.with_weights = !(wc && wc->value()->kind() == ir::ValueKind::kNone);
  if (f.positions.empty() && !f.with_weights)
    error(loc, "ValueError",
          fname + "(): grad_position is None and no weights given: nothing to differentiate");
  NodePtr op = constant(std::make_shared<ir::GradOpValue>(std::move(f)));
  return apply(b, {op, bound[0], weights}, loc);
}

// ops.vjp(fn, *inputs) in parsed code: (fn(*inputs), vjp_fn) with vjp_fn a graph nested in the
// caller (so it may be returned to and called by the caller), v -> the cotangent of each input
// through a gradient with the sensitivity given (GradOperation(get_all, sens_param)).
NodePtr Parser::vjp_call(Block* b, std::vector<NodePtr> args,
                         std::vector<std::pair<std::string, NodePtr>> kw, const SourceLoc& loc) {
  if (!kw.empty())
    error(loc, "TypeError",
          "vjp(): keyword argument '" + kw[0].first +
              "' is not supported in compiled code; call "
              "vjp(fn, *inputs)");
  if (args.size() < 2) error(loc, "TypeError", "vjp() takes the function and at least one input");
  NodePtr fn = args[0];
  std::vector<NodePtr> inputs(args.begin() + 1, args.end());
  std::vector<NodePtr> call{fn};
  call.insert(call.end(), inputs.begin(), inputs.end());
  NodePtr out = apply(b, std::move(call), loc);
  FuncGraph* g = module_->add_graph("vjp_fn", b->g);
  NodePtr v = g->add_parameter("v");
  ir::GradFlags f;
  f.all_positions = true;
  f.sens_param = true;
  NodePtr made = g->apply(
      {constant(std::make_shared<ir::GradOpValue>(std::move(f))), fn, constant(ir::none())}, loc);
  std::vector<NodePtr> grad_call{made};
  grad_call.insert(grad_call.end(), inputs.begin(), inputs.end());
  grad_call.push_back(v);
  NodePtr cot = g->apply(std::move(grad_call), loc);
  g->set_output(inputs.size() == 1
                    ? g->prim(Prim::kTupleGetItem, {cot, constant(ir::integer(0))}, loc)
                    : cot);
  return prim(b, Prim::kMakeTuple, {out, constant(ir::graph_value(g))}, loc);
}

NodePtr Parser::function_value(Block* b, NodePtr fn, const SourceLoc& loc) {
  const PyObjectValue* pv = py_object_of(fn);
  if (!pv) return fn;
  const OpDef* op = nullptr;
  std::vector<AttrValue> preset;
  if (!(op = op_of_function(pv->object())) && !op_handle_of(pv->object(), &op, &preset)) return fn;
  Block* w = new_block(b->scope, nullptr, Block::kFunction, op->name);
  std::vector<NodePtr> params;
  for (const InputDef& in : op->inputs)
    if (!in.optional) params.push_back(w->g->add_parameter(in.name));
  w->g->set_output(op_call(w, *op, preset, params, {}, loc));
  w->terminated = true;
  return constant(ir::graph_value(w->g));
}

}  // namespace mycel::frontend

// Entry points: parse a function, a bound method or a Cell; read a Python function's source,
// build its signature and parse its body into graphs (one per block).
#include "mycel/frontend/parser.h"

#include "mycel/ir/checker.h"

namespace mycel::frontend {

Parser::Parser() {
  builtins_ = nb::module_::import_("builtins");
  ast_ = nb::module_::import_("ast");
  inspect_ = nb::module_::import_("inspect");
  nb::module_ nn = nb::module_::import_("mycel.nn");
  cell_type_ = nn.attr("Cell");
  cell_list_type_ = nn.attr("CellList");
  param_type_ = nb::module_::import_("mycel.common.parameter").attr("Parameter");
  prim_type_ = nb::module_::import_("mycel.ops.operations").attr("Primitive");
  nb::object ops = nb::module_::import_("mycel._mycel").attr("ops");
  for (const OpDef* op : Registry::get().ops()) {
    nb::object f = nb::getattr(ops, op->name.c_str(), nb::none());
    if (!f.is_none()) {
      op_funcs_[f.ptr()] = op;
      keep_alive_.push_back(f);
    }
  }
  // mycel.ops shows each op as an OpFunction (a partial carrying its signature): the same op.
  nb::object op_function = nb::module_::import_("mycel.ops.signature").attr("OpFunction");
  for (auto [name, f] : nb::cast<nb::dict>(nb::module_::import_("mycel.ops").attr("__dict__"))) {
    if (!nb::isinstance(f, op_function)) continue;
    auto it = op_funcs_.find(f.attr("func").ptr());
    if (it == op_funcs_.end()) continue;
    op_funcs_[f.ptr()] = it->second;
    keep_alive_.push_back(nb::borrow(f));
  }
  nb::module_ effects = nb::module_::import_("mycel.ops.effects");
  for (auto [name, prim] :
       {std::pair{"assign", Prim::kAssign}, std::pair{"depend", Prim::kDepend}}) {
    nb::object f = effects.attr(name);
    prim_funcs_[f.ptr()] = prim;
    keep_alive_.push_back(f);
  }
  nb::dict paths = nb::cast<nb::dict>(nb::module_::import_("sysconfig").attr("get_paths")());
  for (const char* k : {"stdlib", "platstdlib", "purelib", "platlib"})
    if (paths.contains(k)) library_prefixes_.push_back(nb::cast<std::string>(paths[k]));
}

namespace {
std::string qualname(nb::handle fn) {
  return nb::cast<std::string>(nb::getattr(fn, "__qualname__", fn.attr("__name__")));
}
}  // namespace

FuncGraph* Parser::parse_function(nb::handle fn, nb::handle self, const std::string& name,
                                  FuncGraph* parent, bool entry, const SourceLoc& loc) {
  // Source: the lines of the def, dedented for ast.parse; positions map back to the file.
  auto src = std::make_unique<SourceInfo>();
  nb::object tree;
  try {
    nb::tuple sl = nb::cast<nb::tuple>(inspect_.attr("getsourcelines")(fn));
    nb::list lines = nb::cast<nb::list>(sl[0]);
    src->first_line = nb::cast<int>(sl[1]);
    nb::object file = inspect_.attr("getsourcefile")(fn);
    if (file.is_none()) file = fn.attr("__code__").attr("co_filename");
    src->file = std::make_shared<const std::string>(nb::cast<std::string>(file));
    std::string first = nb::cast<std::string>(lines[0]);
    src->indent = static_cast<int>(first.find_first_not_of(" \t"));
    for (nb::handle l : lines) {
      std::string s = nb::cast<std::string>(l);
      while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
      src->lines.push_back(std::make_shared<const std::string>(s));
    }
    nb::object text =
        nb::module_::import_("textwrap").attr("dedent")(nb::str("").attr("join")(lines));
    try {
      tree = ast_.attr("parse")(text);
    } catch (nb::python_error&) {
      // A lambda in a compound statement's header (`for y in f(lambda x: x + 1):`): its lines
      // are the header alone, which parses once given a body. Line numbers stay as they were.
      if (str_attr(fn, "__name__") != "<lambda>") throw;
      tree = ast_.attr("parse")(nb::str(text) + nb::str("\n    pass\n"));
    }
  } catch (nb::python_error& e) {
    // Python keeps no source for code typed at the prompt, piped to `python -` or exec'd from a
    // string; IPython and Jupyter keep theirs in linecache, where inspect finds it.
    std::string file = nb::cast<std::string>(fn.attr("__code__").attr("co_filename"));
    error(loc, "TypeError",
          "graph mode cannot compile '" + qualname(fn) + "': it parses the Python source, and " +
              file +
              " keeps none (code typed at the prompt, piped to `python -` or exec'd from a "
              "string); define it in a .py file or a notebook cell, or run it eagerly with "
              "mycel.set_context(mode=mycel.PYNATIVE_MODE)");
  }
  const SourceInfo* info = src.get();
  sources_.push_back(std::move(src));
  nb::object def;
  bool is_lambda = str_attr(fn, "__name__") == "<lambda>";
  // Several lambdas may share the source lines: take the first whose positional parameter names
  // are the function's (`f(lambda: g(lambda t: t[0]))` finds `lambda t` for the inner one).
  nb::object code_obj = fn.attr("__code__");
  const size_t argc = nb::cast<size_t>(code_obj.attr("co_argcount"));
  nb::object varnames = code_obj.attr("co_varnames");
  auto same_params = [&](nb::handle lambda) {
    nb::object args = lambda.attr("args").attr("posonlyargs") + lambda.attr("args").attr("args");
    if (len_of(args) != argc) return false;
    for (size_t i = 0; i < argc; ++i)
      if (!args[i].attr("arg").equal(varnames[i])) return false;
    return true;
  };
  for (nb::handle n : ast_.attr("walk")(tree)) {
    std::string t = ast_type(n);
    if ((is_lambda && t == "Lambda" && same_params(n)) || (!is_lambda && t == "FunctionDef")) {
      def = nb::borrow(n);
      break;
    }
  }
  if (!def.is_valid())
    error(loc, "TypeError", "cannot find the definition of '" + qualname(fn) + "'");

  auto sc = std::make_unique<Scope>();
  Scope* s = sc.get();
  scopes_.push_back(std::move(sc));
  if (auto shape = std::exchange(pending_shape_, std::nullopt)) {
    s->vararg_len = shape->vararg_len;
    s->kwarg_keys = std::move(shape->kwarg_keys);
  }
  s->globals = fn.attr("__globals__");
  s->src = info;
  s->name = is_lambda ? std::string("lambda") : name;
  nb::object code = fn.attr("__code__");
  nb::object cells = fn.attr("__closure__");
  nb::tuple freevars = nb::cast<nb::tuple>(code.attr("co_freevars"));
  for (size_t i = 0; i < len_of(freevars); ++i) {
    try {
      s->closure[freevars[i]] = nb::borrow<nb::tuple>(cells)[i].attr("cell_contents");
    } catch (nb::python_error&) {  // an empty cell: the name is not bound yet
    }
  }
  Scope* saved = current_scope;
  current_scope = s;
  std::unordered_map<PyObject*, Assigned> assigned;
  auto* saved_assigned = assigned_;
  assigned_ = &assigned;

  Block* blk = new_block(s, nullptr, Block::kFunction, s->name);
  FuncGraph* g = blk->g;
  g->set_parent(parent);
  if (entry) top_ = g;
  fn_cache_[{fn.ptr(), self.ptr()}] = g;
  keep_alive_.push_back(nb::borrow(fn));
  if (self.is_valid()) keep_alive_.push_back(nb::borrow(self));

  // Signature: positional, *args, keyword-only; `self` of a method is bound, not a parameter.
  nb::handle args = def.attr("args");
  if (!args.attr("kwarg").is_none() && entry)
    unsupported(args.attr("kwarg"), "**kwargs in the compiled function itself",
                "name the keyword parameters explicitly (a function it calls may take **kwargs)");
  std::vector<nb::handle> pos;
  for (nb::handle a : args.attr("posonlyargs")) pos.push_back(a);
  for (nb::handle a : args.attr("args")) pos.push_back(a);
  size_t skip = 0;
  if (next_record_class_.is_valid()) {  // a record's __init__: self is the record being built
    if (pos.empty())
      error(loc_of(def), "TypeError", "method '" + qualname(fn) + "' has no self parameter");
    s->record_class = next_record_class_;
    next_record_class_ = nb::object();
    begin_record_init(s, blk, def, pos[0]);
    skip = 1;
  } else if (self.is_valid()) {
    if (pos.empty())
      error(loc_of(def), "TypeError", "method '" + qualname(fn) + "' has no self parameter");
    write(blk, str_attr(pos[0], "arg"), constant(py_object(self)));
    s->locals.insert(str_attr(pos[0], "arg"));
    skip = 1;
  }
  Signature sig;
  std::vector<nb::handle> params(pos.begin() + skip, pos.end());
  sig.n_positional = params.size();
  if (!args.attr("vararg").is_none()) {
    s->vararg_name = str_attr(args.attr("vararg"), "arg");
    sig.vararg = static_cast<int>(params.size());
    params.push_back(args.attr("vararg"));
  }
  size_t first_kw = params.size();
  for (nb::handle a : args.attr("kwonlyargs")) params.push_back(a);
  for (nb::handle a : params) sig.names.push_back(str_attr(a, "arg"));
  sig.defaults.assign(params.size(), nullptr);
  nb::object defaults = fn.attr("__defaults__");
  if (!defaults.is_none()) {
    size_t nd = len_of(defaults), npos = pos.size();
    for (size_t i = 0; i < nd; ++i) {
      size_t p = npos - nd + i;
      if (p >= skip) sig.defaults[p - skip] = object_node(blk, defaults[i], loc);
    }
  }
  nb::object kwdefaults = fn.attr("__kwdefaults__");
  if (!kwdefaults.is_none())
    for (size_t i = first_kw; i < params.size(); ++i)
      if (nb::cast<nb::dict>(kwdefaults).contains(sig.names[i].c_str()))
        sig.defaults[i] =
            object_node(blk, nb::cast<nb::dict>(kwdefaults)[sig.names[i].c_str()], loc);
  for (size_t i = 0; i < params.size(); ++i) {
    NodePtr p = g->add_parameter(sig.names[i]);
    p->set_loc(loc_of(params[i]));
    if (static_cast<int>(i) == sig.vararg) seq_nodes.insert(p.get());
    write(blk, sig.names[i], p);
    s->locals.insert(sig.names[i]);
  }
  if (!args.attr("kwarg").is_none()) {
    s->kwarg_name = str_attr(args.attr("kwarg"), "arg");
    add_kwarg_param(blk, sig, args.attr("kwarg"));
  }
  signatures[g] = sig;
  if (self.is_valid() && nb::isinstance(self, cell_type_)) {
    // Cell.to_float / mixed precision, as Cell.__call__ does eagerly: the floating tensor inputs
    // are cast to the Cell's dtype on entry (here, not at call sites, so a Cell called from a
    // loop over a CellList casts too); _cast_float_input folds to one cast or none per input.
    nb::dict d = nb::cast<nb::dict>(self.attr("__dict__"));
    nb::object dtype = d.get("_float_dtype", nb::none());
    if (!dtype.is_none())
      for (size_t i = 0; i < params.size(); ++i)
        if (static_cast<int>(i) != sig.vararg)
          write(blk, sig.names[i], cast_float(blk, g->parameters()[i], dtype, loc));
    nb::object out_dtype = d.get("_output_dtype", nb::none());
    if (!out_dtype.is_none()) s->output_dtype = out_dtype;
    // Cell.shard(in_strategy, out_strategy): the inputs (after any cast) pass through shard_hint
    // nodes, as a Primitive.shard's do; the return values are hinted in the Return statement.
    nb::object in_strategy = d.get("_shard_in_strategy", nb::none());
    if (!in_strategy.is_none()) {
      size_t i = 0;
      for (nb::handle dims : in_strategy) {
        if (i >= params.size() || static_cast<int>(i) == sig.vararg) break;
        if (!dims.is_none())
          write(blk, sig.names[i],
                shard_hint(blk, read(blk, sig.names[i], loc), dims, loc, /*layout_only=*/true));
        ++i;
      }
    }
    nb::object out_strategy = d.get("_shard_out_strategy", nb::none());
    if (!out_strategy.is_none()) s->output_strategy = out_strategy;
  }
  set_analysis_binding(g, sig);
  if (entry)  // a Cell's weights follow its inputs
    for (auto& [wname, w] : pending_weights_) weight(w, wname);

  if (is_lambda) {
    finish(blk, expr(blk, def.attr("body")));
  } else {
    collect_locals(ast_, def.attr("body"), s->locals);
    collect_locals(ast_, def.attr("body"), s->assigned);
    s->entry_block = blk;
    if (Block* end = stmts(blk, def.attr("body")))
      finish(end,
             s->record_class.is_valid() ? record_value(end, loc_of(def)) : constant(ir::none()));
  }
  current_scope = saved;
  assigned_ = saved_assigned;
  if (s->wants_call_shape)
    forwarders_[g] =
        Forwarder{nb::borrow(fn), self.is_valid() ? nb::borrow(self) : nb::object(), name, parent};
  parsed_.push_back(qualname(fn));
  return g;
}

ParsedModule Parser::run(nb::handle entry_obj) {
  module_ = std::make_unique<ir::Module>();
  nb::object obj = graph_function_of(entry_obj), fn, self;
  std::string name;
  if (nb::isinstance(obj, cell_type_)) {
    nb::object type = nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()))).attr("__name__");
    name = nb::cast<std::string>(type);
    // `@jit def construct(self, x)` (MindSpore's pattern) is parsed as the plain method.
    fn = graph_function_of(
        nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()))).attr("construct"));
    self = nb::borrow(obj);
    for (nb::handle item : obj.attr("parameters_and_names")()) {
      nb::tuple t = nb::borrow<nb::tuple>(item);
      pending_weights_.push_back({nb::cast<std::string>(t[0]), nb::borrow(t[1])});
    }
  } else if (PyMethod_Check(obj.ptr())) {
    fn = obj.attr("__func__");
    self = obj.attr("__self__");
    name = str_attr(fn, "__name__");
  } else if (PyFunction_Check(obj.ptr())) {
    fn = nb::borrow(obj);
    name = str_attr(fn, "__name__");
  } else {
    MYCEL_THROW(TypeError, "frontend.parse expects a function, a bound method or a Cell, got ",
                nb::cast<std::string>(nb::repr(obj.type())));
  }
  if (name == "<lambda>") name = "lambda";
  root_cell_ = self.is_valid() && nb::isinstance(self, cell_type_) ? self : nb::none();
  FuncGraph* entry = parse_function(fn, self, name, nullptr, true, {});
  if (nb::isinstance(obj, cell_type_)) attach_bprop(entry, obj, name, {});
  applies_.clear();
  ir::verify(*entry, "frontend");
  ParsedModule out;
  out.module = std::move(module_);
  out.entry = entry;
  out.vararg = signatures[entry].vararg;
  out.parsed = parsed_;
  return out;
}

std::shared_ptr<const std::string> Parser::cell_label(nb::handle cell) {
  if (!cell_labels_.is_valid())
    cell_labels_ = nb::module_::import_("mycel.common.error_frames").attr("CellLabels")(root_cell_);
  return std::make_shared<const std::string>(nb::cast<std::string>(cell_labels_(cell)));
}

nb::object graph_function_of(nb::handle obj) {
  // A @mycel.jit function (or any object offering _mycel_graph_function) is parsed as the
  // Python function it wraps: jit inside compiled code adds nothing.
  if (!PyType_Check(obj.ptr()) && nb::hasattr(obj, "_mycel_graph_function"))
    return obj.attr("_mycel_graph_function");
  return nb::borrow(obj);
}

ParsedModule parse(nb::handle obj) { return Parser().run(obj); }

}  // namespace mycel::frontend

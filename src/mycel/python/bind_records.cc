// Graph-mode glue for records (CSRTensor, @jit_class objects): the members of a record class
// for analysis (methods and property getters parsed into graphs on first use, kept for the
// process), and a record object as a compiled function's input or output.
#include <nanobind/stl/string.h>

#include <map>

#include "mycel/analysis/abstract_util.h"
#include "mycel/analysis/records.h"
#include "mycel/frontend/frontend.h"
#include "mycel/python/bind_records.h"

namespace mycel::py {

ir::ValuePtr py_to_value(nb::handle h);  // bind_graph.cc
nb::object value_to_py(const ir::Value& v);
ir::AbstractPtr abstract_of(nb::handle h);
frontend::ParsedModule parse_or_raise(nb::handle obj);  // bind_frontend.cc

namespace {
using analysis::RecordMember;

// Parsed methods by the object they were parsed for (`key`: the function, or the object whose
// `_mycel_graph_function` it is). Never freed: graphs hold Python objects, which must not be
// released after the interpreter has finalized.
ir::FuncGraph* parsed_graph(nb::handle key, nb::handle fn, const char* what,
                            const char* weights_advice = "; pass it as an argument instead") {
  static auto* cache = new std::map<PyObject*, frontend::ParsedModule>();
  auto it = cache->find(key.ptr());
  if (it != cache->end()) return it->second.entry;
  frontend::ParsedModule p = parse_or_raise(fn);
  std::string name =
      nb::cast<std::string>(nb::str(nb::getattr(fn, "__qualname__", key.type().attr("__name__"))));
  for (const ir::NodePtr& q : p.entry->parameters())
    if (static_cast<const ir::Parameter&>(*q).is_weight())
      MYCEL_THROW(NotSupported, "graph mode: ", what, name, " reads a Parameter", weights_advice);
  if (p.vararg >= 0)
    MYCEL_THROW(NotSupported, "graph mode: ", what, name,
                " takes *args; name its parameters instead");
  Py_INCREF(key.ptr());  // the key stays valid
  ir::FuncGraph* g = p.entry;
  cache->emplace(key.ptr(), std::move(p));
  return g;
}

ir::FuncGraph* method_graph(nb::handle fn) { return parsed_graph(fn, fn, "the record method "); }

// An object that compiled code made at compile time (a Primitive configured from specialized
// values through graph_syntax.call_keywords, a Cell built inside a compiled function), then
// called with tensors: its parsable form (`_mycel_graph_function`, or the Cell itself).
ir::FuncGraph* parsed_callable(const ir::Value& callee) {
  if (callee.kind() != ir::ValueKind::kExternal) return nullptr;
  nb::gil_scoped_acquire gil;
  nb::object obj = static_cast<const frontend::PyObjectValue&>(callee).object();
  if (PyType_Check(obj.ptr())) return nullptr;
  if (nb::hasattr(obj, "_mycel_graph_function"))
    return parsed_graph(obj, obj.attr("_mycel_graph_function"), "the primitive ");
  static nb::handle cell_type = nb::object(nb::module_::import_("mycel.nn").attr("Cell")).release();
  if (PyObject_IsInstance(obj.ptr(), cell_type.ptr()) == 1)
    return parsed_graph(obj, obj, "the Cell ",
                        ", and it was made inside compiled code: create it outside (in __init__) "
                        "so that its Parameters are the network's");
  return nullptr;
}

RecordMember member(const ir::Value& cls_value, const std::string& name) {
  nb::gil_scoped_acquire gil;
  nb::object cls = static_cast<const frontend::PyObjectValue&>(cls_value).object();
  nb::object inspect = nb::module_::import_("inspect");
  nb::object missing = nb::module_::import_("builtins").attr("object")();
  nb::object st = inspect.attr("getattr_static")(cls, name.c_str(), missing);
  RecordMember m;
  if (st.is(missing)) {
    m.kind = RecordMember::kMissing;
    std::string msg = "'" + nb::cast<std::string>(cls.attr("__name__")) +
                      "' object has no field, method or property '" + name +
                      "' in graph mode (its fields are the attributes its __init__ sets)";
    m.value =
        frontend::py_object(nb::module_::import_("builtins").attr("AttributeError")(msg.c_str()));
    return m;
  }
  nb::object builtins = nb::module_::import_("builtins");
  try {
    if (nb::isinstance(st, builtins.attr("property"))) {
      m.kind = RecordMember::kProperty;
      m.graph = method_graph(st.attr("fget"));
    } else if (nb::isinstance(st, builtins.attr("staticmethod"))) {
      m.kind = RecordMember::kFunction;
      m.graph = method_graph(st.attr("__func__"));
    } else if (PyFunction_Check(st.ptr())) {
      m.kind = RecordMember::kMethod;
      m.graph = method_graph(st);
    } else {
      m.kind = RecordMember::kConstant;
      m.value = py_to_value(nb::getattr(cls, name.c_str()));
    }
  } catch (nb::python_error& e) {  // a parse error: say which record class it belongs to
    std::string note = "in " + nb::cast<std::string>(cls.attr("__name__")) + "." + name +
                       " (a method of a record class: @jit_class or a sparse tensor)";
    nb::object v = nb::borrow(e.value());
    if (nb::hasattr(v, "add_note")) v.attr("add_note")(note.c_str());
    throw;
  }
  return m;
}
}  // namespace

RecordParts record_parts(nb::handle obj) {
  RecordParts r;
  r.cls = nb::borrow(obj.type());
  nb::object fields = nb::module_::import_("mycel.common.records").attr("fields_of")(obj);
  for (nb::handle pair : fields) {
    nb::object value = nb::borrow(pair[1]);
    r.names.push_back(nb::cast<std::string>(pair[0]));
    ir::AbstractPtr a = abstract_of(value);
    ir::ValuePtr v = analysis::detail::constant_of(a);
    if (!v && !nb::isinstance<Tensor>(value) && !nb::isinstance<nb::tuple>(value) &&
        !nb::isinstance<nb::list>(value))
      v = py_to_value(value);  // an object field (a Cell, a function): a compile-time value
    r.statics.push_back(v);
    if (!v) {
      r.items.push_back(a);
      r.values.push_back(value);
    }
  }
  return r;
}

bool is_record(nb::handle obj) {
  return !PyType_Check(obj.ptr()) && nb::hasattr(obj.type(), "_mycel_record");
}

ir::AbstractPtr record_abstract(nb::handle obj) {
  RecordParts r = record_parts(obj);
  return std::make_shared<analysis::detail::RecordAbs>(frontend::py_object(r.cls), r.names,
                                                       r.statics, r.items);
}

nb::object rebuild_record(const analysis::detail::RecordAbs& r, nb::list values) {
  nb::object cls = static_cast<const frontend::PyObjectValue&>(*r.cls()).object();
  nb::list names;
  for (const std::string& n : r.names()) names.append(nb::str(n.c_str()));
  return nb::module_::import_("mycel.common.records").attr("rebuild")(cls, names, values);
}

void init_records() {
  analysis::RecordHooks h;
  h.member = member;
  h.parsed_callable = parsed_callable;
  h.witness = [](const ir::Value& cls_value) -> ir::ValuePtr {
    nb::gil_scoped_acquire gil;
    nb::object cls = static_cast<const frontend::PyObjectValue&>(cls_value).object();
    return frontend::py_object(cls.attr("__new__")(cls));
  };
  h.plain_class = [](const ir::Value& callee) {
    if (callee.kind() != ir::ValueKind::kExternal) return false;
    nb::gil_scoped_acquire gil;
    nb::handle o = static_cast<const frontend::PyObjectValue&>(callee).object();
    if (!PyType_Check(o.ptr()) || nb::hasattr(o, "_mycel_record")) return false;
    if (PyExceptionClass_Check(o.ptr())) return false;
    nb::object mod = nb::getattr(o, "__module__", nb::none());
    if (!nb::isinstance<nb::str>(mod)) return false;
    std::string m = nb::cast<std::string>(mod);
    for (const char* lib : {"builtins", "numpy", "mycel"})  // their own errors say more
      if (m == lib || m.rfind(std::string(lib) + ".", 0) == 0) return false;
    return true;
  };
  h.attribute_error = [](const std::string& message) -> ir::ValuePtr {
    nb::gil_scoped_acquire gil;
    return frontend::py_object(
        nb::module_::import_("builtins").attr("AttributeError")(message.c_str()));
  };
  analysis::set_record_hooks(std::move(h));
}

}  // namespace mycel::py

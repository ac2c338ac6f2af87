// _mycel.frontend: parse(obj) -> ParsedModule (the IR of a function, method or Cell), and the
// mapping of located frontend errors to Python's SyntaxError / NameError / TypeError / ...
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mycel/frontend/frontend.h"
#include "mycel/frontend/py_convert.h"
#include "mycel/ir/printer.h"

namespace mycel::py {

namespace {
PyObject* error_type(const std::string& kind) {
  if (kind == "NameError") return PyExc_NameError;
  if (kind == "UnboundLocalError") return PyExc_UnboundLocalError;
  if (kind == "TypeError") return PyExc_TypeError;
  if (kind == "AttributeError") return PyExc_AttributeError;
  if (kind == "ValueError") return PyExc_ValueError;
  if (kind == "IndexError") return PyExc_IndexError;
  if (kind == "NotImplementedError") return PyExc_NotImplementedError;
  return PyExc_SyntaxError;
}

}  // namespace

/// frontend::parse with its located errors raised as the Python exceptions they name.
frontend::ParsedModule parse_or_raise(nb::handle obj) {
  try {
    return frontend::parse(obj);
  } catch (const frontend::FrontendError& e) {
    PyObject* type = error_type(e.kind);
    nb::object value;
    if (type == PyExc_SyntaxError)  // SyntaxError(msg, (filename, lineno, offset, text))
      value = nb::handle(type)(e.what(), nb::make_tuple(e.file, e.line, e.col, e.text));
    else
      value = nb::handle(type)(e.what());
    PyErr_SetObject(type, value.ptr());
    throw nb::python_error();
  }
}

namespace {
frontend::ParsedModule parse(nb::handle obj, nb::args) { return parse_or_raise(obj); }
}  // namespace

void init_frontend(nb::module_& m) {
  nb::module_ f = m.def_submodule("frontend", "Graph mode: Python source -> IR.");
  nb::class_<frontend::ParsedModule>(f, "ParsedModule", "The IR parsed from a function or Cell.")
      .def(
          "ir",
          [](const frontend::ParsedModule& p, bool locations) {
            ir::PrintOptions o;
            o.locations = locations;
            return ir::print(*p.entry, o);
          },
          nb::arg("locations") = false, "The IR as text, the entry graph first.")
      .def_prop_ro("entry_name", [](const frontend::ParsedModule& p) { return p.entry->name(); })
      .def_prop_ro("graph_names",
                   [](const frontend::ParsedModule& p) {
                     std::vector<std::string> names;
                     for (const auto& g : p.module->graphs()) names.push_back(g->name());
                     return names;
                   })
      .def_prop_ro(
          "parsed", [](const frontend::ParsedModule& p) { return p.parsed; },
          "Qualified names of the Python functions parsed, each once.")
      .def_prop_ro(
          "weights",
          [](const frontend::ParsedModule& p) {
            nb::list l;
            for (const auto& n : p.entry->parameters()) {
              auto* prm = static_cast<ir::Parameter*>(n.get());
              if (prm->is_weight()) l.append(nb::make_tuple(prm->name(), prm->bound()));
            }
            return l;
          },
          "(name, tensor) of the top graph's weight parameters, in order.");
  f.def("parse", &parse, nb::arg("obj"), nb::arg("example_args"),
        "Parses a function, bound method or Cell into IR (example args are not needed).");
}

}  // namespace mycel::py

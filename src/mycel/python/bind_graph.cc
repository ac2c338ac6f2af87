// Graph-mode glue: IR values <-> Python objects, compile-time evaluation of Python callables for
// analysis, and _mycel.graph.specialize(parsed, *args) for tests and tools.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mycel/analysis/analysis.h"
#include "mycel/frontend/frontend.h"
#include "mycel/ir/printer.h"
#include "mycel/opt/opt.h"
#include "mycel/python/convert.h"

namespace mycel::py {

/// Python object for a compile-time value (nullptr-free: None for none).
nb::object value_to_py(const ir::Value& v) {
  using K = ir::ValueKind;
  switch (v.kind()) {
    case K::kNone: return nb::none();
    case K::kBool: return nb::bool_(static_cast<const ir::BoolValue&>(v).value());
    case K::kInt: return nb::int_(static_cast<const ir::IntValue&>(v).value());
    case K::kFloat: return nb::float_(static_cast<const ir::FloatValue&>(v).value());
    case K::kStr: return nb::str(static_cast<const ir::StrValue&>(v).value().c_str());
    case K::kDType: return nb::cast(static_cast<const ir::DTypeValue&>(v).value());
    case K::kTensor: return nb::cast(static_cast<const ir::TensorValue&>(v).tensor());
    case K::kTuple:
    case K::kList: {
      nb::list l;
      for (const auto& item : static_cast<const ir::SequenceValue&>(v).items()) l.append(value_to_py(*item));
      return v.kind() == K::kTuple ? nb::object(nb::tuple(l)) : nb::object(l);
    }
    case K::kDict: {
      nb::dict d;
      for (const auto& [k, val] : static_cast<const ir::DictValue&>(v).items()) d[value_to_py(*k)] = value_to_py(*val);
      return d;
    }
    case K::kExternal: return static_cast<const frontend::PyObjectValue&>(v).object();
    default: break;
  }
  MYCEL_THROW(NotSupported, "graph mode: the value ", v.repr(), " cannot be passed to Python code at compile time");
}

/// Compile-time value for a Python object (anything else stays an opaque Python object).
ir::ValuePtr py_to_value(nb::handle h) {
  if (h.is_none()) return ir::none();
  if (PyBool_Check(h.ptr())) return ir::boolean(h.ptr() == Py_True);
  if (PyLong_Check(h.ptr())) return ir::integer(nb::cast<int64_t>(h));
  if (PyFloat_Check(h.ptr())) return ir::floating(nb::cast<double>(h));
  if (PyUnicode_Check(h.ptr())) return ir::string(nb::cast<std::string>(h));
  if (nb::isinstance<DType>(h)) return ir::dtype_value(nb::cast<DType>(h));
  if (nb::isinstance<Tensor>(h)) return ir::tensor_value(nb::cast<Tensor>(h));
  if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
    std::vector<ir::ValuePtr> items;
    for (nb::handle x : h) items.push_back(py_to_value(x));
    return nb::isinstance<nb::tuple>(h) ? ir::tuple(std::move(items)) : ir::list(std::move(items));
  }
  nb::object np = nb::module_::import_("numpy");
  if (nb::isinstance(h, np.attr("ndarray"))) return ir::tensor_value(to_tensor(h));
  if (nb::isinstance(h, np.attr("generic"))) return py_to_value(h.attr("item")());
  return frontend::py_object(h);
}

/// Abstract value of a call argument: tensors by shape and dtype, Python scalars by value.
ir::AbstractPtr abstract_of(nb::handle h) {
  if (nb::isinstance<Tensor>(h)) {
    const Tensor& t = nb::cast<const Tensor&>(h);
    return std::make_shared<ir::AbstractTensor>(t.shape(), t.dtype());
  }
  if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
    std::vector<ir::AbstractPtr> items;
    for (nb::handle x : h) items.push_back(abstract_of(x));
    return std::make_shared<ir::AbstractTuple>(std::move(items), nb::isinstance<nb::list>(h));
  }
  if (h.is_none()) return std::make_shared<ir::AbstractNone>();
  ir::ValuePtr v = py_to_value(h);
  if (v->kind() == ir::ValueKind::kTensor) {
    const Tensor& t = static_cast<const ir::TensorValue&>(*v).tensor();
    return std::make_shared<ir::AbstractTensor>(t.shape(), t.dtype());
  }
  return std::make_shared<ir::AbstractScalar>(v->kind(), v);
}

void init_graph(nb::module_& m) {
  nb::module_ g = m.def_submodule("graph", "Graph mode: specialization, optimization, execution.");
  // Analysis calls Python helpers on constant arguments at compile time (math, numpy, ...).
  analysis::set_const_eval_hook([](const ir::Value& callee, const std::vector<ir::ValuePtr>& args) -> ir::ValuePtr {
    if (callee.kind() != ir::ValueKind::kExternal) return nullptr;
    nb::gil_scoped_acquire gil;
    nb::list py_args;
    for (const auto& a : args) py_args.append(value_to_py(*a));
    nb::object fn = static_cast<const frontend::PyObjectValue&>(callee).object();
    return py_to_value(fn(*nb::tuple(py_args)));
  });
  g.def("specialize", [](frontend::ParsedModule& p, nb::args args, bool optimize) {
    std::vector<ir::AbstractPtr> abs;
    for (nb::handle a : args) abs.push_back(abstract_of(a));
    ir::FuncGraph* s = analysis::specialize(*p.module, p.entry, abs);
    if (optimize) opt::optimize(s);
    return ir::print(*s);
  }, nb::arg("parsed"), nb::arg("args"), nb::arg("optimize") = true,
     "Specializes (and optimizes) a parsed function for example arguments; returns the IR text.");
}

}  // namespace mycel::py

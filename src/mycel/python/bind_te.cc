// Bindings for tensor expressions (mycel.te): node constructors, differentiate and build.
// The Python DSL in python/mycel/te only wraps these handles with operators.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "mycel/core/error.h"
#include "mycel/frontend/py_convert.h"
#include "mycel/te/te.h"

namespace mycel::py {
namespace {

te::Op op_from_name(const std::string& n) {
  for (int i = 0; i <= static_cast<int>(te::Op::Reduce); ++i)
    if (n == te::op_name(static_cast<te::Op>(i))) return static_cast<te::Op>(i);
  MYCEL_THROW(ValueError, "[te] unknown operation '", n, "'");
}

// TE's messages print shapes without the 1-tuple comma: "(3)".
std::string te_shape_str(const Shape& s) {
  std::string r = "(";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + ")";
}

/// Calls a built TE function: checks the arguments against its placeholders, runs the kernel.
std::vector<Tensor> call_function(const te::Function& f, const std::vector<nb::handle>& args) {
  MYCEL_CHECK(args.size() == f.inputs.size(), TypeError, "[te function] expects ", f.inputs.size(),
              " arguments, got ", args.size());
  std::vector<Tensor> in, out;
  std::vector<void*> bufs;
  for (size_t k = 0; k < args.size(); ++k) {
    auto& p = f.inputs[k];
    Tensor t = to_tensor(args[k]);
    MYCEL_CHECK(t.shape() == p->shape, ShapeError, "[te function] argument ", k, " ('", p->name,
                "') must have shape ", te_shape_str(p->shape), ", got ", te_shape_str(t.shape()));
    MYCEL_CHECK(t.dtype() == te::to_core(p->dtype), TypeError, "[te function] argument ", k, " ('",
                p->name, "') must be ", te::dtype_name(p->dtype), ", got ", dtype_name(t.dtype()));
    in.push_back(t);
    bufs.push_back(t.data());
  }
  for (auto& o : f.outputs) {
    out.push_back(Tensor::empty(o->shape, te::to_core(o->dtype)));
    bufs.push_back(out.back().data());
  }
  {
    nb::gil_scoped_release release;
    f.kernel->run(bufs.data());
  }
  return out;
}

}  // namespace

void init_te(nb::module_& root) {
  auto m = root.def_submodule("te", "Tensor expressions (C++ core of mycel.te).");
  nb::class_<te::IterVarNode>(m, "IterVar")
      .def_ro("name", &te::IterVarNode::name)
      .def_ro("lo", &te::IterVarNode::lo)
      .def_ro("hi", &te::IterVarNode::hi)
      .def_ro("reduce", &te::IterVarNode::reduce);
  nb::class_<te::Node>(m, "Expr")
      .def_prop_ro("dtype", [](const te::Node& n) { return std::string(te::dtype_name(n.dtype)); })
      .def_prop_ro("op", [](const te::Node& n) { return std::string(te::op_name(n.op)); })
      .def_prop_ro("value", [](const te::Node& n) { return n.value; })
      .def("__repr__", [](std::shared_ptr<te::Node> n) { return te::to_string(n); });
  nb::class_<te::TensorNode>(m, "Tensor")
      .def_ro("name", &te::TensorNode::name)
      .def_ro("shape", &te::TensorNode::shape)
      .def_prop_ro("dtype", [](const te::TensorNode& t) { return std::string(te::dtype_name(t.dtype)); })
      .def_prop_ro("is_placeholder", &te::TensorNode::is_placeholder)
      .def_prop_ro("id", [](const te::TensorNode& t) { return t.id; })
      .def("__repr__", [](std::shared_ptr<te::TensorNode> t) { return te::to_string(t); });

  m.def("make_var", &te::make_var, nb::arg("name"), nb::arg("lo"), nb::arg("hi"), nb::arg("reduce"));
  m.def("constant", [](double v, const std::string& t) { return te::constant(v, te::dtype_from_name(t)); });
  m.def("var", &te::var);
  m.def("load", &te::load);
  m.def("binary", [](const std::string& op, te::Expr a, te::Expr b) {
    return te::binary(op_from_name(op), std::move(a), std::move(b));
  });
  m.def("unary", [](const std::string& op, te::Expr a) { return te::unary(op_from_name(op), std::move(a)); });
  m.def("select", &te::select);
  m.def("cast", [](te::Expr a, const std::string& t) { return te::cast(std::move(a), te::dtype_from_name(t)); });
  m.def("reduce", [](const std::string& kind, te::Expr body, const std::vector<te::IterVar>& axes) {
    te::ReduceKind k = kind == "sum" ? te::ReduceKind::sum
                       : kind == "max" ? te::ReduceKind::max
                       : kind == "min" ? te::ReduceKind::min
                                       : throw ValueError("[te] unknown reduction '" + kind + "'");
    return te::reduce(k, std::move(body), axes);
  });
  m.def("placeholder", [](const std::vector<int64_t>& shape, const std::string& t, const std::string& name) {
    return te::placeholder(shape, te::dtype_from_name(t), name);
  });
  m.def("compute", &te::compute);
  m.def("simplify", &te::simplify);
  m.def("differentiate",
        [](te::Tensor out, std::vector<te::Tensor> inputs, std::optional<te::Tensor> head,
           std::vector<std::tuple<te::Tensor, std::vector<te::Tensor>, te::OverrideFn>> ovs) {
          std::vector<te::Override> o;
          for (auto& [t, ins, fn] : ovs) o.push_back({t, ins, fn});
          return te::differentiate(out, inputs, head ? *head : nullptr, o);
        });
  m.def("generate_cpp", &te::generate_cpp);

  nb::class_<te::Function>(m, "Function")
      .def_ro("source", &te::Function::source)
      .def_prop_ro("library", [](const te::Function& f) { return f.kernel->path(); })
      .def_prop_ro("cached", [](const te::Function& f) { return f.kernel->cached(); })
      .def_prop_ro("compile_seconds", [](const te::Function& f) { return f.kernel->compile_seconds(); })
      .def("call", &call_function);
  m.def("build", [](std::vector<te::Tensor> inputs, std::vector<te::Tensor> outputs) {
    nb::gil_scoped_release release;  // the compiler may run for a while
    return te::build(std::move(inputs), std::move(outputs));
  });
  m.def("register_function", &te::register_function,
        "Puts a built function in the table te_call ops refer to; returns its id.");
  m.def("gradient_function", &te::gradient_function, "The id of a function's TE gradient.");
}

}  // namespace mycel::py

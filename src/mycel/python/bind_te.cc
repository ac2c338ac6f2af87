// Bindings for tensor expressions (mycel.te): node constructors, differentiate and build.
// The Python DSL in python/mycel/te only wraps these handles with operators.
#include <nanobind/stl/function.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "mycel/core/error.h"
#include "mycel/frontend/py_convert.h"
#include "mycel/ops/custom_call.h"
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
  std::vector<std::vector<int64_t>> shapes;
  for (size_t k = 0; k < args.size(); ++k) {
    auto& p = f.inputs[k];
    Tensor t = to_tensor(args[k]);
    if (f.sizes.empty())
      MYCEL_CHECK(t.shape() == p->shape, ShapeError, "[te function] argument ", k, " ('", p->name,
                  "') must have shape ", te_shape_str(p->shape), ", got ", te_shape_str(t.shape()));
    MYCEL_CHECK(t.dtype() == te::to_core(p->dtype), TypeError, "[te function] argument ", k, " ('",
                p->name, "') must be ", te::dtype_name(p->dtype), ", got ", dtype_name(t.dtype()));
    in.push_back(t);
    bufs.push_back(t.data());
    shapes.emplace_back(t.shape().begin(), t.shape().end());
  }
  // Size variables (te.var) take their values from the arguments' shapes.
  const auto values = f.sizes.empty() ? std::vector<int64_t>{} : f.bind(shapes, "te function");
  for (auto& o : f.outputs) {
    out.push_back(Tensor::empty(f.resolve(o->shape, values), te::to_core(o->dtype)));
    bufs.push_back(out.back().data());
  }
  {
    nb::gil_scoped_release release;
    f.run(std::move(bufs), values);
  }
  return out;
}

// A Python infer callable of ops.Custom: [(shape, dtype name)] -> [(shape, dtype name)].
using PyInfer = std::function<std::vector<std::pair<std::vector<int64_t>, std::string>>(
    std::vector<std::pair<std::vector<int64_t>, std::string>>)>;

std::function<std::vector<TensorMeta>(const std::vector<TensorMeta>&)> meta_infer(PyInfer infer) {
  return [infer = std::move(infer)](const std::vector<TensorMeta>& in) {
    std::vector<std::pair<std::vector<int64_t>, std::string>> args;
    for (auto& m : in) args.emplace_back(m.shape, dtype_name(m.dtype));
    std::vector<TensorMeta> out;
    for (auto& [shape, dt] : infer(args)) out.push_back({shape, dtype_from_name(dt)});
    return out;
  };
}

// Copies what a Python function returned into the preallocated outputs, checking each.
void fill_outputs(const std::string& who, nb::handle result, std::vector<Tensor>& out) {
  std::vector<nb::handle> items;
  if (out.size() == 1 && !nb::isinstance<nb::tuple>(result) && !nb::isinstance<nb::list>(result)) {
    items.push_back(result);
  } else {
    for (nb::handle h : result) items.push_back(h);
  }
  MYCEL_CHECK(items.size() == out.size(), ValueError, "[Custom pyfunc '", who, "'] returned ",
              items.size(), " outputs, out_shape declares ", out.size());
  for (size_t k = 0; k < out.size(); ++k) {
    Tensor t = to_tensor(items[k], out[k].dtype());
    MYCEL_CHECK(t.shape() == out[k].shape(), ValueError, "[Custom pyfunc '", who, "'] output ", k,
                " has shape ", te_shape_str(t.shape()), ", out_shape declares ",
                te_shape_str(out[k].shape()));
    std::memcpy(out[k].data(), t.data(), out[k].nbytes());
  }
}

// MindSpore's aot call: params are the inputs then the outputs, with their ranks, shapes, dtypes.
void run_aot(const te::AotFunction& f, const std::vector<Tensor>& in, std::vector<Tensor>& out) {
  std::vector<void*> params;
  std::vector<int> ndims;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int64_t*> shape_ptrs;
  std::vector<const char*> dtypes;
  auto add = [&](const Tensor& t) {
    params.push_back(t.data());
    ndims.push_back(static_cast<int>(t.shape().size()));
    shapes.emplace_back(t.shape().begin(), t.shape().end());
    dtypes.push_back(dtype_name(t.dtype()));
  };
  for (auto& t : in) add(t);
  for (auto& t : out) add(t);
  for (auto& s : shapes) shape_ptrs.push_back(s.data());
  int rc = f.fn(static_cast<int>(params.size()), params.data(), ndims.data(), shape_ptrs.data(),
                dtypes.data(), nullptr, nullptr);
  MYCEL_CHECK(rc == 0, RuntimeError, "[Custom aot] '", f.symbol, "' in ", f.library, " returned ",
              rc);
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
      .def_prop_ro("dtype",
                   [](const te::TensorNode& t) { return std::string(te::dtype_name(t.dtype)); })
      .def_prop_ro("is_placeholder", &te::TensorNode::is_placeholder)
      .def_prop_ro("id", [](const te::TensorNode& t) { return t.id; })
      .def_ro("axes", &te::TensorNode::axes)
      .def_prop_ro("reduce_axes",
                   [](const te::TensorNode& t) {
                     return t.body && t.body->op == te::Op::Reduce ? t.body->raxes
                                                                   : std::vector<te::IterVar>{};
                   })
      .def("__repr__", [](std::shared_ptr<te::TensorNode> t) { return te::to_string(t); });

  m.def("size_var", &te::size_var, nb::arg("name"),
        "The code (a negative extent) of the size variable named `name` (te.var).");
  m.def("size_var_name", &te::size_var_name, nb::arg("code"));
  m.def("size_expr", &te::size_expr, nb::arg("expr"),
        "The code of a dimension written as an expression of size variables (2 * n), or its "
        "number when constant.");
  m.def("size_value", &te::size_value, nb::arg("code"),
        "The value of a size variable as an int64 index expression (te.var in x[n - 1 - i]).");
  m.def("compile_count", &te::compile_count,
        "How many TE kernels this process compiled with the system compiler (cache misses).");
  m.def("cache_directory", &te::cache_directory,
        "The kernel cache folder: MYCEL_TE_CACHE, else ~/.cache/mycel/te.");
  m.def("used_libraries", &te::used_libraries,
        "The cached kernel libraries this process compiled or loaded, in order of first use.");
  m.def("make_var", &te::make_var, nb::arg("name"), nb::arg("lo"), nb::arg("hi"),
        nb::arg("reduce"));
  m.def("constant",
        [](double v, const std::string& t) { return te::constant(v, te::dtype_from_name(t)); });
  m.def("var", &te::var);
  m.def("load", &te::load);
  m.def("binary", [](const std::string& op, te::Expr a, te::Expr b) {
    return te::binary(op_from_name(op), std::move(a), std::move(b));
  });
  m.def("unary", [](const std::string& op, te::Expr a) {
    return te::unary(op_from_name(op), std::move(a));
  });
  m.def("select", &te::select);
  m.def("cast", [](te::Expr a, const std::string& t) {
    return te::cast(std::move(a), te::dtype_from_name(t));
  });
  m.def("reduce", [](const std::string& kind, te::Expr body, const std::vector<te::IterVar>& axes) {
    te::ReduceKind k = kind == "sum"   ? te::ReduceKind::sum
                       : kind == "max" ? te::ReduceKind::max
                       : kind == "min" ? te::ReduceKind::min
                                       : throw ValueError("[te] unknown reduction '" + kind + "'");
    return te::reduce(k, std::move(body), axes);
  });
  m.def("placeholder",
        [](const std::vector<int64_t>& shape, const std::string& t, const std::string& name) {
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
  nb::enum_<te::LoopKind>(m, "LoopKind")
      .value("serial", te::LoopKind::serial)
      .value("parallel", te::LoopKind::parallel)
      .value("vectorized", te::LoopKind::vectorized)
      .value("unrolled", te::LoopKind::unrolled);
  nb::class_<te::Stage>(m, "Stage")
      .def(nb::new_([](te::Tensor t) { return std::make_shared<te::Stage>(std::move(t)); }))
      .def("split", &te::Stage::split)
      .def("reorder", &te::Stage::reorder)
      .def("set_kind", &te::Stage::set_kind)
      .def("compute_at", &te::Stage::compute_at)
      .def_prop_ro("loops", &te::Stage::loops)
      .def_prop_ro("tensor", &te::Stage::tensor);
  m.def("generate_cpp", &te::generate_cpp, nb::arg("inputs"), nb::arg("outputs"),
        nb::arg("schedule") = te::Schedule{});

  nb::class_<te::Function>(m, "Function")
      .def_ro("source", &te::Function::source)
      .def_prop_ro("library", [](const te::Function& f) { return f.kernel->path(); })
      .def_prop_ro("cached", [](const te::Function& f) { return f.kernel->cached(); })
      .def_prop_ro("compile_seconds",
                   [](const te::Function& f) { return f.kernel->compile_seconds(); })
      .def_ro("sizes", &te::Function::sizes)
      .def("call", &call_function);
  m.def(
      "build",
      [](std::vector<te::Tensor> inputs, std::vector<te::Tensor> outputs, te::Schedule schedule) {
        nb::gil_scoped_release release;  // the compiler may run for a while
        return te::build(std::move(inputs), std::move(outputs), schedule);
      },
      nb::arg("inputs"), nb::arg("outputs"), nb::arg("schedule") = te::Schedule{});
  m.def(
      "wait_background_builds",
      [] {
        nb::gil_scoped_release release;
        return te::wait_background_builds();
      },
      "Waits until the background builds of the TE fusion (the default MYCEL_TE_FUSION=async) "
      "are done; returns how many kernels they built in this process.");
  m.def(
      "background_stats",
      [] {
        const te::BackgroundStats s = te::background_stats();
        nb::dict d;
        d["queued"] = s.queued;
        d["built"] = s.built;
        d["failed"] = s.failed;
        d["refused"] = s.refused;
        d["dropped"] = s.dropped;
        d["compiles"] = s.compiles;
        return d;
      },
      "This process's background TE builds: queued (waiting now), built, failed, refused (the "
      "queue was full), dropped (freed before their turn), compiles (compiler runs by them).");
  m.def("register_function", &te::register_function,
        "Puts a built function in the table te_call ops refer to; returns its id.");
  m.def(
      "register_pyfunc",
      [](const std::string& name, PyInfer infer, nb::callable fn) {
        auto h = std::make_shared<HostFunction>();
        h->name = name;
        h->infer = meta_infer(std::move(infer));
        auto holder = std::make_shared<nb::object>(fn);  // the table is never destroyed
        h->run = [name, holder](const std::vector<Tensor>& in, std::vector<Tensor>& out) {
          nb::gil_scoped_acquire gil;
          nb::list args;
          for (auto& t : in) args.append(nb::cast(t));
          nb::object res = (*holder)(args);  // fn(list of Tensors)
          fill_outputs(name, res, out);
        };
        return register_host_function(h);
      },
      "A Python function on arrays as a custom_call host function: (name, infer, fn) -> id.");
  m.def(
      "register_aot",
      [](const std::string& spec, PyInfer infer) {
        std::shared_ptr<te::AotFunction> f;
        {
          nb::gil_scoped_release release;  // the compiler may run for a while
          f = te::load_aot(spec);
        }
        auto h = std::make_shared<HostFunction>();
        h->name = spec;
        h->infer = meta_infer(std::move(infer));
        h->run = [f](const std::vector<Tensor>& in, std::vector<Tensor>& out) {
          run_aot(*f, in, out);
        };
        int64_t id = register_host_function(h);
        return nb::make_tuple(id, f->library, f->cached, f->compile_seconds);
      },
      "Loads (compiling a source first) an aot function as a custom_call host function: "
      "(spec, infer) -> (id, library, cached, compile_seconds).");
  m.def("gradient_function", &te::gradient_function, "The id of a function's TE gradient.");
}

}  // namespace mycel::py

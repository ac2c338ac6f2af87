// _mycel.pynative: gradients of eager functions by recording (src/mycel/pynative). GradRecorder
// runs the function eagerly with a Recorder active, turns what it returned into the recorded
// graph's output and runs the cached gradient program; the eager-op and @jit hooks add nodes.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <optional>

#include "mycel/core/write_version.h"
#include "mycel/frontend/frontend.h"
#include "mycel/ir/printer.h"
#include "mycel/pynative/grad_cache.h"
#include "mycel/python/record_derived.h"

namespace mycel::py {

ir::ValuePtr py_to_value(nb::handle h);     // bind_graph.cc
ir::AbstractPtr abstract_of(nb::handle h);  // bind_graph.cc

namespace {

bool is_python_scalar(nb::handle h) {
  return PyBool_Check(h.ptr()) || PyLong_CheckExact(h.ptr()) || PyFloat_CheckExact(h.ptr());
}

void flatten_tensors(nb::handle h, std::vector<Tensor>& out) {
  if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
    for (nb::handle x : h) flatten_tensors(x, out);
    return;
  }
  out.push_back(to_tensor(h));
}

pynative::Recorder& active_recorder(const char* what) {
  pynative::Recorder* r = pynative::Recorder::current();
  if (!r) MYCEL_THROW(RuntimeError, "[grad] ", what, " called while no gradient is being recorded");
  return *r;
}

/// The node of a Python value passed to a recorded call or returned by the function.
ir::NodePtr node_of(pynative::Recorder& r, nb::handle h, const char* where) {
  if (nb::isinstance<Tensor>(h)) return r.input({nb::cast<Tensor>(h), nullptr});
  if (h.is_none() || is_python_scalar(h)) return r.constant(py_to_value(h));
  if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
    std::vector<ir::NodePtr> items;
    for (nb::handle x : h) items.push_back(node_of(r, x, where));
    return r.make_tuple(std::move(items));
  }
  MYCEL_THROW(TypeError, "[grad] ", where,
              " must be tensors, Python scalars or tuples of them in "
              "PYNATIVE_MODE, got ",
              py_type_name(h));
}

/// Maps the tensors of a @jit call's result to the call node (items of tuples by tuple_getitem).
void bind_result(pynative::Recorder& r, nb::handle out, const ir::NodePtr& n) {
  if (nb::isinstance<Tensor>(out)) {
    r.bind(nb::cast<Tensor>(out), n);
  } else if (nb::isinstance<nb::tuple>(out) || nb::isinstance<nb::list>(out)) {
    int64_t i = 0;
    for (nb::handle x : out) bind_result(r, x, r.getitem(n, i++));
  }
}

/// The program's flat outputs nested again as the graph's output abstract says.
nb::object structured(std::vector<Tensor>& outs, size_t& k, const ir::AbstractPtr& a) {
  if (a && a->kind() == ir::AbstractKind::kTuple) {
    nb::list l;
    for (const auto& item : static_cast<const ir::AbstractTuple&>(*a).items())
      l.append(structured(outs, k, item));
    return nb::tuple(l);
  }
  if (k >= outs.size())
    MYCEL_THROW(RuntimeError, "[grad] the gradient program returned fewer outputs than its graph");
  Tensor& t = outs[k++];
  if (!t.defined()) return nb::none();
  return nb::cast(std::move(t));
}

/// A Python object kept alive by C++ (dropped with the GIL held: cache entries die in Python).
std::shared_ptr<void> hold(nb::handle h) {
  return std::shared_ptr<void>(new nb::object(nb::borrow(h)), [](void* p) {
    nb::gil_scoped_acquire gil;
    delete static_cast<nb::object*>(p);
  });
}

/// mycel.grad in PYNATIVE_MODE: one per grad function, holding its compiled programs.
class GradRecorder {
 public:
  explicit GradRecorder(ad::GradSpec spec)
      : sens_param_(spec.sens_param), cache_(std::move(spec)) {}

  nb::object call(nb::handle fn, nb::handle weights, nb::args args) {
    size_t n = args.size();
    if (sens_param_) {
      if (n == 0)
        MYCEL_THROW(TypeError, "[grad] sens_param=True needs the sensitivity as the last argument");
      --n;
    }
    nb::object name = nb::getattr(fn, "__name__", nb::str(py_type_name(fn).c_str()));
    pynative::Recorder r(nb::cast<std::string>(nb::str(name)));
    std::vector<Tensor> arg_tensors;
    nb::list fn_args;
    for (size_t i = 0; i < n; ++i) {
      nb::object a = nb::borrow(args[i]);
      std::string pname = "x" + std::to_string(i);
      if (nb::isinstance<Tensor>(a)) {
        Tensor t = nb::cast<Tensor>(a);
        // The same tensor passed twice: fn gets a copy the second time, so each position keeps
        // its own parameter and gradient (as in graph mode).
        if (r.knows(t)) a = nb::cast(t = t.clone());
        r.add_argument(t, pname);
      } else {
        r.add_argument_value(abstract_of(a), pname);
      }
      fn_args.append(a);
      arg_tensors.push_back(to_tensor(a));
    }
    if (!weights.is_none())
      for (nb::handle w : weights) {
        nb::object wn = nb::getattr(w, "name", nb::none());
        r.add_weight(to_tensor(w),
                     wn.is_none() ? std::string("weight") : nb::cast<std::string>(nb::str(wn)));
      }
    // The recording run: fn executes eagerly; every op it runs lands in r.
    r.activate();
    nb::object out = fn(*nb::tuple(fn_args));
    ir::NodePtr out_node = node_of(r, out, "the function's outputs");
    last_.emplace(r.finish(out_node));
    pynative::Recording& rec = *last_;

    std::vector<Tensor>
        sens;  // a tuple sensitivity (for a tuple output) flattened, as programs take it
    ir::AbstractPtr sens_abs;
    if (sens_param_) {
      flatten_tensors(args[n], sens);
      sens_abs = abstract_of(args[n]);
    }
    pynative::CompiledGrad& c = cache_.get(rec, sens_abs);
    std::vector<Tensor> outs;
    {
      nb::gil_scoped_release release;
      outs = cache_.run(c, rec, std::move(arg_tensors), sens);
    }
    size_t k = 0;
    return structured(outs, k, c.step.graph->output()->abstract());
  }

  const pynative::GradCache& cache() const { return cache_; }

  /// The last recorded graph as text (before specialization).
  std::string last_ir() const { return last_ ? ir::print(*last_->graph) : std::string(); }

  /// Names of the graphs the last recorded graph calls (one per @jit call).
  std::vector<std::string> last_calls() const {
    std::vector<std::string> names;
    if (!last_) return names;
    for (const ir::NodePtr& n : last_->graph->toposort())
      if (ir::FuncGraph* g = ir::constant_graph(ir::as_apply(n)->callee()))
        names.push_back(g->name());
    return names;
  }

 private:
  bool sens_param_;
  pynative::GradCache cache_;
  std::optional<pynative::Recording> last_;  // its graphs live on in the cache entry
};

}  // namespace

/// The eager-op hook (bind_ops.cc): `flat` are the call's inputs as given, `tensors` the same
/// converted before any promotion cast (scalar slots are ignored here).
void record_eager_op(const OpDef& op, const std::vector<nb::handle>& flat,
                     const std::vector<Tensor>& tensors, const Attrs& attrs,
                     std::vector<Tensor>& outs) {
  pynative::Recorder* r = pynative::Recorder::current();
  if (!r) return;
  std::vector<pynative::RecordedArg> in(flat.size());
  for (size_t i = 0; i < flat.size(); ++i) {
    if (flat[i].is_none() || is_python_scalar(flat[i]))
      in[i].value = py_to_value(flat[i]);
    else
      in[i].tensor = tensors[i];
  }
  r->record_op(op, attrs, in, outs);
}

/// A tensor made by a Tensor method outside op dispatch (astype, clone, the views behind
/// indexing), while recording: the op it stands for is recorded with `in` as its input, so
/// gradients flow through it. Returns `out` (a copy if it aliases a tensor already recorded).
Tensor record_derived(const char* op_name, const std::map<std::string, AttrValue>& attrs,
                      const Tensor& in, Tensor out) {
  pynative::Recorder* r = pynative::Recorder::current();
  if (!r) return out;
  const OpDef& op = Registry::get().at(op_name);
  std::vector<Tensor> outs{std::move(out)};
  r->record_op(op, make_attrs(op, attrs), {{in, nullptr}}, outs);
  return outs[0];
}

void init_pynative(nb::module_& m) {
  nb::module_ p =
      m.def_submodule("pynative", "PyNative mode: gradients by recording eager ops into IR.");
  p.def(
      "recording", [] { return pynative::Recorder::current() != nullptr; },
      "Whether a gradient is being recorded on this thread.");
  p.def(
      "assign_recorded",
      [](Tensor& target, const Tensor& value) {
        pynative::Recorder& r = active_recorder("assign_recorded");
        MYCEL_CHECK(value.shape() == target.shape() && value.dtype() == target.dtype(), ShapeError,
                    "[setitem] the updated tensor has shape ", shape_str(value.shape()),
                    " and dtype ", dtype_name(value.dtype()), ", the target ",
                    shape_str(target.shape()), " and ", dtype_name(target.dtype()));
        ir::NodePtr n = r.input({value, nullptr});
        convert_elements(value.data(), value.dtype(), target.data(), target.dtype(),
                         target.numel());
        if (target.defined()) note_write(*target.storage());
        r.bind(target, n);
      },
      nb::arg("target"), nb::arg("value"),
      "x[key] = v while recording: writes the recorded functional update `value` into `target` "
      "and makes later reads of `target` read its node.");
  p.def(
      "record_jit_call",
      [](nb::handle parsed, nb::tuple args, nb::handle out) {
        pynative::Recorder& r = active_recorder("record_jit_call");
        auto& pm = nb::cast<frontend::ParsedModule&>(parsed);
        std::vector<ir::NodePtr> in;
        for (nb::handle a : args) in.push_back(node_of(r, a, "arguments of a @jit function"));
        // Parameters past the arguments are the function's weights (a Cell's method).
        const auto& params = pm.entry->parameters();
        for (size_t i = in.size(); i < params.size(); ++i) {
          auto* prm = ir::as_parameter(params[i]);
          if (!prm->is_weight())
            MYCEL_THROW(TypeError, "[jit] @", pm.entry->name(), " takes ", params.size(),
                        " arguments, got ", args.size());
          in.push_back(r.input({prm->bound(), nullptr}));
        }
        ir::NodePtr call = r.record_call(pm.entry, std::move(in), hold(parsed));
        bind_result(r, out, call);
      },
      nb::arg("parsed"), nb::arg("args"), nb::arg("out"),
      "Records one call of a parsed @jit function whose (compiled) result was `out`.");
  nb::class_<GradRecorder>(p, "GradRecorder", "A gradient taken by recording eager execution.")
      .def(
          "__init__",
          [](GradRecorder* self, std::vector<int> positions, bool positions_tuple,
             bool with_weights, bool return_value, bool has_aux, bool sens_param) {
            ad::GradSpec spec;
            spec.positions = std::move(positions);
            spec.positions_tuple = positions_tuple;
            spec.with_weights = with_weights;
            spec.return_value = return_value;
            spec.has_aux = has_aux;
            spec.sens_param = sens_param;
            new (self) GradRecorder(std::move(spec));
          },
          nb::arg("positions"), nb::arg("positions_tuple"), nb::arg("with_weights"),
          nb::arg("return_value"), nb::arg("has_aux"), nb::arg("sens_param"))
      .def("__call__", &GradRecorder::call, nb::arg("fn"), nb::arg("weights").none(),
           nb::arg("args"),
           "(fn, weights, *args): runs fn(*args) eagerly while recording, then the cached gradient "
           "program.")
      .def_prop_ro(
          "compiles", [](const GradRecorder& g) { return g.cache().compiles(); },
          "How many gradient programs were compiled (one per recorded structure).")
      .def_prop_ro("cache_hits", [](const GradRecorder& g) { return g.cache().hits(); })
      .def_prop_ro("num_programs", [](const GradRecorder& g) { return g.cache().size(); })
      .def("last_ir", &GradRecorder::last_ir, "The last recorded graph (before specialization).")
      .def("last_calls", &GradRecorder::last_calls,
           "Graphs called by the last recorded graph (@jit calls).");
}

}  // namespace mycel::py

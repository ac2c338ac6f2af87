// Graph-mode glue: IR values <-> Python objects, compile-time evaluation of Python callables for
// analysis, and _mycel.graph.specialize(parsed, *args) for tests and tools.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>

#include "mycel/ad/ad.h"
#include "mycel/analysis/abstract_util.h"
#include "mycel/analysis/analysis.h"
#include "mycel/backend/program.h"
#include "mycel/frontend/frontend.h"
#include "mycel/frontend/py_convert.h"
#include "mycel/ir/printer.h"
#include "mycel/ir/raised.h"
#include "mycel/ops/batch.h"
#include "mycel/opt/opt.h"
#include "mycel/pipeline/pipeline.h"
#include "mycel/pipeline/semi_auto.h"
#include "mycel/pipeline/strategy_search.h"
#include "mycel/python/bind_records.h"
#include "mycel/python/pipeline_handle.h"

namespace mycel::py {

frontend::ParsedModule parse_or_raise(nb::handle obj);  // bind_frontend.cc
nb::dict graph_to_py(const ir::FuncGraph& g);           // bind_export.cc

/// Python object for a compile-time value (nullptr-free: None for none).
nb::object value_to_py(const ir::Value& v) {
  using K = ir::ValueKind;
  switch (v.kind()) {
    case K::kNone:
      return nb::none();
    case K::kBool:
      return nb::bool_(static_cast<const ir::BoolValue&>(v).value());
    case K::kInt:
      return nb::int_(static_cast<const ir::IntValue&>(v).value());
    case K::kFloat:
      return nb::float_(static_cast<const ir::FloatValue&>(v).value());
    case K::kStr:
      return nb::str(static_cast<const ir::StrValue&>(v).value().c_str());
    case K::kDType:
      return nb::cast(static_cast<const ir::DTypeValue&>(v).value());
    case K::kTensor:
      return nb::cast(static_cast<const ir::TensorValue&>(v).tensor());
    case K::kTuple:
    case K::kList: {
      nb::list l;
      for (const auto& item : static_cast<const ir::SequenceValue&>(v).items())
        l.append(value_to_py(*item));
      return v.kind() == K::kTuple ? nb::object(nb::tuple(l)) : nb::object(l);
    }
    case K::kDict: {
      nb::dict d;
      for (const auto& [k, val] : static_cast<const ir::DictValue&>(v).items())
        d[value_to_py(*k)] = value_to_py(*val);
      return d;
    }
    case K::kExternal:
      return static_cast<const frontend::PyObjectValue&>(v).object();
    case K::kGraph:
    case K::kOp:
    case K::kPrim:
    case K::kGradOp:  // a function value (isinstance's witness): a Python function standing in
      return nb::module_::import_("mycel.common.graph_syntax").attr("function_stand_in")(v.repr());
    default:
      break;
  }
  MYCEL_THROW(NotSupported, "graph mode: the value ", v.repr(),
              " cannot be passed to Python code at compile time");
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
  if (is_record(h)) return record_abstract(h);  // a CSRTensor, a @jit_class object
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

namespace {

/// Sets the Python error for a RaisedError: an exception class is instantiated without
/// arguments and an instance is copied (a Program raises it on every run), as `raise` does.
void raise_python(const ir::RaisedError& e) {
  nb::object exc;
  try {
    if (e.exception->kind() != ir::ValueKind::kExternal)
      MYCEL_THROW(TypeError, "exceptions must derive from BaseException");
    nb::handle o = static_cast<const frontend::PyObjectValue&>(*e.exception).object();
    if (PyExceptionClass_Check(o.ptr())) {
      exc = o();
    } else if (PyExceptionInstance_Check(o.ptr())) {
      try {
        exc = nb::module_::import_("copy").attr("copy")(o);
      } catch (nb::python_error&) {  // not copyable: raise the object itself
        exc = nb::borrow(o);
      }
    } else {
      PyErr_SetString(PyExc_TypeError, "exceptions must derive from BaseException");
      return;
    }
    if (e.loc.known()) {
      std::string where = e.loc.line_str();
      nb::object notes = nb::getattr(exc, "__notes__", nb::none());
      bool noted = false;
      if (!notes.is_none())
        for (nb::handle n : notes)
          noted |= nb::isinstance<nb::str>(n) && nb::cast<std::string>(n) == where;
      if (!noted) exc.attr("add_note")(where);
    }
    // The calls that led there, innermost first, once each: those analysis unwound through
    // (a compile-time raise), or those inlining flattened (a raise the running program reached).
    for (const std::string& caller : e.callers.empty() ? ir::inlined_callers(e.loc) : e.callers) {
      std::string note = "  " + caller;
      nb::object notes = nb::getattr(exc, "__notes__", nb::none());
      bool noted = false;
      if (!notes.is_none())
        for (nb::handle n : notes)
          noted |= nb::isinstance<nb::str>(n) && nb::cast<std::string>(n) == note;
      if (!noted) exc.attr("add_note")(note);
    }
  } catch (nb::python_error& err) {
    err.restore();
    return;
  } catch (const TypeError& err) {
    PyErr_SetString(PyExc_TypeError, err.what());
    return;
  }
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
}

/// A Tensor(shape=[None, ...]) input signature: dims given as None are dynamic.
ir::AbstractPtr abstract_of_spec(nb::handle h) {
  if (nb::hasattr(h, "_dynamic_shape")) {
    Shape s;
    for (nb::handle d : h.attr("_dynamic_shape"))
      s.push_back(d.is_none() ? ir::kDynamic : nb::cast<int64_t>(d));
    return std::make_shared<ir::AbstractTensor>(s, nb::cast<const Tensor&>(h).dtype());
  }
  // a tuple or list input whose items are such placeholders (set_inputs((Tensor(shape=[None]),
  // ..)))
  if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
    bool any_dynamic = false;
    for (nb::handle x : h) any_dynamic |= nb::hasattr(x, "_dynamic_shape");
    if (any_dynamic) {
      std::vector<ir::AbstractPtr> items;
      for (nb::handle x : h) items.push_back(abstract_of_spec(x));
      return std::make_shared<ir::AbstractTuple>(std::move(items), nb::isinstance<nb::list>(h));
    }
  }
  return abstract_of(h);
}

/// One function, method or Cell in graph mode: parsed once, then specialized, optimized and
/// compiled to a Program once per input signature (the compile cache); calls run the Program.
class SplitGrad;

class CompiledGraph {
 public:
  friend class SplitGrad;
  explicit CompiledGraph(nb::handle obj) : parsed_(parse_or_raise(obj)) {}

  /// The gradient of obj per `spec`; `weights` (Parameters) are matched to the graph's weight
  /// parameters by storage, and ones the function never reads become unused weight parameters.
  CompiledGraph(nb::handle obj, ad::GradSpec spec, nb::handle weights)
      : parsed_(parse_or_raise(obj)), grad_(spec) {
    if (weights.is_none()) return;
    grad_->with_weights = true;
    grad_->weight_params = weight_indices(weights);
  }

  /// obj under a chain of transforms (innermost first), each a dict: {"kind": "grad", GradSpec's
  /// fields, "weights"} or {"kind": "vmap", "in_axes", "out_axes"} (see mycel.ops.vmap).
  CompiledGraph(nb::handle obj, nb::list chain) : parsed_(parse_or_raise(obj)) {
    std::vector<pipeline::Transform> c;
    for (nb::handle d : chain) {
      pipeline::Transform t;
      if (nb::cast<std::string>(d["kind"]) == "vmap") {
        t.kind = pipeline::Transform::Kind::kVmap;
        t.vmap.in_axes = batch_axes(d["in_axes"]);
        t.vmap.out_axes = batch_axes(d["out_axes"]);
      } else {
        ad::GradSpec& g = t.grad;
        g.positions = nb::cast<std::vector<int>>(d["positions"]);
        g.positions_tuple = nb::cast<bool>(d["positions_tuple"]);
        g.return_value = nb::cast<bool>(d["return_value"]);
        g.has_aux = nb::cast<bool>(d["has_aux"]);
        g.sens_param = nb::cast<bool>(d["sens_param"]);
        if (!d["weights"].is_none()) {
          g.with_weights = true;
          g.weight_params = weight_indices(d["weights"]);
        }
      }
      c.push_back(std::move(t));
    }
    chain_ = std::move(c);
  }

  /// in_axes / out_axes as MindSpore spells them: an int, None, or a (nested) tuple of those.
  static ad::BatchAxes batch_axes(nb::handle h) {
    if (h.is_none()) return ad::BatchAxes::none();
    if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
      std::vector<ad::BatchAxes> items;
      for (nb::handle x : h) items.push_back(batch_axes(x));
      return ad::BatchAxes::tuple(std::move(items));
    }
    return ad::BatchAxes::at(nb::cast<int64_t>(h));
  }

  /// The entry's parameter index of each weight (matched by storage; unread ones are added).
  std::vector<int> weight_indices(nb::handle weights) {
    std::vector<int> out;
    for (nb::handle w : weights) {
      const Tensor& t = nb::cast<const Tensor&>(w);
      const auto& params = parsed_.entry->parameters();
      int index = -1;
      for (size_t i = 0; i < params.size(); ++i) {
        auto* p = static_cast<ir::Parameter*>(params[i].get());
        if (p->is_weight() && p->bound().data() == t.data()) index = static_cast<int>(i);
      }
      if (index < 0) {
        nb::object n = nb::getattr(w, "name", nb::none());
        ir::NodePtr p = parsed_.entry->add_parameter(n.is_none() ? std::string("weight")
                                                                 : nb::cast<std::string>(n));
        static_cast<ir::Parameter*>(p.get())->bind(t);
        keep_alive_.push_back(nb::borrow(w));
        index = static_cast<int>(parsed_.entry->parameters().size()) - 1;
      }
      out.push_back(index);
    }
    return out;
  }

  nb::object call(nb::args args) { return run(signature(args), args); }

  /// Runs with a fixed signature (Cell.set_inputs): dims given as None accept any size.
  nb::object run_with_signature(nb::handle spec, nb::args args) {
    std::vector<ir::AbstractPtr> abs;
    for (nb::handle h : spec) abs.push_back(abstract_of_spec(h));
    if (abs.size() != args.size())
      MYCEL_THROW(TypeError, "graph mode: set_inputs gave ", abs.size(),
                  " inputs, the call passes ", args.size());
    pack_varargs(abs);  // construct(self, *inputs) with set_inputs (MindSpore's grad wrappers)
    return run(abs, args);
  }

  /// Dataset sink mode: `steps` runs of the compiled step, each on the next row of the running
  /// dataset pipeline, in one call: no Python per step. The pipeline's threads have the rows
  /// ready (its prefetch queue); the GIL is released while waiting and running. The signature
  /// is computed from the first row and again only when a row's shapes or dtypes change. Rows
  /// continue across the pipeline's epoch ends (num_epochs=-1 repeats the dataset, as
  /// MindSpore's sink_size does), or, with until_epoch_end, the call returns at the next one
  /// (Model.train's epoch without sinking). Returns (the last step's outputs or None, steps run).
  nb::object run_sink(nb::handle pipeline, int64_t steps, nb::handle spec, bool until_epoch_end) {
    if (steps < 1) MYCEL_THROW(ValueError, "sink: steps must be >= 1, got ", steps);
    data::engine::Pipeline& pipe = pipeline_of(pipeline);
    using Status = data::engine::Pipeline::Status;
    data::Row row;
    std::vector<Tensor> outs;
    std::vector<std::pair<Shape, DType>> meta;  // of the rows the current step was compiled for
    pipeline::Step* step = nullptr;
    bool rows_since_epoch_end =
        true;  // an epoch end left by the previous call is not an empty epoch
    int64_t done = 0;
    using Clock = std::chrono::steady_clock;
    const Clock::time_point call_start = Clock::now();
    while (done < steps) {
      Status st;
      {
        nb::gil_scoped_release release;
        const Clock::time_point t0 = Clock::now();
        st = pipe.next(row, 100);
        sink_stats_.wait_ns += ns_since(t0);
      }
      if (st == Status::kTimeout) {
        if (PyErr_CheckSignals() != 0) throw nb::python_error();
        continue;
      }
      if (st == Status::kEnd) {
        if (until_epoch_end) break;
        MYCEL_THROW(ValueError, "sink: the dataset ended after ", done, " of ", steps, " steps");
      }
      if (st == Status::kEpochEnd && until_epoch_end)
        break;  // consumed: the next call starts an epoch
      if (st == Status::kEpochEnd) {
        if (!rows_since_epoch_end) MYCEL_THROW(ValueError, "sink: the training dataset is empty");
        rows_since_epoch_end = false;
        continue;
      }
      rows_since_epoch_end = true;
      if (!step || !same_meta(row, meta)) {
        nb::list args;
        for (const Tensor& t : row) args.append(nb::cast(t));
        std::vector<ir::AbstractPtr> abs;
        if (spec.is_none()) {
          abs = signature(nb::borrow<nb::args>(nb::tuple(args)));
        } else {
          for (nb::handle h : spec) abs.push_back(abstract_of_spec(h));
          if (abs.size() != row.size())
            MYCEL_THROW(TypeError, "graph mode: set_inputs gave ", abs.size(),
                        " inputs, the dataset rows have ", row.size(), " columns");
        }
        step = &compiled(abs);
        for (bool c : step->constant_args)
          if (c) MYCEL_THROW(TypeError, "sink: every input of the step must be a tensor column");
        meta.clear();
        for (const Tensor& t : row) meta.emplace_back(t.shape(), t.dtype());
      }
      {
        nb::gil_scoped_release release;
        const Clock::time_point t0 = Clock::now();
        outs = step->program->run(row);
        sink_stats_.run_ns += ns_since(t0);
      }
      ++done;
      // A pipeline on this thread (no lookahead) never times out above: look for Ctrl-C here.
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
    }
    sink_stats_.steps += done;
    sink_stats_.total_ns += ns_since(call_start);
    if (!step) return nb::make_tuple(nb::none(), done);
    size_t k = 0;
    return nb::make_tuple(structured(outs, k, step->output), done);
  }

  /// Where run_sink's time went since the last reset, for the epoch breakdown
  /// (bench/bench_epoch_lookahead.py): steps, and seconds waiting for the pipeline's next row
  /// (its build, on the consumer), running the step, and in all (the rest: the loop itself and
  /// a first call's compile).
  nb::dict sink_stats(bool reset) {
    nb::dict d;
    d["steps"] = sink_stats_.steps;
    d["wait_s"] = sink_stats_.wait_ns * 1e-9;
    d["run_s"] = sink_stats_.run_ns * 1e-9;
    d["total_s"] = sink_stats_.total_ns * 1e-9;
    if (reset) sink_stats_ = SinkStats{};
    return d;
  }

  std::string ir(nb::args args) { return ir::print(*compiled(signature(args)).graph); }
  /// The optimized graph for a signature as Python data (export), with which entry arguments
  /// were folded into it as constants.
  nb::dict graph_data(nb::args args) {
    pipeline::Step& s = compiled(signature(args));
    nb::dict d = graph_to_py(*s.graph);
    nb::list folded;
    for (bool b : s.constant_args) folded.append(b);
    d["constant_args"] = folded;
    return d;
  }
  /// The specialized, optimized graph for these arguments (what the strategy search reads).
  const ir::FuncGraph& graph_for(nb::args args) { return *compiled(signature(args)).graph; }
  /// The sharding pass's decisions for these arguments, nothing built (pipeline::plan_sharding).
  void plan_sharding(nb::args args) {
    pipeline::plan_sharding(parsed_.entry, signature(args), options_);
  }
  /// The gradient step for these arguments (the sensitivity last) cut at its sensitivity input
  /// (pipeline::split_at_sens).
  SplitGrad* split_at_sens(nb::args args);
  size_t num_programs() const { return programs_.size(); }
  const pipeline::StepCache& cache() const { return programs_; }
  backend::Program& program_for(nb::args args) { return *compiled(signature(args)).program; }

 private:
  struct SinkStats {
    int64_t steps = 0, wait_ns = 0, run_ns = 0, total_ns = 0;
  };
  SinkStats sink_stats_;  // run_sink's counters (two clock reads per pipeline wait and step)
  static int64_t ns_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                t0)
        .count();
  }

  std::vector<ir::AbstractPtr> signature(nb::args args) {
    std::vector<ir::AbstractPtr> abs;
    // A Tensor(shape=[None, ...]) placeholder names dynamic dims (program_text, ir, stats).
    for (nb::handle h : args) abs.push_back(abstract_of_spec(h));
    pack_varargs(abs);
    return abs;
  }

  /// construct(self, x, *rest): the trailing arguments form one tuple.
  void pack_varargs(std::vector<ir::AbstractPtr>& abs) const {
    int v = parsed_.vararg;
    if (v >= 0 && static_cast<size_t>(v) <= abs.size() && !grad_ && !chain_) {
      std::vector<ir::AbstractPtr> rest(abs.begin() + v, abs.end());
      abs.resize(v);
      abs.push_back(std::make_shared<ir::AbstractTuple>(std::move(rest)));
    }
  }

  /// The compiled step for a signature, built on first use (pipeline::compile_step).
  pipeline::Step& compiled(const std::vector<ir::AbstractPtr>& abs) {
    std::string key = analysis::signature_key(abs);
    // A program compiled under other parallel settings splits differently (or not at all).
    if (const parallel::SemiAutoConfig& pc = parallel::semi_auto_config(); pc.enabled) {
      key += "|semi_auto:" + std::to_string(pc.device_num) + ":" + std::to_string(pc.rank) + "+" +
             std::to_string(pc.rank_base) + (pc.full_batch ? "" : ":split");
      if (pc.search)  // the search's answer depends on its mode, cluster and memory limit
        key += ":" + pc.search_mode + ":" + pc.topology_text + ":" +
               std::to_string(pc.memory_limit) + ":" + pc.loaded_text;
    }
    if (pipeline::Step* s = programs_.find(key)) return *s;
    if (chain_)
      return programs_.insert(key,
                              pipeline::compile_transformed(parsed_.entry, abs, *chain_, options_));
    return programs_.insert(
        key, pipeline::compile_step(parsed_.entry, abs, grad_ ? &*grad_ : nullptr, options_));
  }

  nb::object run(const std::vector<ir::AbstractPtr>& abs, nb::args args) {
    pipeline::Step& e = compiled(abs);
    backend::Program& p = *e.program;
    std::vector<Tensor> inputs;
    inputs.reserve(args.size());
    for (size_t k = 0; k < args.size(); ++k)  // the varargs tuple (last parameter) is never folded
      if (k >= e.constant_args.size() || !e.constant_args[k] ||
          (parsed_.vararg >= 0 && static_cast<int>(k) >= parsed_.vararg))
        flatten_input(args[k], inputs);
    std::vector<Tensor> outs;
    {
      nb::gil_scoped_release release;
      outs = p.run(inputs);
    }
    size_t k = 0;
    return structured(outs, k, e.output);
  }

  static bool same_meta(const data::Row& row, const std::vector<std::pair<Shape, DType>>& meta) {
    if (row.size() != meta.size()) return false;
    for (size_t i = 0; i < row.size(); ++i)
      if (row[i].shape() != meta[i].first || row[i].dtype() != meta[i].second) return false;
    return true;
  }

  /// Tuple and list arguments reach the Program as their items, in order (as its parameters are).
  /// Python scalars and None are compile-time constants wherever they sit (the backend's
  /// entry_val), so they are not passed.
  static void flatten_input(nb::handle h, std::vector<Tensor>& out) {
    if (is_record(h)) {  // a record: its run-time fields, as its abstract holds them
      for (const nb::object& v : record_parts(h).values) flatten_input(v, out);
      return;
    }
    if (nb::isinstance<nb::tuple>(h) || nb::isinstance<nb::list>(h)) {
      for (nb::handle x : h) flatten_input(x, out);
      return;
    }
    if (!nb::isinstance<Tensor>(h) &&
        (h.is_none() || PyBool_Check(h.ptr()) || PyLong_Check(h.ptr()) || PyFloat_Check(h.ptr()) ||
         nb::isinstance(h, nb::module_::import_("numpy").attr("generic"))))
      return;
    out.push_back(to_tensor(h));
  }

  /// The Program's flat outputs nested again as the graph's output abstract says.
  static nb::object structured(std::vector<Tensor>& outs, size_t& k, const ir::AbstractPtr& a) {
    if (auto* r = analysis::detail::as_record(a)) {  // a record output: the Python object again
      nb::list values;
      for (size_t i = 0; i < r->names().size(); ++i)
        values.append(r->statics()[i] ? value_to_py(*r->statics()[i])
                                      : structured(outs, k, r->items()[r->item_of(i)]));
      return rebuild_record(*r, values);
    }
    if (auto* d = dynamic_cast<const analysis::detail::DictAbs*>(a.get())) {  // a dict output
      nb::dict out;
      for (size_t i = 0; i < d->keys().size(); ++i)
        out[value_to_py(*d->keys()[i])] = structured(outs, k, d->items()[i]);
      return out;
    }
    if (a && a->kind() == ir::AbstractKind::kTuple) {  // a list stays a list, as eagerly
      nb::list l;
      for (const auto& item : static_cast<const ir::AbstractTuple&>(*a).items())
        l.append(structured(outs, k, item));
      if (static_cast<const ir::AbstractTuple&>(*a).is_list()) return l;
      return nb::tuple(l);
    }
    if (k >= outs.size())
      MYCEL_THROW(RuntimeError, "graph mode: the program returned fewer outputs than its graph");
    Tensor& t = outs[k++];
    if (!t.defined()) return nb::none();
    return nb::cast(std::move(t));
  }

  frontend::ParsedModule parsed_;
  std::optional<ad::GradSpec> grad_;
  std::optional<std::vector<pipeline::Transform>> chain_;
  std::vector<nb::object> keep_alive_;
  pipeline::Options options_ = pipeline::Options::from_env();
  pipeline::StepCache programs_{options_.max_programs};
};

/// A gradient cut in two (pipeline::SplitStep): forward(*inputs) -> (value, [residuals]),
/// backward(residuals, sens) -> the gradients.
class SplitGrad {
 public:
  explicit SplitGrad(pipeline::SplitStep s) : s_(std::move(s)) {}

  nb::tuple forward(nb::args args) {
    std::vector<Tensor> inputs;
    for (nb::handle h : args) CompiledGraph::flatten_input(h, inputs);
    std::vector<Tensor> outs;
    {
      nb::gil_scoped_release release;
      outs = s_.forward_program->run(inputs);
    }
    size_t k = 0;
    nb::object value = CompiledGraph::structured(outs, k, s_.value);
    nb::list residuals;
    for (; k < outs.size(); ++k) residuals.append(nb::cast(std::move(outs[k])));
    return nb::make_tuple(value, residuals);
  }

  nb::object backward(nb::list residuals, nb::handle sens) {
    if (residuals.size() != s_.num_residuals)
      MYCEL_THROW(TypeError, "[split_at_sens] backward takes ", s_.num_residuals,
                  " residuals, got ", residuals.size());
    std::vector<Tensor> inputs;
    for (nb::handle h : residuals) inputs.push_back(to_tensor(h));
    CompiledGraph::flatten_input(sens, inputs);
    std::vector<Tensor> outs;
    {
      nb::gil_scoped_release release;
      outs = s_.backward_program->run(inputs);
    }
    size_t k = 0;
    return CompiledGraph::structured(outs, k, s_.grads);
  }

  size_t num_residuals() const { return s_.num_residuals; }
  std::string ir() const { return ir::print(*s_.forward) + "\n" + ir::print(*s_.backward); }

 private:
  pipeline::SplitStep s_;
};

SplitGrad* CompiledGraph::split_at_sens(nb::args args) {
  if (!grad_ || !grad_->sens_param || !grad_->return_value)
    MYCEL_THROW(TypeError,
                "split_at_sens: needs a gradient compiled with return_value=True and "
                "sens_param=True");
  // args are the function's inputs; the sensitivity is shaped as its value, which the caller
  // does not know before the forward has run: specialized here (in a module thrown away).
  std::vector<ir::AbstractPtr> abs = signature(args);
  ir::Module scratch;
  abs.push_back(analysis::specialize(scratch, parsed_.entry, abs)->output()->abstract());
  return new SplitGrad(pipeline::split_at_sens(compiled(abs), options_));
}

}  // namespace

void init_graph(nb::module_& m) {
  nb::module_ g = m.def_submodule("graph", "Graph mode: specialization, optimization, execution.");
  init_records();  // analysis asks the glue for record classes' methods
  // Analysis calls Python helpers on constant arguments at compile time (math, numpy, ...).
  analysis::set_const_eval_hook(
      [](const ir::Value& callee, const std::vector<ir::ValuePtr>& args) -> ir::ValuePtr {
        if (callee.kind() != ir::ValueKind::kExternal) return nullptr;
        nb::gil_scoped_acquire gil;
        nb::list py_args;
        for (const auto& a : args) py_args.append(value_to_py(*a));
        nb::object fn = static_cast<const frontend::PyObjectValue&>(callee).object();
        try {
          return py_to_value(fn(*nb::tuple(py_args)));
        } catch (nb::python_error& e) {  // raised again as itself, located by analysis
          throw ir::RaisedError(frontend::py_object(e.value()), {});
        }
      });
  // A Python exception of the user's code (raise, assert, a helper run at compile time), from
  // analysis or from a running Program: raised as Python would, the source line as a note.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const ir::RaisedError& e) {
      raise_python(e);
    }
  });
  analysis::set_opaque_op_hook([](const ir::Value& callee) -> analysis::OpaqueOp {
    if (callee.kind() != ir::ValueKind::kExternal) return {};
    nb::gil_scoped_acquire gil;
    nb::object fn = static_cast<const frontend::PyObjectValue&>(callee).object();
    // A Primitive object bound to a registry op (P.BitwiseXor(), P.ReduceSum(keep_dims=True)):
    // the op with the attributes the Primitive was made with.
    nb::object bound = nb::getattr(fn, "_bound", nb::none());
    if (!bound.is_none() && nb::cast<std::string>(bound.type().attr("__name__")) == "OpHandle") {
      const OpDef* op = Registry::get().find(nb::cast<std::string>(bound.attr("name")));
      if (!op) return {};
      std::vector<AttrValue> preset(op->attrs.size());
      for (auto [k, v] : nb::cast<nb::dict>(bound.attr("preset"))) {
        int i = op->attr_index(nb::cast<std::string>(k));
        if (i >= 0) preset[i] = py::to_attr(*op, op->attrs[i], v);
      }
      // A required attribute left for the call (P.StridedSlice()(*(x, begin, end, strides))):
      // the preset values as they are; the call's arguments complete and check them.
      for (size_t i = 0; i < preset.size(); ++i)
        if (std::holds_alternative<std::monostate>(preset[i]) &&
            std::holds_alternative<std::monostate>(op->attrs[i].default_value) &&
            !op->attrs[i].optional)
          return {op, Attrs(op, std::move(preset))};
      return {op, make_attrs(*op, std::move(preset))};
    }
    // mycel.ops shows each op as an OpFunction, a partial of the entry point (ops/signature.py)
    nb::object inner = nb::getattr(fn, "func", nb::none());
    if (!inner.is_none() && PyCallable_Check(inner.ptr())) fn = inner;
    nb::object name = nb::getattr(fn, "__name__", nb::none());
    if (!nb::isinstance<nb::str>(name)) return {};
    std::string n = nb::cast<std::string>(name);
    nb::object ops = nb::module_::import_("mycel._mycel").attr("ops");
    if (!nb::getattr(ops, n.c_str(), nb::none()).is(fn)) return {};
    return {Registry::get().find(n), Attrs{}};
  });
  g.def(
      "specialize",
      [](frontend::ParsedModule& p, nb::args args, bool optimize) {
        std::vector<ir::AbstractPtr> abs;
        for (nb::handle a : args) abs.push_back(abstract_of(a));
        ir::FuncGraph* s = analysis::specialize(*p.module, p.entry, abs);
        if (optimize) opt::optimize(s);
        return ir::print(*s);
      },
      nb::arg("parsed"), nb::arg("args"), nb::arg("optimize") = true,
      "Specializes (and optimizes) a parsed function for example arguments; returns the IR text.");
  nb::class_<CompiledGraph>(g, "CompiledGraph", "A function, method or Cell compiled to graphs.")
      .def("__call__", &CompiledGraph::call)
      .def("run_with_signature", &CompiledGraph::run_with_signature)
      .def("run_sink", &CompiledGraph::run_sink, nb::arg("pipeline").none(), nb::arg("steps"),
           nb::arg("spec").none(), nb::arg("until_epoch_end") = false,
           "Dataset sink mode: `steps` runs of the step on the pipeline's next rows, in one call; "
           "returns (last outputs, steps run).")
      .def("sink_stats", &CompiledGraph::sink_stats, nb::arg("reset") = true,
           "run_sink's counters since the last reset: steps, wait_s (the pipeline's next row), "
           "run_s (the steps), total_s.")
      .def("ir", &CompiledGraph::ir, "The specialized, optimized IR for these arguments.")
      .def("split_at_sens", &CompiledGraph::split_at_sens,
           "A gradient (return_value, sens_param) for these arguments cut at its sensitivity: a "
           "SplitGrad whose forward keeps the residuals its backward reads.")
      .def("plan_sharding", &CompiledGraph::plan_sharding,
           "Runs the sharding pass on the forward for these arguments without compiling: the "
           "layouts it wants for the weights it splits are kept (_mycel.autopar.take_planned).")
      .def("graph_data", &CompiledGraph::graph_data,
           "The specialized, optimized graph for these arguments as Python data (for export).")
      .def_prop_ro("num_programs", &CompiledGraph::num_programs)
      .def_prop_ro("cache_hits", [](const CompiledGraph& c) { return c.cache().hits(); })
      .def_prop_ro(
          "evictions", [](const CompiledGraph& c) { return c.cache().evictions(); },
          "Compiled signatures dropped as least recently used (MYCEL_MAX_PROGRAMS).")
      .def("stats",
           [](CompiledGraph& c, nb::args args) {
             backend::ProgramStats s = c.program_for(args).stats();
             nb::dict d;
             d["arena_bytes"] = s.arena_bytes;
             d["num_instructions"] = s.num_instructions;
             d["num_kernel_launches"] = s.num_kernel_launches;
             d["num_plans"] = s.num_plans;
             d["num_inplace"] = s.num_inplace;
             d["num_fused"] = s.num_fused;
             return d;
           })
      .def(
          "search_strategy",
          [](CompiledGraph& c, const std::string& topology, int device_num, const std::string& mode,
             double memory_limit, bool training, double optimizer_slots, nb::args args) {
            const parallel::search::Topology topo = parallel::search::parse_topology(topology);
            const ir::FuncGraph& g = c.graph_for(args);
            nb::gil_scoped_release release;
            return parallel::search::report_to_json(
                parallel::search::search_graph(g, topo, device_num, mode, memory_limit, training,
                                               optimizer_slots)
                    .report);
          },
          "Auto-parallel strategy search for these arguments on simulated devices; the report as "
          "JSON.")
      .def(
          "program_text",
          [](CompiledGraph& c, nb::args args) { return c.program_for(args).dump(); },
          "The compiled Program's instruction listing for these arguments (after fusion).");
  nb::class_<SplitGrad>(g, "SplitGrad", "A gradient cut at its sensitivity input.")
      .def("forward", &SplitGrad::forward,
           "The inputs less the sensitivity -> (value, [residual tensors]).")
      .def("backward", &SplitGrad::backward, nb::arg("residuals"), nb::arg("sens"),
           "(the forward's residuals, the sensitivity) -> the gradients.")
      .def_prop_ro("num_residuals", &SplitGrad::num_residuals)
      .def("ir", &SplitGrad::ir, "The forward and backward graphs' IR.");
  g.def(
      "compile_count", [] { return pipeline::compile_count(); },
      "How many graphs this process compiled (every graph-mode signature and PyNative gradient "
      "program built; cache hits and sharding plans are not counted).");
  g.def(
      "compile", [](nb::handle obj) { return new CompiledGraph(obj); }, nb::arg("obj"),
      "Parses a function, bound method or Cell for graph mode (compiled per signature on call).");
  g.def(
      "grad",
      [](nb::handle obj, std::vector<int> positions, bool positions_tuple, nb::handle weights,
         bool return_value, bool has_aux, bool sens_param) {
        ad::GradSpec spec;
        spec.positions = std::move(positions);
        spec.positions_tuple = positions_tuple;
        spec.return_value = return_value;
        spec.has_aux = has_aux;
        spec.sens_param = sens_param;
        return new CompiledGraph(obj, spec, weights);
      },
      nb::arg("obj"), nb::arg("positions"), nb::arg("positions_tuple"), nb::arg("weights").none(),
      nb::arg("return_value"), nb::arg("has_aux"), nb::arg("sens_param"),
      "The gradient of a function, method or Cell, compiled per signature (see mycel.grad).");
  g.def(
      "batching_rule",
      [](const std::string& name) -> std::string {
        const OpDef& op = Registry::get().at(name);
        if (BatchRegistry::get().has_own(name)) return "own";
        return BatchRegistry::get().find(op) ? "elementwise" : "loop";
      },
      nb::arg("op"),
      "How vmap batches an op: 'own' rule, the generic 'elementwise' one, or a 'loop' per item.");
  g.def(
      "transformed", [](nb::handle obj, nb::list chain) { return new CompiledGraph(obj, chain); },
      nb::arg("obj"), nb::arg("chain"),
      "A function, method or Cell under a chain of transforms (grad / vmap dicts, innermost "
      "first), "
      "compiled per signature (see mycel.ops.vmap).");
}

}  // namespace mycel::py

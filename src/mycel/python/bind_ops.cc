// Python entry points generated from the op registry: mycel._mycel.ops.<name>(*inputs, *attrs,
// **kw) and OpHandle.bind(**attrs) for MindSpore's primitive classes
// (ops.MatMul(transpose_b=True)).
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mycel/core/suggest.h"
#include "mycel/frontend/py_convert.h"
#include "mycel/ops/keywords.h"
#include "mycel/pynative/recorder.h"

namespace mycel::py {

void init_op_function(nb::module_& m);  // bind_op_function.cc
void record_eager_op(const OpDef& op, const std::vector<nb::handle>& flat,
                     const std::vector<Tensor>& tensors, const Attrs& attrs,
                     std::vector<Tensor>& outs);  // bind_pynative.cc
namespace {

bool is_python_scalar(nb::handle h) {
  return PyBool_Check(h.ptr()) || PyLong_CheckExact(h.ptr()) || PyFloat_CheckExact(h.ptr());
}

// Python scalars among the inputs are "weak": they take the dtype of the tensor inputs unless
// they are of a higher kind (a float next to an int tensor becomes float32).
DType weak_scalar_dtype(nb::handle h, bool have_base, DType base) {
  if (PyBool_Check(h.ptr())) return have_base ? base : DType::bool_;
  if (PyLong_Check(h.ptr())) {
    if (!have_base || is_bool(base)) return DType::int64;
    return base;
  }
  if (have_base && is_complex(base)) return base;  // complex * 0.5 stays complex
  if (!have_base || !is_floating(base)) return DType::float32;
  return base;
}

nb::object wrap_outputs(std::vector<Tensor>&& outs, bool tuple_output) {
  if (outs.size() == 1 && !tuple_output) return nb::cast(std::move(outs[0]));
  nb::list l;
  for (auto& t : outs) l.append(nb::cast(std::move(t)));
  return nb::tuple(l);
}

}  // namespace

/// An op plus preset attributes (a configured primitive); calling it runs the op eagerly.
struct OpHandle {
  const OpDef* op;
  std::vector<AttrValue> preset;  // by schema position; monostate = not preset

  bool is_preset(size_t i) const {
    return i < preset.size() && !std::holds_alternative<std::monostate>(preset[i]);
  }

  nb::object call(nb::args args, nb::kwargs kwargs) const {
    const OpDef& d = *op;
    const size_t n_in = d.inputs.size();
    const bool variadic = n_in > 0 && d.inputs.back().variadic;
    std::vector<nb::handle> in_objs(n_in);
    std::vector<bool> in_set(n_in, false);
    std::vector<AttrValue> attrs = preset;
    attrs.resize(d.attrs.size());
    std::vector<bool> attr_set(d.attrs.size(), false);

    // Positional: inputs first, then attributes in schema order (skipping preset ones).
    size_t nargs = args.size(), ai = 0;
    for (size_t i = 0; i < nargs; ++i) {
      if (i < n_in) {
        in_objs[i] = args[i];
        in_set[i] = true;
        continue;
      }
      while (ai < d.attrs.size() && is_preset(ai)) ++ai;
      if (ai >= d.attrs.size())
        MYCEL_THROW(TypeError, "[", d.name, "] takes at most ", i, " positional arguments, got ",
                    nargs);
      attrs[ai] = to_attr(d, d.attrs[ai], args[i]);
      attr_set[ai] = true;
      ++ai;
    }
    // Keywords: input names or attribute names (and aliases).
    for (auto [k, v] : kwargs) {
      std::string key = nb::cast<std::string>(k);
      bool done = false;
      for (size_t i = 0; i < n_in && !done; ++i)
        if (d.inputs[i].name == key) {
          if (in_set[i])
            MYCEL_THROW(TypeError, "[", d.name, "] got multiple values for input '", key, "'");
          in_objs[i] = v;
          in_set[i] = true;
          done = true;
        }
      if (done) continue;
      int idx = d.attr_index(key);
      if (idx < 0)
        MYCEL_THROW(TypeError, "[", d.name, "] got an unexpected keyword argument '", key, "'",
                    did_you_mean(key, keyword_names(d)));
      if (attr_set[idx])
        MYCEL_THROW(TypeError, "[", d.name, "] got multiple values for attribute '", key, "'");
      attrs[idx] = to_attr(d, d.attrs[idx], v);
      attr_set[idx] = true;
    }
    for (size_t i = 0; i < n_in; ++i)
      if (!in_set[i] && !d.inputs[i].optional)
        MYCEL_THROW(TypeError, "[", d.name, "] missing required input '", d.inputs[i].name, "'");

    // Flatten a variadic last input (a tuple or list of tensors).
    std::vector<nb::handle> flat;
    flat.reserve(n_in + 4);
    for (size_t i = 0; i < n_in; ++i) {
      if (variadic && i + 1 == n_in) {
        nb::handle seq = in_objs[i];
        if (!nb::isinstance<nb::list>(seq) && !nb::isinstance<nb::tuple>(seq))
          MYCEL_THROW(TypeError, "[", d.name, "] input '", d.inputs[i].name,
                      "' must be a tuple or list of tensors");
        for (nb::handle h : seq) flat.push_back(h);
      } else {
        flat.push_back(in_set[i] ? in_objs[i] : nb::none());
      }
    }
    // Convert: tensors and arrays first, then weak Python scalars.
    std::vector<Tensor> inputs(flat.size());
    bool have_base = false, have_scalar = false;
    DType base = DType::bool_;
    for (size_t i = 0; i < flat.size(); ++i) {
      nb::handle h = flat[i];
      if (h.is_none()) continue;
      if (is_python_scalar(h)) {
        have_scalar = true;
        continue;
      }
      try {
        inputs[i] = to_tensor(h);
      } catch (const TypeError& e) {
        MYCEL_THROW(TypeError, "[", d.name, "] input '", d.inputs[std::min(i, n_in - 1)].name,
                    "': ", e.what());
      }
      base = have_base ? promote_types(base, inputs[i].dtype()) : inputs[i].dtype();
      have_base = true;
    }
    // While a gradient is recorded, the op is recorded with its inputs as given (before casts).
    const bool recording = pynative::Recorder::current() != nullptr;
    std::vector<Tensor> given = recording ? inputs : std::vector<Tensor>{};
    if (have_scalar) {
      // A weak scalar of a higher kind (float next to int tensors) sets the common dtype itself,
      // so int32_tensor + 1.5 is float32, not numpy's float64.
      DType common = base;
      bool have_common = have_base;
      for (size_t i = 0; i < flat.size(); ++i) {
        if (flat[i].is_none() || !is_python_scalar(flat[i])) continue;
        DType sd = weak_scalar_dtype(flat[i], have_base, base);
        inputs[i] = to_tensor(flat[i], sd);
        if (!have_common || (is_floating(sd) && !is_floating(common)) ||
            (is_integral(sd) && is_bool(common)))
          common = sd;
        have_common = true;
      }
      if (d.promote_inputs)
        for (Tensor& t : inputs)
          if (t.defined() && t.dtype() != common) t = t.to(common);
    }

    Attrs a = make_attrs(d, std::move(attrs));
    std::vector<Tensor> outs;
    {
      nb::gil_scoped_release release;  // kernels never touch Python
      outs = call_op(d, std::move(inputs), a);
    }
    if (recording) record_eager_op(d, flat, given, a, outs);
    return wrap_outputs(std::move(outs), d.tuple_output);
  }

  /// A new handle with attributes fixed: positional in schema order, or by keyword.
  OpHandle bind(nb::args args, nb::kwargs kwargs) const {
    OpHandle h{op, std::vector<AttrValue>(op->attrs.size())};
    if (args.size() > op->attrs.size())
      MYCEL_THROW(TypeError, "[", op->class_name, "] takes at most ", op->attrs.size(),
                  " attributes, got ", args.size());
    for (size_t i = 0; i < args.size(); ++i) h.preset[i] = to_attr(*op, op->attrs[i], args[i]);
    for (auto [k, v] : kwargs) {
      std::string key = nb::cast<std::string>(k);
      int idx = op->attr_index(key);
      if (idx < 0)
        MYCEL_THROW(TypeError, "[", op->class_name, "] got an unexpected attribute '", key, "'",
                    did_you_mean(key, attr_names(*op)));
      h.preset[idx] = to_attr(*op, op->attrs[idx], v);
    }
    return h;
  }
};

void init_ops(nb::module_& m) {
  init_op_function(m);
  nb::class_<OpHandle>(m, "OpHandle", "A registered op, optionally with preset attributes.")
      .def("__call__", &OpHandle::call)
      .def("bind", &OpHandle::bind)
      .def_prop_ro("name", [](const OpHandle& h) { return h.op->name; })
      .def_prop_ro("class_name", [](const OpHandle& h) { return h.op->class_name; })
      .def_prop_ro("doc", [](const OpHandle& h) { return h.op->doc; })
      .def_prop_ro("grad", [](const OpHandle& h) { return h.op->grad; })
      .def_prop_ro("random", [](const OpHandle& h) { return h.op->random; })
      .def_prop_ro("inputs",
                   [](const OpHandle& h) {
                     nb::list l;
                     for (const auto& i : h.op->inputs)
                       l.append(nb::make_tuple(i.name, i.optional, i.variadic));
                     return l;
                   })
      .def_prop_ro("attrs",
                   [](const OpHandle& h) {
                     nb::list l;
                     for (const auto& a : h.op->attrs)
                       l.append(nb::make_tuple(
                           a.name, attr_kind_name(a.kind), attr_to_python(a.default_value),
                           a.optional || !std::holds_alternative<std::monostate>(a.default_value)));
                     return l;
                   })
      .def_prop_ro("preset",
                   [](const OpHandle& h) {
                     nb::dict d;
                     for (size_t i = 0; i < h.preset.size(); ++i)
                       if (!std::holds_alternative<std::monostate>(h.preset[i]))
                         d[h.op->attrs[i].name.c_str()] = attr_to_python(h.preset[i]);
                     return d;
                   })
      .def_prop_ro("dtypes", [](const OpHandle& h) { return h.op->dtypes; })
      .def_prop_ro("dtype_input", [](const OpHandle& h) { return h.op->dtype_input; });

  // One fast entry point per op: ops.<name>(*args, **kwargs) dispatches straight to the registry.
  nb::module_ ops = m.def_submodule("ops", "Registry ops (generated).");
  nb::dict handles;
  for (const OpDef* op : Registry::get().ops()) {
    OpHandle h{op, {}};
    handles[op->name.c_str()] = nb::cast(h);
    nb::object fn =
        nb::cpp_function([h](nb::args args, nb::kwargs kwargs) { return h.call(args, kwargs); },
                         nb::name(op->name.c_str()), nb::scope(ops), op->doc.c_str());
    ops.attr(op->name.c_str()) = fn;
  }
  m.attr("op_handles") = handles;
}

}  // namespace mycel::py

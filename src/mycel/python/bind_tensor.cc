// The Tensor class: construction from Python data, numpy/DLPack interop, metadata.
// Operators, indexing and repr are added in python/mycel/common/tensor.py on top of these.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string_view>

#include "mycel/python/record_derived.h"

namespace mycel::py {

namespace {

// Tensor(input_data=None, dtype=None, shape=None, init=None) into the memory at `self`.
void tensor_init(Tensor* self, nb::handle input_data, nb::handle dtype, nb::handle shape,
                 nb::handle init) {
  std::optional<DType> dt;
  if (!dtype.is_none()) dt = to_dtype(dtype);
  if (!input_data.is_none()) {
    new (self) Tensor(to_tensor(input_data, dt));
    return;
  }
  // Tensor(dtype=...) and Tensor(shape=[-2], dtype=...): MindSpore's dynamic rank, an input
  // signature for Cell.set_inputs whose rank (and every dim) is taken from each call's argument.
  bool rank_unknown = shape.is_none();
  if ((nb::isinstance<nb::list>(shape) || nb::isinstance<nb::tuple>(shape)) &&
      nb::len(shape) == 1) {
    nb::object d0 = shape[0];
    rank_unknown = nb::isinstance<nb::int_>(d0) && nb::cast<int64_t>(d0) == -2;
  }
  if (rank_unknown && init.is_none()) {
    if (!dt) MYCEL_THROW(TypeError, "Tensor() needs input_data, or shape (and dtype)");
    new (self) Tensor(Tensor::zeros({}, *dt));
    nb::find(self).attr("_dynamic_rank") = true;
    return;
  }
  if (!init.is_none()) {  // Tensor(shape=, dtype=, init=One()): the initializer's values
    nb::object dtype_obj = dt ? nb::cast(*dt) : nb::cast(DType::float32);
    nb::object made = nb::module_::import_("mycel.common.initializer")
                          .attr("initializer")(init, shape, dtype_obj);
    new (self) Tensor(nb::cast<Tensor>(made));
    return;
  }
  // A None dim makes an input signature for graph mode (Cell.set_inputs): an empty
  // placeholder tensor remembering which dims are dynamic. A mycel.Symbol dim
  // (MindSpore's symbolic shape) is dynamic as None is; the symbols stay on the
  // tensor (`_symbolic_shape`) for the checks at each call (common/symbol.py).
  Shape s;
  bool dynamic = false, symbolic = false;
  nb::list dims;
  for (nb::handle h : shape) {
    const bool sym = nb::hasattr(h, "_mycel_symbol");
    symbolic |= sym;
    // -1 is MindSpore's spelling of a dynamic dim, as None
    const bool minus_one = !h.is_none() && !sym && nb::isinstance<nb::int_>(h) &&
                           nb::cast<int64_t>(h) == -1 && init.is_none();
    dynamic |= h.is_none() || sym || minus_one;
    s.push_back(h.is_none() || sym || minus_one ? 0 : nb::cast<int64_t>(h));
    dims.append(sym || minus_one ? nb::none() : nb::borrow(h));
  }
  new (self) Tensor(Tensor::zeros(s, dt.value_or(DType::float32)));
  if (dynamic) nb::find(self).attr("_dynamic_shape") = nb::tuple(dims);
  if (symbolic) nb::find(self).attr("_symbolic_shape") = nb::tuple(shape);
}

// Whether Tensor's input_data holds strings: a numpy str/bytes array, or a (nested) list or
// tuple whose first element is a str or bytes. A bare str stays an error, as in MindSpore.
bool is_string_data(nb::handle h) {
  for (int depth = 0; depth < 64; ++depth) {
    if (depth > 0 && (nb::isinstance<nb::str>(h) || nb::isinstance<nb::bytes>(h))) return true;
    if ((nb::isinstance<nb::list>(h) || nb::isinstance<nb::tuple>(h)) && nb::len(h) > 0) {
      h = h[0];
      continue;
    }
    if (std::string_view(Py_TYPE(h.ptr())->tp_name) == "numpy.ndarray") {
      nb::object kind = h.attr("dtype").attr("kind");
      return kind.equal(nb::str("U")) || kind.equal(nb::str("S"));
    }
    return false;
  }
  return false;
}

// MindSpore's Tensor(np.array(["a"])) is a tensor of strings. Tensor is this C++ class, so its
// __new__ hands string data to mycel.StringTensor (strings never reach a kernel) and
// constructs every other Tensor as __init__ says. nanobind calls __new__ alone when the class
// itself is called; a Python subclass (Parameter) gets a bare instance, and Python then runs
// the subclass's __init__, which calls Tensor.__init__.
nb::object tensor_new(nb::handle cls, nb::args args, nb::kwargs kwargs) {
  nb::object self = nb::inst_alloc(cls);
  if (!cls.is(nb::type<Tensor>())) return self;
  // Tensor's own arguments, read here rather than through a second call into __init__.
  static const char* const kNames[] = {"input_data", "dtype", "shape", "init"};
  nb::handle a[4] = {Py_None, Py_None, Py_None, Py_None};
  bool parsed = args.size() <= 4;
  for (size_t i = 0; parsed && i < args.size(); ++i) a[i] = args[i];
  size_t found = 0;
  for (size_t i = 0; parsed && i < 4; ++i) {
    if (!kwargs.contains(kNames[i])) continue;
    parsed = i >= args.size();  // given twice: __init__ reports it
    a[i] = kwargs[kNames[i]];
    ++found;
  }
  if (!parsed || found != kwargs.size()) {  // __init__ raises nanobind's usual TypeError
    cls.attr("__init__")(self, *args, **kwargs);
    return self;
  }
  if (is_string_data(a[0])) {
    nb::object strings = nb::module_::import_("mycel.common.string_tensor");
    if (a[1].is_none() || a[1].equal(strings.attr("string")))
      return strings.attr("StringTensor")(a[0]);
  }
  tensor_init(nb::inst_ptr<Tensor>(self), a[0], a[1], a[2], a[3]);
  nb::inst_mark_ready(self);
  return self;
}

}  // namespace

void init_tensor(nb::module_& m) {
  nb::class_<Tensor>(m, "Tensor", nb::dynamic_attr(), "An n-d array on the CPU.")
      .def_static("__new__", &tensor_new)
      .def(
          "__init__",
          [](Tensor* self, nb::object input_data, nb::object dtype, nb::object shape,
             nb::object init) { tensor_init(self, input_data, dtype, shape, init); },
          nb::arg("input_data") = nb::none(), nb::arg("dtype") = nb::none(),
          nb::arg("shape") = nb::none(), nb::arg("init") = nb::none())
      .def_prop_ro("shape",
                   [](const Tensor& t) {
                     nb::list l;
                     for (int64_t d : t.shape()) l.append(d);
                     return nb::tuple(l);
                   })
      .def_prop_ro("dtype", &Tensor::dtype)
      .def_prop_ro("ndim", &Tensor::ndim)
      .def_prop_ro("size", &Tensor::numel)
      .def_prop_ro("itemsize", [](const Tensor& t) { return itemsize(t.dtype()); })
      .def_prop_ro("nbytes", &Tensor::nbytes)
      .def("numel", &Tensor::numel)
      .def("dim", &Tensor::ndim)
      .def("data_ptr", [](const Tensor& t) { return reinterpret_cast<uintptr_t>(t.data()); })
      .def("asnumpy", &to_numpy, "The data as a numpy array (shares memory; bfloat16 -> float32).")
      .def("numpy", &to_numpy, "Alias of asnumpy().")
      .def("_dlpack_array", &to_dlpack_array)
      .def("__dlpack_device__", [](const Tensor&) { return nb::make_tuple(1, 0); })
      .def(
          "astype",
          [](const Tensor& t, nb::handle dtype) {
            DType to = to_dtype(dtype);
            return record_derived("cast", {{"dtype", to}}, t, t.to(to));
          },
          nb::arg("dtype"))
      .def("clone",
           [](const Tensor& t) {
             return record_derived("cast", {{"dtype", t.dtype()}}, t, t.clone());
           })
      .def("_is_view_of",
           [](const Tensor& a, const Tensor& b) { return a.storage() == b.storage(); })
      .def("__len__", [](const Tensor& t) {
        if (t.ndim() == 0) MYCEL_THROW(TypeError, "len() of a 0-d tensor");
        return t.shape()[0];
      });
  m.def("tensor_from_dlpack", &from_dlpack, nb::arg("obj"));
}

}  // namespace mycel::py

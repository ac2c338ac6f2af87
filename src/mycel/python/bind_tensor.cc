// The Tensor class: construction from Python data, numpy/DLPack interop, metadata.
// Operators, indexing and repr are added in python/mycel/common/tensor.py on top of these.
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mycel/python/record_derived.h"

namespace mycel::py {

void init_tensor(nb::module_& m) {
  nb::class_<Tensor>(m, "Tensor", nb::dynamic_attr(), "An n-d array on the CPU.")
      .def(
          "__init__",
          [](Tensor* self, nb::object input_data, nb::object dtype, nb::object shape,
             nb::object init) {
            std::optional<DType> dt;
            if (!dtype.is_none()) dt = to_dtype(dtype);
            if (!input_data.is_none()) {
              new (self) Tensor(to_tensor(input_data, dt));
              return;
            }
            if (shape.is_none())
              MYCEL_THROW(TypeError, "Tensor() needs input_data, or shape (and dtype)");
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
              dynamic |= h.is_none() || sym;
              s.push_back(h.is_none() || sym ? 0 : nb::cast<int64_t>(h));
              dims.append(sym ? nb::none() : nb::borrow(h));
            }
            new (self) Tensor(Tensor::zeros(s, dt.value_or(DType::float32)));
            if (dynamic) nb::find(self).attr("_dynamic_shape") = nb::tuple(dims);
            if (symbolic) nb::find(self).attr("_symbolic_shape") = nb::tuple(shape);
          },
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

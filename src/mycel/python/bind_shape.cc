// Zero-copy helpers behind Tensor indexing (python/mycel/common/tensor_methods.py): views of
// leading slices, in-place assignment into a tensor's storage, and where a view starts in it.
#include <nanobind/stl/vector.h>

#include <cstring>

#include "mycel/core/write_version.h"
#include "mycel/python/record_derived.h"

namespace mycel::py {

void init_shape(nb::module_& m) {
  auto cls = nb::type<Tensor>();
  cls.attr("_narrow") = nb::cpp_function(
      [](const Tensor& t, int64_t start, int64_t n) {
        std::vector<int64_t> begin(t.ndim(), 0), size(t.ndim(), -1);
        begin[0] = start;
        size[0] = n;
        return record_derived("slice", {{"begin", begin}, {"size", size}}, t, t.narrow0(start, n));
      },
      nb::is_method(), nb::arg("start"), nb::arg("n"),
      "x[start:start+n] along dimension 0, sharing storage.");
  cls.attr("_view") = nb::cpp_function(
      [](const Tensor& t, const Shape& shape) {
        return record_derived("reshape",
                              {{"shape", std::vector<int64_t>(shape.begin(), shape.end())}}, t,
                              t.view(shape));
      },
      nb::is_method(), nb::arg("shape"),
      "The same storage with another shape of the same element count.");
  cls.attr("_assign") = nb::cpp_function(
      [](Tensor& t, const Tensor& src) {
        MYCEL_CHECK(src.shape() == t.shape(), ShapeError, "_assign: source shape ",
                    shape_str(src.shape()), " differs from target shape ", shape_str(t.shape()));
        convert_elements(src.data(), src.dtype(), t.data(), t.dtype(), t.numel());
        if (t.defined()) note_write(*t.storage());
      },
      nb::is_method(), nb::arg("src"), "Overwrites this tensor's elements with src (converted).");
  cls.attr("storage_offset") = nb::cpp_function(
      [](const Tensor& t) -> int64_t {
        return t.defined() ? static_cast<int64_t>(t.offset() / itemsize(t.dtype())) : 0;
      },
      nb::is_method(),
      "Where this tensor starts in its storage, in elements (a view x[k] of x starts at k * "
      "x[0].size).");
  cls.attr("_rebind") = nb::cpp_function(
      [](Tensor& t, const Tensor& src) { t = src; }, nb::is_method(), nb::arg("src"),
      "Makes this tensor object hold src's storage, shape and dtype (Parameter.set_dtype: the "
      "same Parameter object, seen by optimizers and Cells, changes dtype).");
}

}  // namespace mycel::py

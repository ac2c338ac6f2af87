// String columns cross the Python boundary through numpy's fixed-width 'S' layout, which is
// the string tensor's own layout: one tobytes/frombuffer each way plus a UTF-8 encode/decode.
#include "mycel/python/data_convert.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mycel/data/string_tensor.h"

namespace mycel::py {
namespace {

// Whether obj (or the first leaf of a nested list/tuple) is a Python or numpy string.
bool looks_like_string(nb::handle obj, int depth = 0) {
  if (PyUnicode_Check(obj.ptr()) || PyBytes_Check(obj.ptr())) return true;
  if ((PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) && depth < 32) {
    if (nb::len(obj) == 0) return false;
    return looks_like_string(obj[nb::int_(0)], depth + 1);
  }
  if (nb::hasattr(obj, "dtype") && !nb::isinstance<Tensor>(obj)) {
    nb::object dt = obj.attr("dtype");
    if (!nb::hasattr(dt, "kind")) return false;
    std::string kind = nb::cast<std::string>(dt.attr("kind"));
    return kind == "U" || kind == "S";
  }
  return false;
}

Tensor strings_from_python(nb::handle obj) {
  nb::module_ np = nb::module_::import_("numpy");
  nb::object arr = np.attr("asarray")(obj);
  std::string kind = nb::cast<std::string>(arr.attr("dtype").attr("kind"));
  if (kind != "U" && kind != "S")
    MYCEL_THROW(TypeError,
                "dataset: expected all strings or all bytes in a column value, got a "
                "mix that numpy reads as dtype ",
                nb::cast<std::string>(nb::str(arr.attr("dtype"))));
  data::StringKind sk = kind == "U" ? data::StringKind::text : data::StringKind::bytes;
  if (sk == data::StringKind::text) arr = np.attr("char").attr("encode")(arr, "utf-8");
  arr = np.attr("require")(arr, nb::arg("requirements") = "C");  // ascontiguousarray makes 0-d 1-d
  Shape shape;
  for (nb::handle d : nb::tuple(arr.attr("shape"))) shape.push_back(nb::cast<int64_t>(d));
  int64_t width = nb::cast<int64_t>(arr.attr("dtype").attr("itemsize"));
  nb::bytes raw = nb::bytes(arr.attr("tobytes")());
  return data::make_string_tensor(raw.c_str(), width, shape, sk);
}

}  // namespace

Tensor data_to_tensor(nb::handle obj) {
  if (looks_like_string(obj)) return strings_from_python(obj);
  return to_tensor(obj);
}

nb::object data_to_numpy(const Tensor& t) {
  auto kind = data::string_kind(t);
  if (!kind) return to_numpy(t);
  nb::module_ np = nb::module_::import_("numpy");
  int64_t width = t.shape().back();
  nb::object shape = nb::cast(data::string_shape(t));
  Tensor c = t.clone();  // contiguous bytes of exactly this view
  nb::bytes raw(static_cast<const char*>(c.data()), c.nbytes());
  nb::object arr = np.attr("frombuffer")(raw, "S" + std::to_string(width)).attr("reshape")(shape);
  if (*kind == data::StringKind::text) return np.attr("char").attr("decode")(arr, "utf-8");
  return arr.attr("copy")();
}

nb::object data_to_python(const Tensor& t, bool numpy) {
  if (numpy || data::string_kind(t)) return data_to_numpy(t);
  return nb::cast(t);
}

}  // namespace mycel::py

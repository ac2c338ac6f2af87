#include "mycel/frontend/py_convert.h"

#include <cstring>

#include <nanobind/stl/string.h>

#include "mycel/core/write_version.h"

namespace mycel::py {

std::string py_type_name(nb::handle h) { return Py_TYPE(h.ptr())->tp_name; }

std::string str_of(nb::handle h) {
  nb::object s = nb::steal(PyObject_Str(h.ptr()));
  if (!s.is_valid()) {
    PyErr_Clear();
    return "?";
  }
  const char* c = PyUnicode_AsUTF8(s.ptr());
  return c ? c : "?";
}

std::string repr_str(nb::handle h) {
  nb::object s = nb::steal(PyObject_Repr(h.ptr()));
  if (!s.is_valid()) {
    PyErr_Clear();
    return "?";
  }
  const char* c = PyUnicode_AsUTF8(s.ptr());
  return c ? c : "?";
}

namespace {

nb::dlpack::dtype to_dl(DType t) {
  using C = nb::dlpack::dtype_code;
  uint8_t bits = static_cast<uint8_t>(itemsize(t) * 8);
  C code = is_bool(t)             ? C::Bool
           : is_unsigned(t)       ? C::UInt
           : is_integral(t)       ? C::Int
           : t == DType::bfloat16 ? C::Bfloat
           : is_complex(t)        ? C::Complex
                                  : C::Float;
  return {static_cast<uint8_t>(code), bits, 1};
}

DType from_dl(nb::dlpack::dtype d) {
  using C = nb::dlpack::dtype_code;
  auto code = static_cast<C>(d.code);
  if (d.lanes == 1) {
    if (code == C::Bool && d.bits == 8) return DType::bool_;
    if (code == C::Int) {
      if (d.bits == 8) return DType::int8;
      if (d.bits == 16) return DType::int16;
      if (d.bits == 32) return DType::int32;
      if (d.bits == 64) return DType::int64;
    }
    if (code == C::UInt && d.bits == 8) return DType::uint8;
    if (code == C::UInt && d.bits == 16) return DType::uint16;
    if (code == C::UInt && d.bits == 32) return DType::uint32;
    if (code == C::UInt && d.bits == 64) return DType::uint64;
    if (code == C::Complex && d.bits == 64) return DType::complex64;
    if (code == C::Complex && d.bits == 128) return DType::complex128;
    if (code == C::Float) {
      if (d.bits == 16) return DType::float16;
      if (d.bits == 32) return DType::float32;
      if (d.bits == 64) return DType::float64;
    }
    if (code == C::Bfloat && d.bits == 16) return DType::bfloat16;
  }
  MYCEL_THROW(TypeError, "unsupported array dtype (DLPack code ", int(d.code), ", ", int(d.bits),
              " bits); Mycel supports bool, int8, uint8, int16, int32, int64, float16, bfloat16, "
              "float32, float64");
}

nb::object numpy() {
  // Leaked on purpose: a static nb::object would be released after the interpreter is gone.
  static auto* np = new nb::object(nb::module_::import_("numpy"));
  return *np;
}

// Owner capsule keeping a tensor's storage alive while Python holds the array.
// The owner of a view handed to numpy or DLPack: keeps the storage alive, and while it lives the
// storage's writes go untracked (Storage::version() reads 0), since the view may be written.
nb::capsule owner_of(const Tensor& t) {
  auto* keep = new Tensor(t);
  if (keep->defined()) begin_export(*keep->storage());
  return nb::capsule(keep, [](void* p) noexcept {
    auto* k = static_cast<Tensor*>(p);
    if (k->defined()) end_export(*k->storage());
    delete k;
  });
}

template <class Arr>
Tensor copy_from_ndarray(const Arr& a, DType dt) {
  Shape shape(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) shape[i] = a.shape(i);
  Tensor t = Tensor::empty(shape, dt);
  const size_t isz = itemsize(dt);
  const char* src = static_cast<const char*>(a.data());
  bool contiguous = true;
  int64_t expect = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (shape[i] != 1 && a.stride(i) != expect) contiguous = false;
    expect *= shape[i];
  }
  if (contiguous) {
    if (t.nbytes()) std::memcpy(t.data(), src, t.nbytes());
    return t;
  }
  // Strided gather, one element at a time (only for non-contiguous foreign arrays).
  char* dst = static_cast<char*>(t.data());
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t k = 0; k < t.numel(); ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * a.stride(d);
    std::memcpy(dst + k * isz, src + off * static_cast<int64_t>(isz), isz);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return t;
}

}  // namespace

DType to_dtype(nb::handle obj) {
  if (nb::isinstance<DType>(obj)) return nb::cast<DType>(obj);
  if (nb::isinstance<nb::str>(obj)) return dtype_from_name(nb::cast<std::string>(obj));
  if (obj.is(nb::handle((PyObject*)&PyFloat_Type))) return DType::float32;
  if (obj.is(nb::handle((PyObject*)&PyLong_Type))) return DType::int64;
  if (obj.is(nb::handle((PyObject*)&PyBool_Type))) return DType::bool_;
  // numpy dtype or scalar type: use its name.
  try {
    nb::object d = numpy().attr("dtype")(obj);
    return dtype_from_name(nb::cast<std::string>(d.attr("name")));
  } catch (const nb::python_error&) {
  }
  MYCEL_THROW(TypeError, "cannot interpret ", repr_str(obj), " as a dtype");
}

Tensor to_tensor(nb::handle obj, std::optional<DType> dtype) {
  if (nb::isinstance<Tensor>(obj)) {
    const Tensor& t = nb::cast<const Tensor&>(obj);
    return dtype && *dtype != t.dtype() ? t.to(*dtype) : t;
  }
  if (PyBool_Check(obj.ptr()))
    return Tensor::scalar(obj.ptr() == Py_True, dtype.value_or(DType::bool_));
  if (PyLong_CheckExact(obj.ptr())) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(obj.ptr(), &overflow);
    if (overflow) MYCEL_THROW(ValueError, "integer ", str_of(obj), " does not fit in int64");
    Tensor t = Tensor::empty({}, DType::int64);
    *t.data<int64_t>() = v;
    return dtype ? t.to(*dtype) : t;
  }
  if (PyFloat_CheckExact(obj.ptr()))
    return Tensor::scalar(PyFloat_AsDouble(obj.ptr()), dtype.value_or(DType::float32));
  // Everything else goes through numpy (lists, numpy arrays and scalars, torch tensors, ...).
  nb::object arr;
  try {
    arr = numpy().attr("asarray")(obj);
  } catch (const nb::python_error& e) {
    MYCEL_THROW(TypeError, "cannot convert an object of type ", py_type_name(obj),
                " to a Tensor: ", e.what());
  }
  std::string kind = str_of(arr.attr("dtype").attr("kind"));
  if (kind != "f" && kind != "i" && kind != "u" && kind != "b" && kind != "c")
    MYCEL_THROW(TypeError, "cannot convert an object of type ", py_type_name(obj),
                " to a Tensor (numpy sees dtype ", repr_str(arr.attr("dtype")),
                "; ragged or non-numeric data?)");
  bool is_sequence = nb::isinstance<nb::list>(obj) || nb::isinstance<nb::tuple>(obj);
  if (is_sequence && !dtype && kind == "f") dtype = DType::float32;  // MindSpore's default float
  nb::ndarray<nb::ro, nb::device::cpu> a;
  if (!nb::try_cast(arr, a, false))
    MYCEL_THROW(TypeError, "cannot convert numpy dtype ", repr_str(arr.attr("dtype")),
                " to a Tensor");
  Tensor t = copy_from_ndarray(a, from_dl(a.dtype()));
  return dtype && *dtype != t.dtype() ? t.to(*dtype) : t;
}

nb::object to_numpy(const Tensor& t0) {
  Tensor t = t0.dtype() == DType::bfloat16 ? t0.to(DType::float32) : t0;
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  nb::ndarray<nb::numpy> a(t.data(), shape.size(), shape.data(), owner_of(t), nullptr,
                           to_dl(t.dtype()));
  return a.cast();
}

nb::object to_dlpack_array(const Tensor& t) {
  std::vector<size_t> shape(t.shape().begin(), t.shape().end());
  nb::ndarray<> a(t.data(), shape.size(), shape.data(), owner_of(t), nullptr, to_dl(t.dtype()));
  return a.cast();
}

Tensor from_dlpack(nb::handle obj) {
  nb::ndarray<nb::device::cpu> a;
  if (!nb::try_cast(obj, a, false))
    MYCEL_THROW(TypeError, "from_dlpack: object of type ", py_type_name(obj),
                " is not a CPU DLPack or buffer-protocol array");
  DType dt = from_dl(a.dtype());
  Shape shape(a.ndim());
  bool contiguous = true;
  int64_t expect = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    shape[i] = a.shape(i);
    if (shape[i] != 1 && a.stride(i) != expect) contiguous = false;
    expect *= shape[i];
  }
  if (!contiguous) return copy_from_ndarray(a, dt);
  auto* keep = new nb::ndarray<nb::device::cpu>(a);
  size_t nbytes = static_cast<size_t>(numel(shape)) * itemsize(dt);
  auto storage = Storage::borrow(a.data(), nbytes, [keep] {
    nb::gil_scoped_acquire gil;
    delete keep;
  });
  mark_borrowed(*storage);  // the array's owner may write it: never cached by write version
  return Tensor(std::move(storage), 0, shape, dt);
}

AttrValue to_attr(const OpDef& op, const AttrDef& def, nb::handle obj) {
  auto bad = [&]() -> AttrValue {
    MYCEL_THROW(TypeError, "[", op.name, "] attribute '", def.name, "' expects ",
                attr_kind_name(def.kind), ", got ", py_type_name(obj), " ", repr_str(obj));
  };
  auto as_int = [&](nb::handle h, int64_t& out) {
    if (PyBool_Check(h.ptr()) && def.kind != AttrKind::kBool) return false;
    if (PyLong_Check(h.ptr()) || PyIndex_Check(h.ptr())) {
      int overflow = 0;
      nb::object idx = nb::steal(PyNumber_Index(h.ptr()));
      if (!idx.is_valid()) {
        PyErr_Clear();
        return false;
      }
      out = PyLong_AsLongLongAndOverflow(idx.ptr(), &overflow);
      return overflow == 0;
    }
    return false;
  };
  auto as_float = [&](nb::handle h, double& out) {
    if (PyBool_Check(h.ptr())) return false;
    if (PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr()) || nb::hasattr(h, "__float__")) {
      out = PyFloat_AsDouble(h.ptr());
      if (out == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return false;
      }
      return true;
    }
    return false;
  };
  if (obj.is_none()) return std::monostate{};
  switch (def.kind) {
    case AttrKind::kBool:
      if (PyBool_Check(obj.ptr())) return obj.ptr() == Py_True;
      if (nb::hasattr(obj, "dtype") && nb::hasattr(obj, "__bool__") && !nb::isinstance<Tensor>(obj))
        return PyObject_IsTrue(obj.ptr()) == 1;  // numpy bool
      return bad();
    case AttrKind::kInt: {
      int64_t v;
      if (as_int(obj, v)) return v;
      return bad();
    }
    case AttrKind::kFloat: {
      double v;
      if (as_float(obj, v)) return v;
      return bad();
    }
    case AttrKind::kStr:
      if (nb::isinstance<nb::str>(obj)) return nb::cast<std::string>(obj);
      return bad();
    case AttrKind::kDType:
      return to_dtype(obj);
    case AttrKind::kInts: {
      int64_t v;
      if (as_int(obj, v)) return std::vector<int64_t>{v};
      if (nb::isinstance<Tensor>(obj)) {  // a 1-d integer tensor's values (P.Reshape()(x, t))
        const Tensor& t = nb::cast<const Tensor&>(obj);
        if (t.ndim() != 1 || !is_integral(t.dtype())) return bad();
        Tensor t64 = t.to(DType::int64);
        return std::vector<int64_t>(t64.data<int64_t>(), t64.data<int64_t>() + t64.numel());
      }
      if (!nb::isinstance<nb::list>(obj) && !nb::isinstance<nb::tuple>(obj)) return bad();
      std::vector<int64_t> out;
      for (nb::handle h : obj) {
        if (!as_int(h, v)) return bad();
        out.push_back(v);
      }
      return out;
    }
    case AttrKind::kFloats: {
      double v;
      if (as_float(obj, v)) return std::vector<double>{v};
      if (!nb::isinstance<nb::list>(obj) && !nb::isinstance<nb::tuple>(obj)) return bad();
      std::vector<double> out;
      for (nb::handle h : obj) {
        if (!as_float(h, v)) return bad();
        out.push_back(v);
      }
      return out;
    }
  }
  return bad();
}

nb::object attr_to_python(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> nb::object {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, std::monostate>)
          return nb::none();
        else if constexpr (std::is_same_v<X, std::vector<int64_t>> ||
                           std::is_same_v<X, std::vector<double>>) {
          nb::list l;
          for (auto e : x) l.append(e);
          return nb::tuple(l);
        } else
          return nb::cast(x);
      },
      v);
}

}  // namespace mycel::py

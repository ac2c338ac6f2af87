// Conversions between Python objects and core values, shared by the frontend (constants of
// parsed code) and the binding files (which sit above it).
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <map>
#include <optional>
#include <string>

#include "mycel/core/tensor.h"
#include "mycel/ops/registry.h"

namespace mycel::py {
namespace nb = nanobind;

/// Python type name, str() and repr() of an object, for error messages (never throw).
std::string py_type_name(nb::handle h);
std::string str_of(nb::handle h);
std::string repr_str(nb::handle h);
/// DType from a mycel dtype, a numpy dtype/type or a string.
DType to_dtype(nb::handle obj);
/// Tensor from a Tensor, numpy array, DLPack object, list or scalar (copies unless a Tensor).
/// A Python float defaults to float32 and an int to int64 (MindSpore's defaults).
Tensor to_tensor(nb::handle obj, std::optional<DType> dtype = std::nullopt);
/// Zero-copy numpy view of t (bfloat16 is converted to float32, since numpy lacks it).
nb::object to_numpy(const Tensor& t);
/// A nanobind ndarray (no framework) sharing t's storage, for __dlpack__.
nb::object to_dlpack_array(const Tensor& t);
/// Tensor sharing the memory of any DLPack / buffer-protocol object (copies if not contiguous).
Tensor from_dlpack(nb::handle obj);
/// Attribute value of the given kind from a Python object.
AttrValue to_attr(const OpDef& op, const AttrDef& def, nb::handle obj);
/// Python value of an attribute.
nb::object attr_to_python(const AttrValue& v);

}  // namespace mycel::py

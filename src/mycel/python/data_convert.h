// Row values between Python and the data engine: numbers through to_tensor/to_numpy, strings
// (str/bytes, numpy str/bytes arrays, lists of str) as tagged string tensors
// (data/string_tensor.h).
#pragma once
#include "mycel/frontend/py_convert.h"

namespace mycel::py {

/// A row value from Python: a string tensor for text/bytes, else to_tensor(obj).
Tensor data_to_tensor(nb::handle obj);
/// A row value for Python code (maps, filters): a numpy str/bytes array for a string tensor,
/// else a zero-copy numpy view.
nb::object data_to_numpy(const Tensor& t);
/// An iterator's output: a numpy array for strings and with output_numpy, else a mycel Tensor.
nb::object data_to_python(const Tensor& t, bool numpy);

}  // namespace mycel::py

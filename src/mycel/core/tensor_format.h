// A tensor's values as text, the way numpy's str(array) writes them, so graph-mode print shows
// what eager print (Tensor.__str__ -> numpy) shows without calling into Python.
#pragma once
#include <string>

#include "mycel/core/tensor.h"

namespace mycel {

/// The values of t as numpy's str(array) writes them: "[[1.  2.5]\n [3.  4. ]]", "7", "True".
std::string format_values(const Tensor& t);
/// t as Tensor.__repr__ writes it: "Tensor([1., 2.], dtype=Float32)".
std::string format_repr(const Tensor& t);
/// A Python float as repr() writes it: "0.1", "1.0", "1e-05".
std::string format_float(double v);

}  // namespace mycel

// An operand in the dtype a kernel computes in, without copying the tensor when it already is:
// `Tensor x = in.to(d)` copies the Tensor (and so its shape, a heap allocation) on every launch
// even when nothing converts, which graph mode must not do (issue 19, item 4).
#pragma once
#include "mycel/core/tensor.h"

namespace mycel::cpu {

/// t itself when it has dtype d, else t converted into `converted` (which must outlive the use).
inline const Tensor& as_dtype(const Tensor& t, DType d, Tensor& converted) {
  if (t.dtype() == d) return t;
  converted = t.to(d);
  return converted;
}

}  // namespace mycel::cpu

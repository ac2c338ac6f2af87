// The PyNative recording hook for Tensor methods that make a tensor outside op dispatch
// (astype, clone, the views behind indexing); defined in bind_pynative.cc.
#pragma once
#include <map>
#include <string>

#include "mycel/frontend/py_convert.h"

namespace mycel::py {

/// While a PyNative gradient is recorded, records `out` as op_name(in) with `attrs`, so gradients
/// flow through it; returns `out` (a copy if it aliases a recorded tensor). Otherwise returns out.
Tensor record_derived(const char* op_name, const std::map<std::string, AttrValue>& attrs,
                      const Tensor& in, Tensor out);

}  // namespace mycel::py

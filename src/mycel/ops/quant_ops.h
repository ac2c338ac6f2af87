// The int8 ops' kernel entry (ops/quant.cc), shared by their registry kernels and by callers that
// want to know which implementation ran (the Python binding's lite.run_int8, for tests).
#pragma once
#include <vector>

#include "mycel/kernels/cpu/quant.h"
#include "mycel/ops/registry.h"

namespace mycel {

/// Runs a qconv2d or qdense call as the registry kernel does (the attributes checked into a
/// QuantSpec, the same kernels); `path`, when given, says which implementation ran.
void run_int8_op(const OpSchema& op, const std::vector<Tensor>& in, Tensor& out, const Attrs& attrs,
                 bool const_weights, cpu::Int8Path* path, cpu::Int8Layout layout = {});

/// qadd's attributes, checked (scales positive and finite, zero points in [0, 255]).
cpu::QAddSpec qadd_spec(const OpSchema& op, const Attrs& a);

}  // namespace mycel

// Window geometry of conv2d and the 2-d pooling ops from their attributes: nn_conv.cc is the one
// place that reads those attributes; the graph backend's fused conv+pool kernel asks it here.
#pragma once
#include "mycel/kernels/cpu/nn_geom.h"
#include "mycel/ops/registry.h"

namespace mycel {

/// conv2d's geometry for input shape xs and weight shape ws (attributes validated as infer does).
cpu::WindowGeom conv2d_window(const OpSchema& op, const Attrs& a, const Shape& xs, const Shape& ws);
/// max_pool2d's / avg_pool2d's geometry for input shape xs.
cpu::WindowGeom pool2d_window(const OpSchema& op, const Attrs& a, const Shape& xs);

}  // namespace mycel

// The IR's text form: readable, stable (tests compare against it), one graph after another.
#pragma once
#include <string>

#include "mycel/ir/func_graph.h"

namespace mycel::ir {

struct PrintOptions {
  bool abstracts = true;   // ": f32[2, 3]" after nodes analysis has typed
  bool locations = false;  // "# file.py:3:4" comments
};

/// Prints `g` and every graph it uses (nested graphs, callees), each once, `g` first.
std::string print(const FuncGraph& g, const PrintOptions& opts = {});

}  // namespace mycel::ir

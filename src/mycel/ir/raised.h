// A Python exception that compiled code raises: a reachable `raise` or failing `assert` found by
// analysis (compile time), one the Program reaches when it runs, or an error of a Python helper
// evaluated at compile time. The Python glue raises `exception` as Python would and adds `loc`.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "mycel/ir/node.h"
#include "mycel/ir/value.h"

namespace mycel::ir {

/// Carries the exception (a Python exception object or class held as a py: constant) through
/// C++ code; deliberately not a mycel::Error, so no other error translation claims it.
struct RaisedError : std::runtime_error {
  RaisedError(ValuePtr exception, SourceLoc loc)
      : std::runtime_error("raise " + exception->repr() + (loc.known() ? " at " + loc.str() : "")),
        exception(std::move(exception)),
        loc(std::move(loc)) {}
  ValuePtr exception;
  SourceLoc loc;
  /// "called from file:line: text" for each call that led to `loc`, innermost first (analysis
  /// adds one per function call it unwinds through, as a traceback has one frame per call).
  std::vector<std::string> callers;
};

}  // namespace mycel::ir

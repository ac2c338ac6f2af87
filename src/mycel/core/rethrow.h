// Re-raises the mycel::Error in flight as the same class with context around its message (the op
// of a data pipeline that failed, the source line of a compiled instruction), so the Python glue
// still maps it to the right built-in. Anything else (a Python exception raised by user code, a
// RaisedError) passes through untouched, traceback and all.
#pragma once
#include <string>

#include "mycel/core/error.h"

namespace mycel {

[[noreturn]] inline void rethrow_with_context(const std::string& prefix,
                                              const std::string& suffix = "") {
  try {
    throw;
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what() + suffix);
  } catch (const TypeError& e) {
    throw TypeError(prefix + e.what() + suffix);
  } catch (const IndexError& e) {
    throw IndexError(prefix + e.what() + suffix);
  } catch (const ValueError& e) {
    throw ValueError(prefix + e.what() + suffix);
  } catch (const NotSupported& e) {
    throw NotSupported(prefix + e.what() + suffix);
  } catch (const OutOfMemory& e) {
    throw OutOfMemory(prefix + e.what() + suffix);
  } catch (const RuntimeError& e) {
    throw RuntimeError(prefix + e.what() + suffix);
  }
}

}  // namespace mycel

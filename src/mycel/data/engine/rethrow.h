// Re-raises the exception in flight with a prefix naming the op, keeping its type (a Python
// exception raised by user code passes through untouched, traceback and all).
#pragma once
#include <string>

#include "mycel/core/error.h"

namespace mycel::data::engine {

[[noreturn]] inline void rethrow_with_context(const std::string& prefix) {
  try {
    throw;
  } catch (const ShapeError& e) {
    throw ShapeError(prefix + e.what());
  } catch (const TypeError& e) {
    throw TypeError(prefix + e.what());
  } catch (const IndexError& e) {
    throw IndexError(prefix + e.what());
  } catch (const ValueError& e) {
    throw ValueError(prefix + e.what());
  } catch (const NotSupported& e) {
    throw NotSupported(prefix + e.what());
  } catch (const RuntimeError& e) {
    throw RuntimeError(prefix + e.what());
  }
}

}  // namespace mycel::data::engine

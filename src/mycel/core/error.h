// One error hierarchy for the whole core; the Python glue maps each class to a Python built-in.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace mycel {

/// Base of every error Mycel raises on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
/// Wrong dtype or argument type (Python TypeError).
class TypeError : public Error {
  using Error::Error;
};
/// Wrong value or attribute (Python ValueError).
class ValueError : public Error {
  using Error::Error;
};
/// Incompatible shapes (Python ValueError).
class ShapeError : public ValueError {
  using ValueError::ValueError;
};
/// Index out of range (Python IndexError).
class IndexError : public Error {
  using Error::Error;
};
/// Valid request that Mycel does not support (Python NotImplementedError).
class NotSupported : public Error {
  using Error::Error;
};
/// An allocation the system refused (Python MemoryError).
class OutOfMemory : public Error {
  using Error::Error;
};
/// Anything else that went wrong at run time (Python RuntimeError).
class RuntimeError : public Error {
  using Error::Error;
};

namespace detail {
template <class... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
}  // namespace detail

/// Throws E with the streamed arguments as message: MYCEL_THROW(ShapeError, "[add] ...", shape).
#define MYCEL_THROW(E, ...) throw ::mycel::E(::mycel::detail::concat(__VA_ARGS__))
/// Checks a user-facing condition; on failure throws E with the streamed message.
#define MYCEL_CHECK(cond, E, ...)             \
  do {                                        \
    if (!(cond)) MYCEL_THROW(E, __VA_ARGS__); \
  } while (0)

}  // namespace mycel

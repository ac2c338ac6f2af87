// The graph-mode frontend: Python source (functions, methods, Cells) -> IR. The only IR code that
// knows Python: it walks `ast` objects through nanobind and resolves names the way Python would.
#pragma once
#include <nanobind/nanobind.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mycel/ir/func_graph.h"

namespace mycel::frontend {
namespace nb = nanobind;

/// A Python object used as an IR constant (a module, a class, a plain Python or C callable, a
/// Cell instance...). Printed "py:<name>". A call `Apply(Constant(py:f), args...)` with every
/// argument a constant is evaluated by analysis at compile time by calling f in the interpreter.
class PyObjectValue : public ir::Value {
 public:
  PyObjectValue(nb::object o, std::string name)
      : ir::Value(ir::ValueKind::kExternal), obj_(std::move(o)), name_(std::move(name)) {}
  const nb::object& object() const { return obj_; }
  const std::string& name() const { return name_; }
  std::string repr() const override { return "py:" + name_; }
  bool equals(const ir::Value& o) const override {
    return o.kind() == ir::ValueKind::kExternal &&
           static_cast<const PyObjectValue&>(o).obj_.ptr() == obj_.ptr();
  }
  size_t hash() const override { return std::hash<const void*>()(obj_.ptr()); }

 private:
  nb::object obj_;
  std::string name_;
};

/// The PyObjectValue a node holds, or nullptr.
const PyObjectValue* py_object_of(const ir::NodePtr& n);
/// A PyObjectValue for `o`, named after its qualified name (or its type).
ir::ValuePtr py_object(nb::handle o);

/// A parse error located in user source: raised in Python as `kind` (SyntaxError, NameError or
/// TypeError) with file/line/column/text set.
struct FrontendError : std::runtime_error {
  FrontendError(std::string kind, std::string message, std::string file, int line, int col,
                std::string text)
      : std::runtime_error(message),
        kind(std::move(kind)),
        file(std::move(file)),
        line(line),
        col(col),
        text(std::move(text)) {}
  std::string kind;
  std::string file;
  int line;  // 1-based
  int col;   // 1-based
  std::string text;
};

/// The result of parsing: every graph in `module`, `entry` the top graph. For a Cell, the top
/// graph's parameters are the construct inputs followed by the weights (bound to their tensors).
struct ParsedModule {
  std::unique_ptr<ir::Module> module;
  ir::FuncGraph* entry = nullptr;
  std::vector<std::string> parsed;  // qualified names of the Python functions parsed, in order
  int vararg = -1;                  // the entry's *args parameter (it takes a tuple), or -1
};

/// Parses a Python function, a bound method or a Cell (its construct).
ParsedModule parse(nb::handle obj);
/// What graph mode parses for obj: the function a @mycel.jit object wraps (its
/// _mycel_graph_function attribute), else obj itself.
nb::object graph_function_of(nb::handle obj);

}  // namespace mycel::frontend

// Records in graph mode (objects of a class that compiled code builds at run time: CSRTensor,
// COOTensor, RowTensor, @jit_class classes): how analysis learns a record class's members. The
// Python glue registers the hooks (it parses methods and properties into graphs on demand).
#pragma once
#include <functional>
#include <string>

#include "mycel/ir/value.h"

namespace mycel::ir {
class FuncGraph;
}

namespace mycel::analysis {

/// One attribute of a record class that is not a field.
struct RecordMember {
  enum Kind {
    kMissing,   // no such attribute: `value` is the AttributeError to raise
    kMethod,    // a method: `graph` takes self first
    kProperty,  // a property: `graph` is its getter (self only)
    kFunction,  // a staticmethod: `graph` takes no self
    kConstant,  // a class attribute known at compile time: `value`
  };
  Kind kind = kMissing;
  ir::FuncGraph* graph = nullptr;
  ir::ValuePtr value;
};

struct RecordHooks {
  /// The member `name` of record class `cls` (a Python class constant).
  std::function<RecordMember(const ir::Value& cls, const std::string& name)> member;
  /// An instance of `cls` standing in for a record in isinstance tests (never read).
  std::function<ir::ValuePtr(const ir::Value& cls)> witness;
  /// True when `callee` is a Python class that graph mode cannot instantiate at run time (not
  /// a record class): its calls with run-time arguments get an error that says so.
  std::function<bool(const ir::Value& callee)> plain_class;
  /// A Python AttributeError with this message (raised for x.name on a tensor, as eagerly).
  std::function<ir::ValuePtr(const std::string& message)> attribute_error;
  /// The graph of a Python object that graph mode can parse, called with run-time arguments
  /// though only analysis made it: a Primitive configured from a graph's parameters
  /// (`ops.Median(axis=axis)(x)`, MindSpore's scalar inputs being compile-time values).
  /// nullptr for anything else.
  std::function<ir::FuncGraph*(const ir::Value& callee)> parsed_callable;
};
void set_record_hooks(RecordHooks hooks);
const RecordHooks& record_hooks();

}  // namespace mycel::analysis

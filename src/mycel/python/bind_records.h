// Records (CSRTensor, @jit_class objects) at the boundary of compiled code: inputs flattened to
// their run-time fields, outputs rebuilt as Python objects (bind_records.cc).
#pragma once
#include <nanobind/nanobind.h>

#include <string>
#include <vector>

#include "mycel/analysis/abstract_util.h"

namespace mycel::py {
namespace nb = nanobind;

/// A record object's class and fields: every name, its compile-time value (nullptr for a
/// run-time field), and the run-time fields' abstracts and objects in order.
struct RecordParts {
  nb::object cls;
  std::vector<std::string> names;
  std::vector<ir::ValuePtr> statics;
  std::vector<ir::AbstractPtr> items;
  std::vector<nb::object> values;
};
/// True for an object of a record class (not the class itself).
bool is_record(nb::handle obj);
RecordParts record_parts(nb::handle obj);
ir::AbstractPtr record_abstract(nb::handle obj);
/// The object of class r.cls() with the fields' values (one per name, in order).
nb::object rebuild_record(const analysis::detail::RecordAbs& r, nb::list values);
/// Registers analysis's record hooks.
void init_records();

}  // namespace mycel::py

// The set of record-only ops (see record_only.h); written only at static registration.
#include "mycel/ops/record_only.h"

#include <unordered_set>

namespace mycel {

namespace {
std::unordered_set<const OpDef*>& record_only_ops() {
  static std::unordered_set<const OpDef*> s;
  return s;
}
}  // namespace

void mark_record_only(const std::string& name) {
  record_only_ops().insert(&Registry::get().at(name));
}

bool is_record_only(const OpDef& op) { return record_only_ops().count(&op) > 0; }

}  // namespace mycel

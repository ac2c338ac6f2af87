// The set of ops with the `effect` trait (see effect.h); written only at static registration.
#include "mycel/ops/effect.h"

#include <unordered_set>

namespace mycel {

namespace {
std::unordered_set<const OpDef*>& effect_ops() {
  static std::unordered_set<const OpDef*> s;
  return s;
}
}  // namespace

void mark_effect(const std::string& name) { effect_ops().insert(&Registry::get().at(name)); }

bool has_effect(const OpDef& op) { return effect_ops().count(&op) > 0; }

}  // namespace mycel

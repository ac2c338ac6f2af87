// The placements of ops (see placement.h); written only at static registration.
#include "mycel/ops/placement.h"

#include <unordered_map>

namespace mycel {

namespace {
std::unordered_map<const OpDef*, Placement>& placements() {
  static std::unordered_map<const OpDef*, Placement> m;
  return m;
}
}  // namespace

void set_placement(const std::string& name, Placement p) {
  placements()[&Registry::get().at(name)] = p;
}

Placement placement_of(const OpDef& op) {
  auto it = placements().find(&op);
  return it == placements().end() ? Placement::kAny : it->second;
}

}  // namespace mycel

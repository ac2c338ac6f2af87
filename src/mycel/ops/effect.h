// The `effect` trait of ops that act on the outside world (summary ops): such an op is never
// folded, merged with a twin or dropped, even when its output goes unused. Kept beside the
// registry rather than in OpDef so that declaring it does not rebuild every file that includes
// registry.h; the family file that defines the op marks it right after adding it.
#pragma once
#include <string>

#include "mycel/ops/registry.h"

namespace mycel {

/// Marks the registered op `name` as having an effect (call at registration, after Registry::add).
void mark_effect(const std::string& name);
/// Whether `op` has an effect.
bool has_effect(const OpDef& op);

}  // namespace mycel

// Ops that exist only for what they record (summary ops): their output is a placeholder. Like
// collectives they carry OpDef::effect (never folded, merged, dropped or reordered); in addition
// the gradient's recomputed forward skips them, so a summary records once per step (a
// collective's output is a value the recomputation needs, so it cannot be skipped). Kept beside
// the registry so that declaring it does not rebuild every file that includes registry.h; the
// family file that defines the op marks it right after adding it.
#pragma once
#include <string>

#include "mycel/ops/registry.h"

namespace mycel {

/// Marks the registered op `name` as record-only (call at registration, after Registry::add).
void mark_record_only(const std::string& name);
/// Whether `op` is record-only.
bool is_record_only(const OpDef& op);

}  // namespace mycel

// Where graph mode's scheduler places a kernel. The split collectives mark theirs: the start of a
// non-blocking allreduce runs as soon as its inputs exist (with the ops that only feed it), its
// wait just before the first use of its result, so the work scheduled between them overlaps the
// communication. Kept beside the registry, as record_only.h is, so that declaring it does not
// rebuild every file that includes registry.h; the family file marks its ops after adding them.
#pragma once
#include <string>

#include "mycel/ops/registry.h"

namespace mycel {

enum class Placement { kAny, kEarly, kLate };

/// Sets the placement of the registered op `name` (call at registration, after Registry::add).
void set_placement(const std::string& name, Placement p);
/// The placement of `op` (kAny unless its family set one).
Placement placement_of(const OpDef& op);

}  // namespace mycel

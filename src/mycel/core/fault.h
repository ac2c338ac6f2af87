// Fault injection for crash-consistency tests: code that must survive a kill at any instant
// names its critical points, and a test picks one with the MYCEL_FAULT environment variable.
#pragma once

namespace mycel {

/// When MYCEL_FAULT equals `point`, the process SIGKILLs itself here (no destructor, no flush:
/// exactly what a kill leaves behind); when it equals `point` + ":raise", throws RuntimeError
/// instead (the error path). Otherwise does nothing; costs one getenv.
void fault_point(const char* point);

}  // namespace mycel

// Fault injection for crash-consistency tests: code that must survive a kill at any instant
// names its critical points, and a test picks one with the MYCEL_FAULT environment variable.
#pragma once

namespace mycel {

/// When MYCEL_FAULT equals `point`, the process SIGKILLs itself here (no destructor, no flush:
/// exactly what a kill leaves behind); `point` + ":raise" throws RuntimeError instead (the error
/// path); `point` + ":stop" SIGSTOPs the process until a SIGCONT (a test then acts while this
/// process is frozen at the point). Otherwise does nothing; costs one getenv.
void fault_point(const char* point);

}  // namespace mycel

// A hook the Program executor calls after each kernel while it is set. The Communicator sets it
// while non-blocking collectives are pending, to advance them between kernels (Open MPI moves a
// non-blocking collective only inside MPI calls); unset, it costs the executor one relaxed load.
#pragma once
#include <atomic>

namespace mycel {

/// nullptr, or the function to call after each kernel of a running Program.
inline std::atomic<void (*)()> g_between_kernels{nullptr};

}  // namespace mycel

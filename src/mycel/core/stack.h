// How much of the calling thread's stack is left: recursive passes (analysis) stop with an error
// while there is room to report it, whatever stack their caller gave them (a Python thread made
// with threading.stack_size, a sanitizer build's larger frames), instead of overflowing.
#pragma once
#include <cstddef>

namespace mycel {

/// Bytes between the caller's frame and the low end of its thread's stack; SIZE_MAX when the
/// bounds cannot be read or the frame lies outside them (a sanitizer's fake stack frame).
size_t stack_headroom();

}  // namespace mycel

// te_call's inference and kernel live in the TE library (src/mycel/te), which installs them here
// at static initialization. The op itself is declared in the registry like any other, so the lite
// runtime (which links ops but not the TE compiler) knows the op and refuses to run it.
#pragma once
#include "mycel/ops/registry.h"

namespace mycel {

struct TeCallHooks {
  InferFn infer;
  KernelFn kernel;
};
/// Installed once by src/mycel/te/te_call_impl.cc; empty in a build without the TE compiler.
void set_te_call_hooks(TeCallHooks hooks);

}  // namespace mycel

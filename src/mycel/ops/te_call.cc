// te_call: runs a compiled tensor-expression function (src/mycel/te) named by its table id. The
// registry entry holds no TE code: inference, kernel and bprop come from the TE library
// (te/te_call_impl.cc), so libmycel_lite, which has no run-time compiler, never links it.
#include "mycel/ops/te_call.h"

namespace mycel {
namespace {

TeCallHooks& hooks() {
  static TeCallHooks h;
  return h;
}

void check_hooks() {
  MYCEL_CHECK(hooks().infer && hooks().kernel, NotSupported,
              "[te_call] this library has no tensor-expression compiler (the lite runtime cannot "
              "run te_call; run the model with the full mycel library)");
}

}  // namespace

void set_te_call_hooks(TeCallHooks h) { hooks() = std::move(h); }

MYCEL_REGISTER_OPS(te_call) {
  OpDef op = make_op(
      "te_call", "TeCall",
      "Runs the compiled tensor-expression function `kernel` (mycel.te): its output, or a tuple of "
      "them.",
      {{"inputs", false, true}}, {attr("kernel", AttrKind::kInt, {})},
      [](const InferContext& c) {
        check_hooks();
        return hooks().infer(c);
      },
      [](const KernelContext& c) {
        check_hooks();
        hooks().kernel(c);
      },
      {DType::float32, DType::float64}, "bprop");
  r.add(std::move(op));
}

}  // namespace mycel

// Ternary elementwise ops with numpy broadcasting: select (the `where` of numpy) and clip.
#include "mycel/kernels/cpu/ternary.h"
#include "mycel/ops/infer_util.h"

namespace mycel {
namespace {

// cond must be bool; x and y promote to a common dtype; all three broadcast together.
std::vector<TensorMeta> select_infer(const InferContext& c) {
  if (!is_bool(c.in(0).dtype))
    MYCEL_THROW(TypeError, "[select] input 'cond' must be bool, got ", dtype_name(c.in(0).dtype));
  return {infer_broadcast(c, promote_types(c.in(1).dtype, c.in(2).dtype))};
}

// Inputs arrive promoted to one dtype; at least one bound must be given.
std::vector<TensorMeta> clip_infer(const InferContext& c) {
  if (!c.has_input(1) && !c.has_input(2))
    MYCEL_THROW(ValueError,
                "[clip_by_value] 'clip_value_min' and 'clip_value_max' cannot both be None");
  return {infer_broadcast(c, c.in(0).dtype)};
}

}  // namespace

MYCEL_REGISTER_OPS(ternary) {
  OpDef select;
  select.name = "select";
  select.class_name = "Select";
  select.doc = "Elementwise cond ? x : y with broadcasting (cond bool; x, y promoted).";
  select.inputs = {{"cond"}, {"x"}, {"y"}};
  select.infer = select_infer;
  select.kernel = cpu::select_kernel;
  select.dtypes = all_dtypes();
  select.dtype_input = 1;
  r.add(std::move(select));

  OpDef clip;
  clip.name = "clip_by_value";
  clip.class_name = "ClipByValue";
  clip.doc = "Elementwise min(max(x, clip_value_min), clip_value_max) with broadcasting.";
  clip.inputs = {{"x"}, {"clip_value_min", true}, {"clip_value_max", true}};
  clip.infer = clip_infer;
  clip.kernel = cpu::clip_kernel;
  clip.dtypes = all_dtypes();
  clip.promote_inputs = true;
  r.add(std::move(clip));
}

}  // namespace mycel

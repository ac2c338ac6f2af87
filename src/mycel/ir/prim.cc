#include "mycel/ir/prim.h"

namespace mycel::ir {

namespace {
struct PrimInfo {
  const char* name;
  int arity;
};
// Indexed by Prim; the static_assert below keeps it in step with the enum.
constexpr PrimInfo kPrims[] = {
    {"make_tuple", -1},
    {"make_list", -1},
    {"tuple_getitem", 2},
    {"tuple_len", 1},
    {"make_dict", 2},
    {"dict_getitem", 2},
    {"dict_setitem", 3},
    {"dict_keys", 1},
    {"dict_values", 1},
    {"dict_items", 1},
    {"switch", 3},
    {"partial", -1},
    {"depend", 2},
    {"unpack_call", -1},
    {"scalar_add", 2},
    {"scalar_sub", 2},
    {"scalar_mul", 2},
    {"scalar_div", 2},
    {"scalar_floordiv", 2},
    {"scalar_mod", 2},
    {"scalar_pow", 2},
    {"scalar_neg", 1},
    {"scalar_eq", 2},
    {"scalar_ne", 2},
    {"scalar_lt", 2},
    {"scalar_le", 2},
    {"scalar_gt", 2},
    {"scalar_ge", 2},
    {"scalar_not", 1},
    {"scalar_to_tensor", 2},
    {"tensor_to_scalar", 1},
    {"is", 2},
    {"is_not", 2},
    {"print", -1},
    {"assign", 2},
    {"shape", 1},
    {"rank", 1},
    {"dtype", 1},
    {"raise", -1},
};
static_assert(sizeof(kPrims) / sizeof(kPrims[0]) == static_cast<int>(Prim::kRaise) + 1,
              "kPrims must list every Prim in order");
}  // namespace

const char* prim_name(Prim p) { return kPrims[static_cast<int>(p)].name; }
int prim_arity(Prim p) { return kPrims[static_cast<int>(p)].arity; }

}  // namespace mycel::ir

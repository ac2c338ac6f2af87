// The global random generator: mycel.set_seed and the state random ops draw from.
#include "mycel/python/convert.h"

namespace mycel::py {

void init_random(nb::module_& m) {}

}  // namespace mycel::py

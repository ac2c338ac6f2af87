#include "mycel/ops/random_attrs.h"

#include <limits>

#include "mycel/core/error.h"
#include "mycel/core/shape.h"

namespace mycel {

void check_seeds(const InferContext& c) {
  for (const char* name : {"seed", "seed2"})
    if (c.attrs.get_int(name) < 0)
      MYCEL_THROW(ValueError, "[", c.op.name, "] attribute '", name, "' must be >= 0, got ",
                  c.attrs.get_int(name));
}

Shape sample_shape(const InferContext& c, const Shape& extra) {
  Shape s = c.attrs.get_ints("shape");
  for (int64_t d : s)
    if (d < 0)
      MYCEL_THROW(ValueError, "[", c.op.name, "] attribute 'shape' must have non-negative dims, ",
                  "got ", shape_str(s));
  s.insert(s.end(), extra.begin(), extra.end());
  int64_t n = 1;
  for (int64_t d : s) {
    if (d > 0 && n > std::numeric_limits<int64_t>::max() / 16 / d)
      MYCEL_THROW(ValueError, "[", c.op.name, "] output shape ", shape_str(s), " is too large");
    n *= d;
  }
  return s;
}

}  // namespace mycel

// The global random generator: mycel.set_seed and the state random ops draw from.
#include <nanobind/stl/array.h>

#include "mycel/core/random.h"
#include "mycel/frontend/py_convert.h"

namespace mycel::py {

void init_random(nb::module_& m) {
  m.def(
      "set_seed", [](uint64_t seed) { Generator::global().set_seed(seed); }, nb::arg("seed"),
      "Seeds the global Philox generator and resets its offset.");
  m.def(
      "get_rng_state", []() { return Generator::global().state(); },
      "The global generator's (seed, offset); offset counts Philox blocks drawn so far.");
  m.def(
      "set_rng_state",
      [](uint64_t seed, uint64_t offset) { Generator::global().set_state(seed, offset); },
      nb::arg("seed"), nb::arg("offset"), "Restores a state returned by get_rng_state.");
  m.def(
      "philox4x32_10",
      [](std::array<uint32_t, 4> ctr, std::array<uint32_t, 2> key) {
        return philox4x32_10(ctr, key);
      },
      nb::arg("counter"), nb::arg("key"), "One Philox4x32-10 block (for tests).");
}

}  // namespace mycel::py

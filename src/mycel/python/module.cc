// The _mycel extension module: thin glue only; each area binds itself in its own file.
#include "mycel/frontend/py_convert.h"

namespace mycel::py {
void init_core(nb::module_& m);
void init_tensor(nb::module_& m);
void init_shape(nb::module_& m);
void init_ops(nb::module_& m);
void init_random(nb::module_& m);
void init_data(nb::module_& m);
void init_mindrecord(nb::module_& m);
void init_dataset_engine(nb::module_& m);
void init_frontend(nb::module_& m);
void init_graph(nb::module_& m);
void init_ad(nb::module_& m);
void init_io(nb::module_& m);
void init_pynative(nb::module_& m);
void init_parallel(nb::module_& m);
void init_search(nb::module_& m);
void init_insight(nb::module_& m);
void init_te(nb::module_& m);
#ifdef MYCEL_WITH_LITE
void init_lite(nb::module_& m);
#endif
}  // namespace mycel::py

NB_MODULE(_mycel, m) {
  m.doc() = "Mycel core (C++)";
  nanobind::set_leak_warnings(false);  // objects alive at interpreter exit are expected, not leaks
  mycel::py::init_core(m);
  mycel::py::init_tensor(m);
  mycel::py::init_shape(m);
  mycel::py::init_random(m);
  mycel::py::init_ops(m);
  mycel::py::init_data(m);
  mycel::py::init_mindrecord(m);
  mycel::py::init_dataset_engine(m);
  mycel::py::init_frontend(m);
  mycel::py::init_graph(m);
  mycel::py::init_ad(m);
  mycel::py::init_io(m);
  mycel::py::init_pynative(m);
  mycel::py::init_parallel(m);
  mycel::py::init_search(m);
  mycel::py::init_insight(m);
  mycel::py::init_te(m);
#ifdef MYCEL_WITH_LITE
  mycel::py::init_lite(m);
#endif
}

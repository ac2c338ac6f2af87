// Dtypes, error classes, threads and allocator statistics.
#include <nanobind/stl/string.h>

#include "mycel/core/cpu_features.h"
#include "mycel/core/cpu_keeper.h"
#include "mycel/core/denormals.h"
#include "mycel/core/parallel.h"
#include "mycel/frontend/py_convert.h"
#include "mycel/kernels/cpu/dnnl_isa.h"

namespace mycel::py {

void init_core(nb::module_& m) {
  nb::enum_<DType> dt(m, "dtype", "Element type of a Tensor.");
  for (int i = 0; i < kNumDTypes; ++i) {
    auto t = static_cast<DType>(i);
    dt.value(dtype_name(t), t);
  }
  dt.def_prop_ro("itemsize", [](DType t) { return itemsize(t); })
      .def_prop_ro("is_floating_point", [](DType t) { return is_floating(t); })
      .def("__repr__",
           [](DType t) {
             std::string n = dtype_name(t);
             n[0] = static_cast<char>(std::toupper(n[0]));
             return n == "Bool" ? std::string("Bool") : n;  // MindSpore prints Float32, Int64, Bool
           })
      .def("__str__", [](DType t) { return std::string(dtype_name(t)); });
  m.def("promote_types", &promote_types);
  m.def("dtype_from", &to_dtype);
  m.def("set_num_threads", &set_num_threads);
  m.def("get_num_threads", &num_threads);
  m.def(
      "cpu_has_avx512", &cpu_has_avx512,
      "Whether Mycel's AVX-512 kernels run here (the CPU has them and MYCEL_MAX_CPU_ISA allows).");
  m.def(
      "cpu_has_bf16_units", [] { return cpu_has_avx512_bf16() || cpu::onednn_uses_amx(); },
      "Whether bfloat16 math has hardware here (AVX512-BF16 or AMX, as MYCEL_MAX_CPU_ISA and "
      "ONEDNN_MAX_CPU_ISA allow); without it oneDNN and Mycel emulate bfloat16 with float32 "
      "instructions, slower than float32 itself.");
  m.def("set_flush_denormal", &set_flush_denormal,
        "Sets or clears flush-to-zero and denormals-are-zero on this thread and the kernel thread "
        "pool; False where the CPU has no such control.");
  m.def("flush_denormal", &flush_denormal);
  m.def("serial_work_threshold", &serial_work_threshold);
  m.def("cpu_keepers_started", &cpu_keepers_started,
        "Keeper threads started so far (SCHED_IDLE spinners around graph runs, cpu_keeper.h).");
  m.def("allocator_stats", [] {
    AllocatorStats s = allocator_stats();
    nb::dict d;
    d["bytes_in_use"] = s.bytes_in_use;
    d["bytes_cached"] = s.bytes_cached;
    d["num_system_allocs"] = s.num_system_allocs;
    d["num_allocs"] = s.num_allocs;
    return d;
  });
  m.def("empty_cache", &empty_cache);

  // An index out of range is Python's IndexError and, as MindSpore raises for the kernels that
  // find it (ScatterNdAdd with an index beyond the input), a RuntimeError too.
  static PyObject* out_of_range = [] {
    PyObject* bases = PyTuple_Pack(2, PyExc_IndexError, PyExc_RuntimeError);
    PyObject* t = PyErr_NewExceptionWithDoc(
        "mycel.IndexOutOfRangeError",
        "An index out of range: an IndexError, and a RuntimeError as MindSpore raises.", bases,
        nullptr);
    Py_DECREF(bases);
    return t;
  }();
  m.attr("IndexOutOfRangeError") = nb::handle(out_of_range);
  // Error classes: our hierarchy maps onto Python built-ins.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const TypeError& e) {
      PyErr_SetString(PyExc_TypeError, e.what());
    } catch (const IndexError& e) {
      PyErr_SetString(out_of_range, e.what());
    } catch (const ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const OutOfMemory& e) {
      PyErr_SetString(PyExc_MemoryError, e.what());
    } catch (const NotSupported& e) {
      PyErr_SetString(PyExc_NotImplementedError, e.what());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
}

}  // namespace mycel::py

// Dataset engine glue: op factories, samplers, Python-backed sources/streams/per_batch_map, and
// the Pipeline iterator (waits with the GIL released, in slices, so Ctrl-C is noticed).
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "mycel/data/engine/engine.h"
#include "mycel/data/engine/tensor_source.h"
#include "mycel/python/data_convert.h"
#include "mycel/python/pipeline_handle.h"

namespace mycel::py {
namespace {

namespace eng = data::engine;

bool finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

/// A Python object that may be released from any thread (takes the GIL to drop it).
class PyRef {
 public:
  explicit PyRef(nb::object o) : o_(new nb::object(std::move(o))) {}
  ~PyRef() {
    if (!Py_IsInitialized()) return;  // interpreter gone: leak rather than crash
    nb::gil_scoped_acquire gil;
    delete o_;
  }
  nb::object& get() const { return *o_; }

 private:
  nb::object* o_;
};

/// Converts what a Python source returned into a row of ncols tensors (GIL held).
data::Row to_row(nb::handle item, size_t ncols, const char* who) {
  data::Row row;
  bool multi = nb::isinstance<nb::tuple>(item) || (ncols > 1 && nb::isinstance<nb::list>(item));
  if (multi) {
    for (nb::handle h : item) row.push_back(data_to_tensor(h));
  } else {
    row.push_back(data_to_tensor(item));
  }
  MYCEL_CHECK(row.size() == ncols, ValueError, who, ": the source returned ", row.size(),
              " columns but column_names has ", ncols);
  return row;
}

/// GeneratorDataset over a random-access Python object (__getitem__ and __len__).
class PySource : public data::Source {
 public:
  PySource(nb::object obj, std::vector<std::string> names)
      : obj_(std::move(obj)), names_(std::move(names)), n_(nb::len(obj_.get())) {}
  std::vector<std::string> column_names() const override { return names_; }
  int64_t size() const override { return n_; }
  data::Row get(int64_t i) const override {
    nb::gil_scoped_acquire gil;
    nb::object item = obj_.get()[nb::int_(i)];
    return to_row(item, names_.size(), "GeneratorDataset");
  }

 private:
  PyRef obj_;
  std::vector<std::string> names_;
  int64_t n_;
};

class PyStream : public eng::RowStream {
 public:
  PyStream(nb::object it, size_t ncols) : it_(std::move(it)), ncols_(ncols) {}
  bool next(data::Row& row) override {
    nb::gil_scoped_acquire gil;
    PyObject* item = PyIter_Next(it_.get().ptr());
    if (!item) {
      if (PyErr_Occurred()) throw nb::python_error();
      return false;
    }
    nb::object o = nb::steal(item);
    row = to_row(o, ncols_, "GeneratorDataset");
    return true;
  }

 private:
  PyRef it_;
  size_t ncols_;
};

/// GeneratorDataset over a callable returning an iterable, or an iterable: one pass per epoch.
class PyStreamFactory : public eng::StreamFactory {
 public:
  PyStreamFactory(nb::object src, size_t ncols) : src_(std::move(src)), ncols_(ncols) {}
  std::unique_ptr<eng::RowStream> open(int64_t) override {
    nb::gil_scoped_acquire gil;
    nb::handle s = src_.get();
    nb::object iterable = PyCallable_Check(s.ptr()) ? s() : nb::borrow(s);
    nb::object it = nb::steal(PyObject_GetIter(iterable.ptr()));
    if (!it.is_valid()) throw nb::python_error();
    return std::make_unique<PyStream>(std::move(it), ncols_);
  }

 private:
  PyRef src_;
  size_t ncols_;
};

/// per_batch_map: fn(*column_lists, batch_info) -> tuple of lists (numpy arrays in and out).
class PyBatchMap : public eng::BatchMap {
 public:
  PyBatchMap(nb::object fn, nb::object info_cls) : fn_(std::move(fn)), info_(std::move(info_cls)) {}
  std::vector<std::vector<Tensor>> apply(std::vector<std::vector<Tensor>> cols, int64_t batch_num,
                                         int64_t epoch_num) const override {
    nb::gil_scoped_acquire gil;
    nb::list args;
    for (auto& col : cols) {
      nb::list l;
      for (const Tensor& t : col) l.append(data_to_numpy(t));
      args.append(l);
    }
    args.append(info_.get()(batch_num, epoch_num));
    nb::object res = fn_.get()(*nb::tuple(args));
    std::vector<std::vector<Tensor>> out;
    if (!nb::isinstance<nb::tuple>(res)) res = nb::make_tuple(res);
    for (nb::handle col : res) {
      std::vector<Tensor> c;
      for (nb::handle h : col) c.push_back(data_to_tensor(h));
      out.push_back(std::move(c));
    }
    return out;
  }

 private:
  PyRef fn_, info_;
};

/// Owns a running Pipeline; stops it with the GIL released (workers may need the GIL to finish).
struct PyPipeline {
  std::unique_ptr<eng::Pipeline> p;
  void stop() {
    if (!p) return;
    nb::gil_scoped_release release;
    p.reset();
  }
  ~PyPipeline() {
    if (p && Py_IsInitialized() && !finalizing())
      stop();
    else
      p.release();  // at interpreter exit: leak instead of joining threads stuck on the GIL
  }
};

nb::object row_to_python(const data::Row& row, bool numpy) {
  nb::list l;
  for (const Tensor& t : row) l.append(data_to_python(t, numpy));
  return l;
}

}  // namespace

data::engine::Pipeline& pipeline_of(nb::handle obj) {
  PyPipeline* p = nullptr;
  if (!nb::try_cast<PyPipeline*>(obj, p) || !p)
    MYCEL_THROW(TypeError, "sink: expected a dataset Pipeline, got ",
                nb::cast<std::string>(nb::repr(obj.type())));
  if (!p->p) MYCEL_THROW(ValueError, "sink: the dataset pipeline was stopped");
  return *p->p;
}

void init_dataset_engine(nb::module_& m) {
  nb::module_ d = nb::borrow<nb::module_>(m.attr("data"));
  nb::module_ e = d.def_submodule("engine", "The parallel dataset engine (C++).");
  nb::class_<eng::Op>(e, "Op").def_prop_ro("name", &eng::Op::name);

  nb::class_<eng::SamplerSpec>(e, "SamplerSpec")
      .def(nb::init<>())
      .def_rw("kind", &eng::SamplerSpec::kind)
      .def_rw("start_index", &eng::SamplerSpec::start_index)
      .def_rw("num_samples", &eng::SamplerSpec::num_samples)
      .def_rw("replacement", &eng::SamplerSpec::replacement)
      .def_rw("num_shards", &eng::SamplerSpec::num_shards)
      .def_rw("shard_id", &eng::SamplerSpec::shard_id)
      .def_rw("shuffle", &eng::SamplerSpec::shuffle)
      .def_rw("indices", &eng::SamplerSpec::indices)
      .def_rw("weights", &eng::SamplerSpec::weights);
  e.def("sampler_size", &eng::sampler_size, nb::arg("spec"), nb::arg("n"));
  e.def(
      "sampler_indices",
      [](const eng::SamplerSpec& s, int64_t n, uint64_t seed, int64_t epoch) {
        return eng::sampler_indices(s, n, eng::mix_seed(seed, 0, 0), epoch);
      },
      nb::arg("spec"), nb::arg("n"), nb::arg("seed") = 0, nb::arg("epoch") = 0);
  e.def("check_sampler", &eng::check_sampler);

  e.def("tensor_source", &eng::tensor_source, nb::arg("columns"), nb::arg("names"));
  e.def("py_source",
        [](nb::object obj, std::vector<std::string> names) -> std::shared_ptr<data::Source> {
          return std::make_shared<PySource>(std::move(obj), std::move(names));
        });
  e.def("source_op", &eng::source_op, nb::arg("source"), nb::arg("sampler"), nb::arg("workers"));
  e.def("stream_op", [](nb::object src, size_t ncols, int64_t num_samples) {
    return eng::stream_op(std::make_shared<PyStreamFactory>(std::move(src), ncols), num_samples);
  });
  e.def("map_op", &eng::map_op);
  e.def(
      "batch_op",
      [](std::shared_ptr<eng::Op> child, int64_t size, bool drop, nb::object fn,
         nb::object info_cls, std::vector<int64_t> map_in, eng::Layout layout,
         std::vector<std::tuple<bool, std::vector<int64_t>, double, std::string>> pads,
         std::vector<std::string> names, int workers) {
        std::shared_ptr<eng::BatchMap> bm;
        if (!fn.is_none()) bm = std::make_shared<PyBatchMap>(std::move(fn), std::move(info_cls));
        std::vector<eng::PadSpec> ps;
        for (auto& [on, shape, value, text] : pads) ps.push_back({on, shape, value, text});
        return eng::batch_op(std::move(child), size, drop, bm, std::move(map_in), std::move(layout),
                             std::move(ps), std::move(names), workers);
      },
      nb::arg("child"), nb::arg("batch_size"), nb::arg("drop_remainder"),
      nb::arg("per_batch_map").none(), nb::arg("batch_info"), nb::arg("map_inputs"),
      nb::arg("layout"), nb::arg("pads"), nb::arg("column_names"), nb::arg("workers"));
  e.def("shuffle_op", &eng::shuffle_op);
  e.def("repeat_op", &eng::repeat_op);
  e.def("take_op", &eng::take_op);
  e.def("skip_op", &eng::skip_op);
  e.def("project_op", &eng::project_op);
  e.def("zip_op", &eng::zip_op);
  e.def("concat_op", &eng::concat_op);
  e.def(
      "current_row",
      []() -> nb::object {
        eng::RowContext r = eng::current_row();
        if (!r.active) return nb::none();
        return nb::make_tuple(r.seed, r.row_id);
      },
      "(seed, row id) of the row being mapped on this thread, or None outside a map.");

  nb::class_<PyPipeline>(e, "Pipeline")
      .def(
          "__init__",
          [](PyPipeline* self, std::shared_ptr<eng::Op> root, int64_t num_epochs, uint64_t seed,
             size_t prefetch, bool on_consumer) {
            new (self) PyPipeline();
            self->p = std::make_unique<eng::Pipeline>(std::move(root), num_epochs, seed, prefetch,
                                                      on_consumer);
          },
          nb::arg("root"), nb::arg("num_epochs"), nb::arg("seed"), nb::arg("prefetch"),
          nb::arg("on_consumer") = false)
      .def_prop_ro(
          "on_consumer", [](const PyPipeline& self) { return self.p && self.p->on_consumer(); },
          "Whether the pipeline runs on its consumer's thread (no threads of its own).")
      .def(
          "next",
          [](PyPipeline& self, bool numpy) -> nb::object {
            // None marks the end of an epoch; StopIteration the end of the data.
            if (!self.p) throw nb::stop_iteration();
            data::Row row;
            eng::Pipeline::Status st;
            while (true) {
              {
                nb::gil_scoped_release release;
                st = self.p->next(row, 100);
              }
              if (st != eng::Pipeline::Status::kTimeout) break;
              if (PyErr_CheckSignals() != 0) throw nb::python_error();
            }
            if (st == eng::Pipeline::Status::kEnd) throw nb::stop_iteration();
            if (st == eng::Pipeline::Status::kEpochEnd) return nb::none();
            return row_to_python(row, numpy);
          },
          nb::arg("numpy") = false)
      .def("stop", &PyPipeline::stop);
}

}  // namespace mycel::py

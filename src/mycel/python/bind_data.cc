// Dataset glue: build registered sources and transforms from Python keyword arguments and call
// them directly (the pipeline engine binds itself in bind_dataset_engine.cc).
#include <nanobind/stl/map.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "mycel/core/crc32c.h"
#include "mycel/data/source.h"
#include "mycel/data/string_tensor.h"
#include "mycel/data/text/sentencepiece.h"
#include "mycel/data/transform.h"
#include "mycel/python/data_convert.h"

namespace mycel::py {

data::ParamValue to_param(const std::string& owner, const std::string& key, nb::handle v) {
  if (v.is_none()) return std::monostate{};
  if (PyBool_Check(v.ptr())) return v.ptr() == Py_True;
  if (PyLong_Check(v.ptr())) return nb::cast<int64_t>(v);
  if (PyFloat_Check(v.ptr())) return nb::cast<double>(v);
  if (PyUnicode_Check(v.ptr())) return nb::cast<std::string>(v);
  if (PyBytes_Check(v.ptr()))  // a serialized model (SentencePieceTokenizer)
    return std::string(PyBytes_AS_STRING(v.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(v.ptr())));
  if (nb::isinstance<DType>(v)) return nb::cast<DType>(v);
  if (nb::isinstance<nb::list>(v) || nb::isinstance<nb::tuple>(v)) {
    bool all_int = true, all_num = true, all_str = true;
    for (nb::handle h : v) {
      bool is_int = PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr());
      all_int &= is_int;
      all_num &= is_int || PyFloat_Check(h.ptr());
      all_str &= PyUnicode_Check(h.ptr()) != 0;
    }
    if (nb::len(v) == 0) return std::vector<int64_t>{};
    if (all_int) {
      std::vector<int64_t> out;
      for (nb::handle h : v) out.push_back(nb::cast<int64_t>(h));
      return out;
    }
    if (all_num) {
      std::vector<double> out;
      for (nb::handle h : v) out.push_back(nb::cast<double>(h));
      return out;
    }
    if (all_str) {
      std::vector<std::string> out;
      for (nb::handle h : v) out.push_back(nb::cast<std::string>(h));
      return out;
    }
  }
  MYCEL_THROW(TypeError, "[", owner, "] argument '", key, "' has unsupported type ",
              py_type_name(v));
}

data::Params to_params(const std::string& owner, nb::dict kwargs) {
  std::map<std::string, data::ParamValue> m;
  for (auto [k, v] : kwargs) {
    std::string key = nb::cast<std::string>(k);
    m[key] = to_param(owner, key, v);
  }
  return data::Params(owner, std::move(m));
}

namespace {

// A Python callable used as a transform (map(operations=lambda ...)): numpy arrays in, arrays
// (or anything Tensor() accepts) out; runs with the GIL held.
class PyTransform : public data::Transform {
 public:
  explicit PyTransform(nb::object fn) : fn_(new nb::object(std::move(fn))) {}
  ~PyTransform() override {
    nb::gil_scoped_acquire gil;
    delete fn_;
  }
  std::vector<Tensor> apply(const std::vector<Tensor>& in, data::RowRng&) const override {
    nb::gil_scoped_acquire gil;
    nb::list args;
    for (const Tensor& t : in) args.append(data_to_numpy(t));
    nb::object out = (*fn_)(*nb::tuple(args));
    std::vector<Tensor> result;
    if (nb::isinstance<nb::tuple>(out)) {
      for (nb::handle h : out) result.push_back(data_to_tensor(h));
    } else {
      result.push_back(data_to_tensor(out));
    }
    return result;
  }
  std::string name() const override {
    nb::gil_scoped_acquire gil;
    return nb::hasattr(*fn_, "__name__") ? nb::cast<std::string>(fn_->attr("__name__")) : "python";
  }
  // Python code may draw from numpy/random itself: treat it as random (never cached).
  bool is_random() const override { return true; }
  bool takes_strings() const override { return true; }

 private:
  nb::object* fn_;  // deleted under the GIL
};

nb::tuple to_tuple(const std::vector<Tensor>& row) {
  nb::list l;
  for (const Tensor& t : row) l.append(data_to_python(t, false));
  return nb::tuple(l);
}
}  // namespace

void init_data(nb::module_& m) {
  nb::module_ d = m.def_submodule("data", "Dataset sources and transforms (C++).");
  nb::class_<data::Source>(d, "Source")
      .def_prop_ro("column_names", &data::Source::column_names)
      .def("__len__", &data::Source::size)
      .def("get", [](const data::Source& s, int64_t i) {
        if (i < 0 || i >= s.size())
          MYCEL_THROW(IndexError, "row ", i, " out of range for a source of ", s.size(), " rows");
        std::vector<Tensor> row;
        {
          nb::gil_scoped_release release;
          row = s.get(i);
        }
        return to_tuple(row);
      });
  nb::class_<data::Transform>(d, "Transform")
      .def_prop_ro("name", &data::Transform::name)
      .def_prop_ro("is_random", &data::Transform::is_random)
      .def(
          "apply",
          [](const data::Transform& t, std::vector<Tensor> cols, uint64_t seed, uint64_t row) {
            data::RowRng rng(seed, row);
            if (!t.takes_strings())
              for (const Tensor& c : cols)
                data::check_not_string(c, t.name(), "it takes numeric arrays only");
            std::vector<Tensor> out;
            {
              nb::gil_scoped_release release;
              out = t.apply(cols, rng);
            }
            return to_tuple(out);
          },
          nb::arg("columns"), nb::arg("seed") = 0, nb::arg("row") = 0);
  d.def(
      "make_source",
      [](const std::string& name, nb::kwargs kw) {
        return data::make_source(name, to_params(name, kw));
      },
      nb::arg("name"), nb::arg("kwargs"));
  d.def(
      "make_transform",
      [](const std::string& name, std::vector<std::shared_ptr<data::Transform>> children,
         nb::kwargs kw) { return data::make_transform(name, to_params(name, kw), children); },
      nb::arg("name"), nb::arg("children") = std::vector<std::shared_ptr<data::Transform>>{},
      nb::arg("kwargs"));
  d.def(
      "py_transform",
      [](nb::object fn) -> std::shared_ptr<data::Transform> {
        if (!PyCallable_Check(fn.ptr()))
          MYCEL_THROW(TypeError, "map: operations must be transforms or Python callables, got ",
                      py_type_name(fn));
        return std::make_shared<PyTransform>(std::move(fn));
      },
      nb::arg("fn"));
  d.def("source_names", &data::source_names);
  d.def(
      "to_row_value", [](nb::handle obj) { return data_to_tensor(obj); }, nb::arg("value"),
      "A row value as the engine holds it (strings become a string tensor).");
  d.def(
      "is_string", [](const Tensor& t) { return data::string_kind(t).has_value(); }, nb::arg("t"));
  d.def(
      "row_value_to_numpy", [](const Tensor& t) { return data_to_numpy(t); }, nb::arg("t"));
  d.def("transform_names", &data::transform_names);
  d.def(
      "sentencepiece_train",
      [](std::vector<std::string> sentences, std::vector<std::string> files,
         std::map<std::string, std::string> options) {
        std::string model;
        {
          nb::gil_scoped_release release;
          model = data::text::sentencepiece_train(sentences, files, options);
        }
        return nb::bytes(model.data(), model.size());
      },
      nb::arg("sentences"), nb::arg("files"), nb::arg("options"),
      "A SentencePiece model trained on sentences (or files): its serialized bytes.");
  d.def(
      "crc32c",
      [](nb::bytes data) {
        const char* p = data.c_str();
        size_t n = data.size();
        nb::gil_scoped_release release;  // GB/s, but a record may be large
        return crc32c(p, n);
      },
      nb::arg("data"), "The CRC-32C (Castagnoli) of bytes (TFRecordDataset's frame checksums).");
  d.def(
      "sentencepiece_check",
      [](nb::bytes model) {
        data::text::sentencepiece_check(std::string(model.c_str(), model.size()));
      },
      nb::arg("model"));
}

}  // namespace mycel::py

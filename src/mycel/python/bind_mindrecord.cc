// MindRecord glue: the C++ writer and reader behind mycel.mindrecord (FileWriter, FileReader).
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "mycel/data/mindrecord/commit.h"
#include "mycel/data/mindrecord/reader.h"
#include "mycel/data/mindrecord/writer.h"
#include "mycel/frontend/py_convert.h"

namespace mycel::py {

namespace {
using FieldTuple = std::tuple<std::string, std::string, std::optional<std::vector<int64_t>>>;

std::vector<data::mr::FieldSpec> to_fields(const std::vector<FieldTuple>& in) {
  std::vector<data::mr::FieldSpec> out;
  for (const auto& [name, type, shape] : in) {
    data::mr::FieldSpec f;
    f.name = name;
    f.type = data::mr::field_type_from_name(type, name);
    f.has_shape = shape.has_value();
    if (shape) f.shape = *shape;
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<FieldTuple> from_fields(const std::vector<data::mr::FieldSpec>& in) {
  std::vector<FieldTuple> out;
  for (const auto& f : in)
    out.emplace_back(f.name, data::mr::field_type_name(f.type),
                     f.has_shape ? std::optional<std::vector<int64_t>>(f.shape) : std::nullopt);
  return out;
}
}  // namespace

void init_mindrecord(nb::module_& m) {
  using data::mr::Reader;
  using data::mr::Writer;
  nb::module_ mr = m.def_submodule("mindrecord", "MindRecord writer and reader (C++).");
  nb::class_<Writer>(mr, "Writer")
      .def(nb::init<std::string, uint32_t, bool>(), nb::arg("file_name"), nb::arg("shard_num") = 1,
           nb::arg("overwrite") = false)
      .def("set_page_size", &Writer::set_page_size)
      .def(
          "add_schema",
          [](Writer& w, const std::vector<FieldTuple>& fields, const std::string& desc) {
            return w.add_schema(to_fields(fields), desc);
          },
          nb::arg("fields"), nb::arg("desc") = "")
      .def("add_index", &Writer::add_index)
      // rows: a list of rows, each a list (schema order) of (bytes, shape) pairs.
      .def("write_rows",
           [](Writer& w, nb::list rows) {
             std::vector<std::vector<data::mr::FieldValue>> batch;
             for (nb::handle row : rows) {
               std::vector<data::mr::FieldValue> vals;
               for (nb::handle cell : row) {
                 auto t = nb::cast<nb::tuple>(cell);
                 nb::bytes b = nb::cast<nb::bytes>(t[0]);
                 vals.push_back({b.c_str(), static_cast<uint64_t>(b.size()),
                                 nb::cast<std::vector<int64_t>>(t[1])});
               }
               batch.push_back(std::move(vals));
             }
             nb::gil_scoped_release release;  // `rows` keeps every bytes object alive meanwhile
             for (const auto& v : batch) w.write_row(v);
           })
      .def("commit",
           [](Writer& w) {
             nb::gil_scoped_release release;
             w.commit();
           })
      .def("abort", &Writer::abort)
      .def_prop_ro("file_names", &Writer::file_names)
      .def_prop_ro("rows_written", &Writer::rows_written)
      .def_prop_ro("committed", &Writer::committed);

  mr.def("committed_path", &mycel::data::mr::committed_path, nb::arg("path"),
         "The file a reader opens for shard `path` (a pending commit's temporary file, or path).");

  nb::class_<Reader>(mr, "Reader")
      .def(
          "__init__",
          [](Reader* r, const std::vector<std::string>& files, bool expand,
             const std::vector<std::string>& columns) {
            nb::gil_scoped_release release;
            new (r) Reader(files, expand, columns);
          },
          nb::arg("files"), nb::arg("expand"), nb::arg("columns") = std::vector<std::string>{})
      .def("__len__", &Reader::size)
      .def_prop_ro("column_names", &Reader::column_names)
      .def_prop_ro("file_names", &Reader::file_names)
      .def_prop_ro("fields", [](const Reader& r) { return from_fields(r.fields()); })
      .def_prop_ro("selected_fields",
                   [](const Reader& r) {
                     std::vector<data::mr::FieldSpec> sel;
                     for (size_t k : r.columns()) sel.push_back(r.fields()[k]);
                     return from_fields(sel);
                   })
      .def_prop_ro("desc", [](const Reader& r) { return r.header().desc; })
      .def_prop_ro("page_size", [](const Reader& r) { return r.header().page_size; })
      .def_prop_ro("shard_num", [](const Reader& r) { return r.header().shard_num; })
      .def_prop_ro("index_fields",
                   [](const Reader& r) {
                     std::vector<std::string> out;
                     for (uint32_t i : r.header().index_fields) out.push_back(r.fields()[i].name);
                     return out;
                   })
      .def("get",
           [](const Reader& r, int64_t i) {
             std::vector<Tensor> row;
             {
               nb::gil_scoped_release release;
               row = r.get(i);
             }
             nb::list l;
             for (const Tensor& t : row) l.append(nb::cast(t));
             return nb::tuple(l);
           })
      // Rows whose index field equals a value; the Python side picks the call by field type.
      .def("find_int",
           [](const Reader& r, const std::string& field, int64_t v) {
             data::mr::IndexKey k;
             k.i = v;
             return r.find(field, k);
           })
      .def("find_float",
           [](const Reader& r, const std::string& field, double v) {
             data::mr::IndexKey k;
             k.d = v;
             return r.find(field, k);
           })
      .def("find_str", [](const Reader& r, const std::string& field, const std::string& v) {
        data::mr::IndexKey k;
        k.s = v;
        return r.find(field, k);
      });
}

}  // namespace mycel::py

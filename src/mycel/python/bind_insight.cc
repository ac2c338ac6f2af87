// Insight glue: the event-file writer and the summary-op queue behind mycel.insight.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>

#include "mycel/insight/insight.h"
#include "mycel/frontend/py_convert.h"

namespace mycel::py {

namespace {
using Item = std::tuple<std::string, std::string, nb::object>;  // (plugin, tag, value)

std::vector<insight::SummaryValue> to_values(const std::vector<Item>& items) {
  std::vector<insight::SummaryValue> out;
  out.reserve(items.size());
  for (const auto& [plugin, tag, obj] : items) {
    insight::SummaryKind k = insight::kind_from_name(plugin, "SummaryRecord");
    // A copy: the caller's tensor (a weight the optimizer updates in place) may change before
    // the writer thread encodes it.
    Tensor t = to_tensor(obj);
    insight::check_value(k, tag, t.meta(), "SummaryRecord");
    out.push_back({k, tag, nb::isinstance<Tensor>(obj) ? t.clone() : t});
  }
  return out;
}
// A graph node's attribute from Python: str, bool, int, float, dtype, or a list of ints, floats,
// strs, dtypes or shapes (a shape is a list of dims, None for an unknown one).
insight::GraphAttr to_graph_attr(const std::string& node, const std::string& key, nb::handle h) {
  auto bad = [&](const char* what) {
    return std::string("graph summary: node '") + node + "' attribute '" + key + "': " + what +
           ", got " + nb::cast<std::string>(nb::repr(h));
  };
  if (nb::isinstance<nb::str>(h)) return nb::cast<std::string>(h);
  if (PyBool_Check(h.ptr())) return h.ptr() == Py_True;
  if (PyLong_Check(h.ptr())) return nb::cast<int64_t>(h);
  if (PyFloat_Check(h.ptr())) return nb::cast<double>(h);
  if (nb::isinstance<DType>(h)) return nb::cast<DType>(h);
  if (!nb::isinstance<nb::list>(h) && !nb::isinstance<nb::tuple>(h))
    throw nb::type_error(bad("expected a str, bool, int, float, dtype or a list of them").c_str());
  std::vector<nb::handle> items;
  for (nb::handle x : h) items.push_back(x);
  auto all = [&](auto pred) { return std::all_of(items.begin(), items.end(), pred); };
  auto is_int = [](nb::handle x) { return PyLong_Check(x.ptr()) && !PyBool_Check(x.ptr()); };
  if (items.empty() || all(is_int)) {
    std::vector<int64_t> v;
    for (nb::handle x : items) v.push_back(nb::cast<int64_t>(x));
    return v;
  }
  if (all([&](nb::handle x) { return is_int(x) || PyFloat_Check(x.ptr()); })) {
    std::vector<double> v;
    for (nb::handle x : items) v.push_back(nb::cast<double>(x));
    return v;
  }
  if (all([](nb::handle x) { return nb::isinstance<nb::str>(x); })) {
    std::vector<std::string> v;
    for (nb::handle x : items) v.push_back(nb::cast<std::string>(x));
    return v;
  }
  if (all([](nb::handle x) { return nb::isinstance<DType>(x); })) {
    std::vector<DType> v;
    for (nb::handle x : items) v.push_back(nb::cast<DType>(x));
    return v;
  }
  std::vector<std::vector<int64_t>> shapes;
  for (nb::handle x : items) {
    if (!nb::isinstance<nb::list>(x) && !nb::isinstance<nb::tuple>(x))
      throw nb::type_error(bad("a list must hold only ints, floats, strs, dtypes or shapes").c_str());
    std::vector<int64_t> dims;
    for (nb::handle d : x) {
      if (d.is_none()) dims.push_back(-1);
      else if (is_int(d)) dims.push_back(nb::cast<int64_t>(d));
      else throw nb::type_error(bad("a shape's dims must be ints or None").c_str());
    }
    shapes.push_back(std::move(dims));
  }
  return shapes;
}

nb::object graph_attr_to_py(const insight::GraphAttr& a) {
  return std::visit([](const auto& x) -> nb::object {
    using T = std::decay_t<decltype(x)>;
    if constexpr (std::is_same_v<T, std::vector<std::vector<int64_t>>>) {
      nb::list l;
      for (const auto& dims : x) {
        nb::list d;
        for (int64_t v : dims) d.append(v < 0 ? nb::none() : nb::cast(v));
        l.append(d);
      }
      return l;
    } else {
      return nb::cast(x);
    }
  }, a);
}
}  // namespace

void init_insight(nb::module_& m) {
  nb::module_ ins = m.def_submodule("insight", "Summaries as TensorBoard event files (C++).");
  nb::class_<insight::EventWriter>(ins, "EventWriter",
                                   "Appends Events to one file from a background thread.")
      .def(nb::init<const std::string&, size_t>(), nb::arg("path"), nb::arg("max_pending") = 256)
      .def(
          "write",
          [](insight::EventWriter& w, int64_t step, double wall_time,
             const std::vector<Item>& items, bool take_queued) {
            auto values = to_values(items);
            if (take_queued)  // the summary ops' values: already copies, moved in without another
              for (auto& v : insight::SummaryQueue::get().take()) values.push_back(std::move(v));
            nb::gil_scoped_release release;  // waits only when the queue is full
            w.write(step, wall_time, std::move(values));
          },
          nb::arg("step"), nb::arg("wall_time"), nb::arg("values"), nb::arg("take_queued") = false,
          "Queues one Event of [(plugin, name, value)] (and, with take_queued, what summary ops "
          "recorded since the last take) at `step`; returns at once.")
      .def(
          "write_graph",
          [](insight::EventWriter& w, int64_t step, double wall_time, nb::list nodes) {
            std::vector<insight::GraphNode> g;
            for (nb::handle item : nodes) {
              auto t = nb::cast<nb::tuple>(item);
              if (t.size() != 4)
                throw nb::value_error("graph summary: each node must be (name, op, inputs, attrs)");
              insight::GraphNode n{nb::cast<std::string>(t[0]), nb::cast<std::string>(t[1]),
                                   nb::cast<std::vector<std::string>>(t[2]), {}};
              for (auto [k, v] : nb::cast<nb::dict>(t[3])) {
                std::string key = nb::cast<std::string>(k);
                n.attrs.emplace_back(key, to_graph_attr(n.name, key, v));
              }
              g.push_back(std::move(n));
            }
            std::string ev = insight::graph_event(step, wall_time, g);
            nb::gil_scoped_release release;
            w.write_event(std::move(ev));
          },
          nb::arg("step"), nb::arg("wall_time"), nb::arg("nodes"),
          "Queues one Event whose graph_def is the GraphDef of [(name, op, [input names], "
          "{attr: value})] (TensorBoard's graph plugin reads it).")
      .def(
          "flush",
          [](insight::EventWriter& w) {
            nb::gil_scoped_release release;
            w.flush();
          },
          "Returns when every queued Event is in the file.")
      .def(
          "close",
          [](insight::EventWriter& w) {
            nb::gil_scoped_release release;
            w.close();
          },
          "Flushes, stops the thread and closes the file.")
      .def_prop_ro("path", &insight::EventWriter::path)
      .def_prop_ro("num_written", &insight::EventWriter::num_written)
      .def_prop_ro("num_waits", &insight::EventWriter::num_waits);

  ins.def(
      "read_event_file",
      [](const std::string& path) {
        std::vector<insight::ReadEvent> events;
        bool complete = true;
        {
          nb::gil_scoped_release release;
          events = insight::read_event_file(path, &complete);
        }
        nb::list out;
        for (auto& e : events) {
          nb::list values;
          for (auto& v : e.values) {
            nb::dict d;
            d["tag"] = v.tag;
            d["plugin"] = insight::kind_name(v.kind);
            switch (v.kind) {
              case insight::SummaryKind::kScalar:
                d["value"] = v.scalar;
                break;
              case insight::SummaryKind::kHistogram:
                d["min"] = v.min, d["max"] = v.max, d["num"] = v.num, d["sum"] = v.sum;
                d["sum_squares"] = v.sum_squares;
                d["bucket_limit"] = nb::cast(v.bucket_limit), d["bucket"] = nb::cast(v.bucket);
                break;
              case insight::SummaryKind::kImage:
                d["height"] = v.height, d["width"] = v.width, d["channels"] = v.channels;
                d["png"] = nb::bytes(v.png.data(), v.png.size());
                break;
              case insight::SummaryKind::kTensor:
                d["value"] = nb::cast(std::move(v.tensor));
                break;
            }
            values.append(d);
          }
          if (!e.graph_def.empty()) {  // kept encoded: decode_graph_def when a page asks for it
            nb::dict d;
            d["tag"] = "graph";
            d["plugin"] = "graph";
            d["graph_def"] = nb::bytes(e.graph_def.data(), e.graph_def.size());
            values.append(d);
          }
          out.append(nb::make_tuple(e.step, e.wall_time, values));
        }
        return nb::make_tuple(out, complete);
      },
      nb::arg("path"),
      "([(step, wall_time, [value dict])], complete): every complete record of an event file; "
      "complete is False when a torn or corrupt tail ended the read.");

  ins.def(
      "decode_graph_def",
      [](nb::bytes data) {
        std::vector<insight::GraphNode> nodes =
            insight::decode_graph_def(std::string(data.c_str(), data.size()));
        nb::list out;
        for (const auto& n : nodes) {
          nb::dict attrs;
          for (const auto& [k, v] : n.attrs) attrs[k.c_str()] = graph_attr_to_py(v);
          out.append(nb::make_tuple(n.name, n.op, nb::cast(n.inputs), attrs));
        }
        return out;
      },
      nb::arg("data"), "[(name, op, [input names], {attr: value})] of a serialized GraphDef.");

  ins.def(
      "debugger_start",
      [](bool nan, bool inf, double max_abs, bool raise) {
        insight::debugger::start({nan, inf, max_abs, raise});
      },
      nb::arg("nan") = true, nb::arg("inf") = true, nb::arg("max_abs") = 0.0,
      nb::arg("raise_on_hit") = true,
      "Checks every kernel output for the watch conditions until debugger_stop.");
  ins.def("debugger_stop", &insight::debugger::stop);
  ins.def(
      "debugger_take",
      [] {
        nb::list l;
        for (const auto& h : insight::debugger::take())
          l.append(nb::make_tuple(h.op, h.where, h.condition, h.output, h.count, h.numel));
        return l;
      },
      "[(op, where, condition, output, count, numel)] hits since debugger_start.");

  ins.def(
      "attach_summaries", [] { insight::SummaryQueue::get().attach(); },
      "A SummaryRecord opened: summary ops start keeping their values.");
  ins.def(
      "detach_summaries", [] { insight::SummaryQueue::get().detach(); },
      "A SummaryRecord closed: with none left, summary ops keep nothing.");
  ins.def(
      "take_summaries",
      [] {
        nb::list l;
        for (auto& v : insight::SummaryQueue::get().take())
          l.append(nb::make_tuple(insight::kind_name(v.kind), v.tag, nb::cast(std::move(v.value))));
        return l;
      },
      "[(plugin, name, Tensor)] recorded by summary ops since the last take (latest per name).");

  ins.def("profiler_start", &insight::profiler::start,
          "Clears the op buffer and starts timing launches.");
  ins.def("profiler_stop", &insight::profiler::stop, "Stops timing launches.");
  ins.def("profiler_on", &insight::profiler::on);
  ins.def("profiler_now_ns", &insight::profiler::now_ns, "The profiler's clock (steady, ns).");
  ins.def(
      "profiler_take",
      [] {
        std::vector<insight::profiler::OpEvent> ev = insight::profiler::take();
        nb::list l;
        for (const auto& e : ev)
          l.append(nb::make_tuple(e.name, e.start_ns, e.end_ns, e.bytes, e.thread));
        return l;
      },
      "[(op, start_ns, end_ns, output_bytes, thread)] of the launches timed since profiler_start.");
}

}  // namespace mycel::py

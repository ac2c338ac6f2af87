// Insight glue: the event-file writer and the summary-op queue behind mycel.insight.
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

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
          out.append(nb::make_tuple(e.step, e.wall_time, values));
        }
        return nb::make_tuple(out, complete);
      },
      nb::arg("path"),
      "([(step, wall_time, [value dict])], complete): every complete record of an event file; "
      "complete is False when a torn or corrupt tail ended the read.");

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

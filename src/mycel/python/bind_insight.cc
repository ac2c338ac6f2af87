// Insight glue: the event-file writer and the summary-op queue behind mycel.insight.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <ctime>

#include "mycel/data/engine/engine.h"
#include "mycel/frontend/py_convert.h"
#include "mycel/insight/insight.h"

namespace mycel::py {

namespace {
nb::object site_tuple(const insight::SiteInfo* s) {
  if (!s) return nb::none();
  return nb::make_tuple(s->op, s->where, s->source, nb::cast(s->weights), nb::cast(s->input_names),
                        s->collective, s->graph, s->cell);
}

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
    out.push_back({k, insight::summary_tag(k, tag, "SummaryRecord"),
                   nb::isinstance<Tensor>(obj) ? t.clone() : t});
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
      throw nb::type_error(
          bad("a list must hold only ints, floats, strs, dtypes or shapes").c_str());
    std::vector<int64_t> dims;
    for (nb::handle d : x) {
      if (d.is_none())
        dims.push_back(-1);
      else if (is_int(d))
        dims.push_back(nb::cast<int64_t>(d));
      else
        throw nb::type_error(bad("a shape's dims must be ints or None").c_str());
    }
    shapes.push_back(std::move(dims));
  }
  return shapes;
}

nb::object graph_attr_to_py(const insight::GraphAttr& a) {
  return std::visit(
      [](const auto& x) -> nb::object {
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
      },
      a);
}
}  // namespace

void init_insight(nb::module_& m) {
  nb::module_ ins = m.def_submodule("insight", "Summaries as TensorBoard event files (C++).");
  nb::class_<insight::EventWriter>(ins, "EventWriter",
                                   "Appends Events to one file from a background thread.")
      .def(nb::init<const std::string&, size_t>(), nb::arg("path"), nb::arg("max_pending") = 256)
      .def(
          "__init__",
          [](insight::EventWriter* w, const std::string& path, size_t max_pending,
             uint64_t max_file_size, const std::string& head, const std::string& tail,
             int64_t first_time) {
            // Rotated files: head + seconds + tail, the seconds bumped past the previous file's
            // so that names stay unique and sort in writing order (TensorBoard's order).
            auto last = std::make_shared<int64_t>(first_time);
            auto next = [head, tail, last] {
              const int64_t now = static_cast<int64_t>(std::time(nullptr));
              *last = std::max(now, *last + 1);
              return head + std::to_string(*last) + tail;
            };
            new (w) insight::EventWriter(path, max_pending, max_file_size, next);
          },
          nb::arg("path"), nb::arg("max_pending"), nb::arg("max_file_size"), nb::arg("head"),
          nb::arg("tail"), nb::arg("first_time"),
          "A writer that rotates to head + <seconds> + tail when a file would exceed "
          "max_file_size bytes.")
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
              insight::GraphNode n{nb::cast<std::string>(t[0]),
                                   nb::cast<std::string>(t[1]),
                                   nb::cast<std::vector<std::string>>(t[2]),
                                   {}};
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
      .def_prop_ro("paths", &insight::EventWriter::paths)
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
      [](nb::callable on_launch_fn, nb::callable on_step_end_fn) {
        // The executor calls these on the launching thread, with or without the GIL held; the
        // last reference may go on such a thread too, so the holder drops it under the GIL.
        struct Held {
          nb::object f;
          explicit Held(nb::object o) : f(std::move(o)) {}
          ~Held() {
            nb::gil_scoped_acquire gil;
            f.reset();
          }
        };
        auto on_launch_h = std::make_shared<Held>(on_launch_fn);
        auto on_step_h = std::make_shared<Held>(on_step_end_fn);
        auto launch = [on_launch_h](const insight::debugger::Launch& l) -> std::string {
          const nb::object& on_launch = on_launch_h->f;
          nb::gil_scoped_acquire gil;
          auto tensors = [](const std::vector<Tensor>& ts) {
            nb::list out;
            for (const Tensor& t : ts) out.append(t.defined() ? nb::cast(t) : nb::none());
            return out;
          };
          nb::list ptrs;  // the launched inputs' buffers (a copy made for the report has its own)
          for (const Tensor& t : l.launched)
            ptrs.append(t.defined() ? reinterpret_cast<uintptr_t>(t.data()) : uintptr_t{0});
          nb::object r =
              on_launch(l.op, site_tuple(l.site), tensors(l.inputs), tensors(l.outputs), ptrs);
          return r.is_none() ? std::string() : nb::cast<std::string>(r);
        };
        auto step = [on_step_h] {
          nb::gil_scoped_acquire gil;
          on_step_h->f();
        };
        insight::debugger::start(launch, step);
      },
      nb::arg("on_launch"), nb::arg("on_step_end"),
      "Until debugger_stop, calls on_launch(op, site, inputs, outputs, input_ptrs) after every "
      "kernel launch "
      "(a returned str makes the launch raise RuntimeError with it) and on_step_end() after each "
      "outermost compiled-program run. The tensors are the launch's own buffers: copy what you "
      "keep.");
  ins.def("debugger_stop", &insight::debugger::stop);

  ins.def(
      "summary_tag",
      [](const std::string& plugin, const std::string& tag) {
        return insight::summary_tag(insight::kind_from_name(plugin, "SummaryRecord"), tag,
                                    "SummaryRecord.add_value");
      },
      nb::arg("plugin"), nb::arg("tag"),
      "The tag written for `tag` (a MindSpore kind suffix such as '[:Scalar]' dropped; one "
      "naming another kind raises ValueError).");
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
        nb::list l;
        for (const auto& e : insight::profiler::take())
          l.append(nb::make_tuple(e.site, e.scope, e.start_ns, e.end_ns, e.bytes, e.thread));
        return l;
      },
      "[(site, scope, start_ns, end_ns, output_bytes, thread)] of the launches timed since "
      "profiler_start (site and scope index profiler_sites() and profiler_scopes(); -1: none).");
  ins.def(
      "profiler_sites",
      [] {
        nb::list l;
        for (const auto& s : insight::profiler::sites()) l.append(site_tuple(&s));
        return l;
      },
      "[(op, where, source, weights, input_names, collective, graph)] per launch site.");
  ins.def("profiler_scopes", &insight::profiler::scopes, "Cell scopes pushed, by id.");
  ins.def(
      "profiler_take_spans",
      [] {
        nb::list l;
        for (const auto& s : insight::profiler::take_spans())
          l.append(nb::make_tuple(s.track, s.name, s.start_ns, s.end_ns, s.value, s.thread));
        return l;
      },
      "[(track, name, start_ns, end_ns, value, thread)]: steps (value: arena bytes) and data "
      "waits (value: rows left in the prefetch queue).");
  ins.def(
      "profiler_span",
      [](const std::string& track, const std::string& name, int64_t t0, int64_t t1, int64_t v) {
        insight::profiler::span(track.c_str(), name.c_str(), t0, t1, v);
      },
      nb::arg("track"), nb::arg("name"), nb::arg("start_ns"), nb::arg("end_ns"),
      nb::arg("value") = -1, "Adds a span (Python-side step phases).");
  ins.def("profiler_push_scope", &insight::profiler::push_scope, nb::arg("scope"),
          "Enters a Cell scope on this thread (eager launches are tagged with it).");
  ins.def("profiler_pop_scope", &insight::profiler::pop_scope);
  ins.def(
      "pipeline_stats",
      [] {
        nb::list l;
        for (const auto& s : data::engine::pipeline_stats())
          l.append(nb::make_tuple(s.pipeline, s.op_id, s.parent, s.name, s.rows, s.wait_ns,
                                  s.queued, s.capacity));
        return l;
      },
      "[(pipeline, op_id, parent, name, rows, wait_ns, queued, capacity)] of the running dataset "
      "pipelines (and those that stopped since the last call); counted while profiling.");
}

}  // namespace mycel::py

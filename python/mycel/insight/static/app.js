// Mycel Insight's pages: one script, one function per page (chosen by the URL path). Charts are
// plotly.js (served from the plotly package); data comes from the JSON API of dashboard.py.
"use strict";

const PAGES = ["scalars", "histograms", "images", "graph", "dataset", "profiler", "lineage"];
const content = document.getElementById("content");
const controls = document.getElementById("controls");

// ---- helpers
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c);
  return e;
}

const shownErrors = new Set();
function showErrors(errors) {
  const box = document.getElementById("errors");
  for (const m of errors || []) shownErrors.add(m);
  box.hidden = shownErrors.size === 0;
  box.replaceChildren(el("strong", {}, "Some files could not be read:"),
                      el("ul", {}, ...[...shownErrors].map((m) => el("li", {}, m))));
}

async function api(path, params) {
  const q = new URLSearchParams(params || {}).toString();
  const r = await fetch(path + (q ? "?" + q : ""));
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  const body = await r.json();
  showErrors(body.errors);
  return body;
}

function runSelect(runs, onchange) {
  const s = el("select", { id: "run", onchange: () => onchange(s.value) },
               ...runs.map((r) => el("option", { value: r }, r)));
  controls.append(el("h4", {}, "Run"), s);
  return s;
}

function empty(text) { content.replaceChildren(el("p", { class: "muted" }, text)); }

function plot(div, traces, layout) {
  const base = { margin: { l: 50, r: 10, t: 10, b: 40 }, showlegend: traces.length > 1,
                 legend: { orientation: "h" } };
  return Plotly.react(div, traces, Object.assign(base, layout || {}), { displaylogo: false, responsive: true });
}

// ---- scalars: several runs overlaid, smoothing, log scale, step / time axis
function smooth(ys, w) {  // TensorBoard's debiased exponential moving average
  let last = 0, n = 0;
  return ys.map((y) => {
    if (y === null || w === 0) return y;
    last = last * w + (1 - w) * y;
    n += 1;
    return last / (1 - Math.pow(w, n));
  });
}

async function pageScalars() {
  const { runs } = await api("/api/runs");
  if (!runs.length) return empty("No runs with summaries in this log directory.");
  const data = {};
  for (const r of runs) data[r] = (await api("/api/scalars", { run: r })).tags;
  const tags = [...new Set(runs.flatMap((r) => Object.keys(data[r])))].sort();
  const boxes = runs.map((r) => el("input", { type: "checkbox", class: "run-toggle", value: r, checked: "" }));
  const smoothing = el("input", { id: "smoothing", type: "range", min: "0", max: "0.99", step: "0.01", value: "0" });
  const smoothingText = el("span", { id: "smoothing-value" }, "0");
  const logScale = el("input", { id: "logscale", type: "checkbox" });
  const xAxis = el("select", { id: "xaxis" }, el("option", { value: "step" }, "step"),
                   el("option", { value: "relative" }, "relative time (s)"),
                   el("option", { value: "wall" }, "wall time"));
  controls.append(el("h4", {}, "Runs"), ...boxes.map((b, i) => el("label", {}, b, " " + runs[i])),
                  el("h4", {}, "Smoothing"), smoothing, smoothingText,
                  el("h4", {}, "Axes"), el("label", {}, logScale, " log scale (y)"),
                  el("label", {}, "x: ", xAxis));
  if (!tags.length) return empty("No scalars recorded.");
  content.replaceChildren(...tags.map((t) => el("div", { class: "card" }, el("h3", {}, t),
    el("div", { class: "chart scalar-chart", "data-tag": t }))));
  function draw() {
    const w = Number(smoothing.value);
    smoothingText.textContent = w.toFixed(2);
    const on = boxes.filter((b) => b.checked).map((b) => b.value);
    for (const div of content.querySelectorAll(".scalar-chart")) {
      const t = div.dataset.tag;
      const traces = on.filter((r) => data[r][t]).map((r) => {
        const pts = data[r][t];
        const x = xAxis.value === "step" ? pts.map((p) => p[0])
          : xAxis.value === "relative" ? pts.map((p) => p[1] - pts[0][1])
          : pts.map((p) => new Date(p[1] * 1000));
        return { x, y: smooth(pts.map((p) => p[2]), w), name: r, mode: "lines+markers", type: "scatter" };
      });
      plot(div, traces, { yaxis: { type: logScale.checked ? "log" : "linear" },
                          xaxis: { title: { text: xAxis.selectedOptions[0].text } } });
    }
  }
  for (const c of [...boxes, logScale, xAxis]) c.addEventListener("change", draw);
  smoothing.addEventListener("input", draw);
  draw();
}

// ---- histograms over steps: a heatmap (steps down, values across) on one common grid
function rebin(h, lo, hi, nbins) {
  const out = new Array(nbins).fill(0);
  const width = (hi - lo) / nbins || 1;
  let left = h.min;
  h.bucket.forEach((count, k) => {
    const right = h.bucket_limit[k];
    if (count > 0) {
      if (right <= left) {  // a bucket of one value
        out[Math.min(nbins - 1, Math.max(0, Math.floor((left - lo) / width)))] += count;
      } else {  // spread uniformly over the grid cells it overlaps
        for (let b = 0; b < nbins; b++) {
          const a = lo + b * width, z = a + width;
          const overlap = Math.min(z, right) - Math.max(a, left);
          if (overlap > 0) out[b] += count * overlap / (right - left);
        }
      }
    }
    left = right;
  });
  return out;
}

async function pageHistograms() {
  const { runs } = await api("/api/runs");
  if (!runs.length) return empty("No runs with summaries in this log directory.");
  let current = runs[0];
  const mode = el("select", { id: "hist-mode" }, el("option", { value: "heatmap" }, "heatmap"),
                  el("option", { value: "ridge" }, "ridge (offset)"));
  async function show(run) {
    current = run;
    const { tags } = await api("/api/histograms", { run });
    const names = Object.keys(tags).sort();
    if (!names.length) return empty("No histograms recorded in this run.");
    content.replaceChildren(...names.map((t) => el("div", { class: "card" }, el("h3", {}, t),
      el("div", { class: "chart histogram-chart", "data-tag": t }))));
    for (const div of content.querySelectorAll(".histogram-chart")) {
      const hs = tags[div.dataset.tag];
      const lo = Math.min(...hs.map((h) => h.min)), hi = Math.max(...hs.map((h) => h.max));
      const nb = 40, width = (hi - lo) / nb || 1;
      const x = [...Array(nb).keys()].map((b) => lo + (b + 0.5) * width);
      const z = hs.map((h) => rebin(h, lo, hi, nb));
      const axes = { xaxis: { title: { text: "value" } }, yaxis: { title: { text: "step" } } };
      if (mode.value === "heatmap") {
        plot(div, [{ type: "heatmap", x, y: hs.map((h) => h.step), z, colorscale: "Viridis",
                     colorbar: { title: { text: "count" } } }], axes);
      } else {  // one curve per step, drawn up from the step's baseline (TensorBoard's offset view)
        const steps = hs.map((h) => h.step);
        const gap = steps.length > 1 ? (steps[steps.length - 1] - steps[0]) / (steps.length - 1) : 1;
        const top = Math.max(...z.flat()) || 1;
        plot(div, z.map((row, i) => ({ type: "scatter", mode: "lines", x, name: `step ${steps[i]}`,
                                        y: row.map((c) => steps[i] + 2.5 * gap * c / top),
                                        customdata: row, hovertemplate: "%{x:.4g}: %{customdata:.3g}",
                                        line: { color: `hsl(${220 - 180 * i / Math.max(1, z.length - 1)},60%,45%)`, width: 1 } })),
             Object.assign(axes, { showlegend: false }));
      }
    }
  }
  runSelect(runs, show);
  controls.append(el("h4", {}, "View"), mode);
  mode.addEventListener("change", () => show(current));
  await show(runs[0]);
}

// ---- images with a step slider
async function pageImages() {
  const { runs } = await api("/api/runs");
  if (!runs.length) return empty("No runs with summaries in this log directory.");
  async function show(run) {
    const { tags } = await api("/api/images", { run });
    const names = Object.keys(tags).sort();
    if (!names.length) return empty("No images recorded in this run.");
    content.replaceChildren(...names.map((t) => {
      const items = tags[t];
      const src = (i) => "/api/image?" + new URLSearchParams({ run, tag: t, index: items[i].index });
      const last = items.length - 1;
      const img = el("img", { class: "summary", src: src(last), alt: t });
      const label = el("span", { class: "step-label" }, `step ${items[last].step}`);
      const slider = el("input", { type: "range", class: "step-slider", min: "0", max: String(last),
                                   step: "1", value: String(last), "data-tag": t });
      slider.addEventListener("input", () => {
        const i = Number(slider.value);
        img.src = src(i);
        label.textContent = `step ${items[i].step}`;
      });
      return el("div", { class: "card image-card" }, el("h3", {}, t), img, el("br"), slider, " ", label);
    }));
  }
  runSelect(runs, show);
  await show(runs[0]);
}

// ---- dataset pipeline graph: sources at the top, the last stage at the bottom
async function pageDataset() {
  const { runs } = await api("/api/runs");
  if (!runs.length) return empty("No runs in this log directory.");
  async function show(run) {
    const { graph } = await api("/api/dataset_graph", { run });
    if (!graph || !graph.nodes || !graph.nodes.length) return empty("No dataset graph in this run.");
    function render(k) {
      const n = graph.nodes[k];
      const kids = n.children.map(render);
      const params = Object.entries(n.params || {});
      const box = el("div", { class: "ds-node", "data-op": n.op }, el("h4", {}, n.op),
        n.columns ? el("div", { class: "muted" }, "columns: " + n.columns.join(", ")) : null,
        params.length ? el("table", { class: "data" }, ...params.map(([p, v]) =>
          el("tr", {}, el("th", {}, p), el("td", {}, typeof v === "string" ? v : JSON.stringify(v))))) : null);
      return el("div", {}, kids.length ? el("div", { class: "ds-children" }, ...kids) : null,
                kids.length ? el("div", { class: "ds-arrow" }, "\u2193") : null, box);
    }
    content.replaceChildren(render(0));
  }
  runSelect(runs, show);
  await show(runs[0]);
}

// A table of CSV rows (objects with the same keys), headed by the first row's keys.
function table(id, rows) {
  const cols = rows.length ? Object.keys(rows[0]) : [];
  return el("table", { class: "data", id }, el("tr", {}, ...cols.map((c) => el("th", {}, c))),
            ...rows.map((r) => el("tr", {}, ...cols.map((c) => el("td", {}, r[c])))));
}

// ---- profiler: summary, time per op, a timeline of the first launches, the step trace, the data
// pipeline's stages, the op table
async function pageProfiler() {
  const { profiler_runs: runs } = await api("/api/runs");
  if (!runs.length) return empty("No profiler output (timeline.json, op_table.csv) in this log directory.");
  async function show(run) {
    const p = await api("/api/profiler", { run });
    const s = p.summary;
    const top = p.op_table.slice(0, 20);
    content.replaceChildren(
      el("p", { id: "profile-summary" }, `${s.events} launches on ${s.threads} thread(s) over ${(s.span_us / 1000).toFixed(2)} ms; ` +
         `${(s.busy_us / 1000).toFixed(2)} ms inside ops.`),
      el("div", { class: "card" }, el("h3", {}, "Total time per op (µs), largest 20"), el("div", { class: "chart", id: "op-bars" })),
      el("div", { class: "card" }, el("h3", {}, `Timeline (first ${p.timeline.length} launches)`), el("div", { class: "chart", id: "timeline" })),
      ...(p.step_trace.length ? [el("div", { class: "card" }, el("h3", {}, "Step trace (µs per step, by phase)"),
                                     el("div", { class: "chart", id: "step-trace" }))] : []),
      ...(p.pipeline.length ? [el("h3", {}, "Data pipeline (per stage)"), table("pipeline-table", p.pipeline)] : []),
      el("h3", {}, "Op table"),
      table("op-table", p.op_table));
    if (p.step_trace.length) {
      const phases = [["data_wait_us", "data wait"], ["fp_bp_us", "forward+backward"],
                      ["optimizer_us", "optimizer"], ["communication_us", "communication"], ["other_us", "other"]];
      plot("step-trace", phases.map(([key, name]) => ({ type: "bar", name, x: p.step_trace.map((r) => Number(r.step)),
                                                         y: p.step_trace.map((r) => Number(r[key] || 0)) })),
           { barmode: "stack", xaxis: { title: { text: "step" } } });
    }
    const short = (name) => (name.length > 28 ? name.slice(0, 27) + "…" : name);
    plot("op-bars", [{ type: "bar", orientation: "h", y: top.map((r, i) => `${i + 1}. ${short(r.op)}`).reverse(),
                       x: top.map((r) => Number(r.total_us)).reverse(), text: top.map((r) => r.op).reverse(),
                       textposition: "none", hoverinfo: "text+x" }],
         { margin: { l: 160, r: 10, t: 10, b: 40 } });
    plot("timeline", [{ type: "bar", orientation: "h", base: p.timeline.map((e) => e.ts),
                        x: p.timeline.map((e) => e.dur), y: p.timeline.map((e) => "thread " + e.tid),
                        text: p.timeline.map((e) => e.name), textposition: "none", hoverinfo: "text+x" }],
         { xaxis: { title: { text: "µs since the first launch" } } });
  }
  runSelect(runs, show);
  await show(runs[0]);
}

// ---- lineage: runs compared in a table and a parallel-coordinates chart, filterable
function flatRow(r) {
  const out = {};
  for (const [k, v] of Object.entries(r)) {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      for (const [k2, v2] of Object.entries(v)) out[`${k}.${k2}`] = v2;
    } else out[k] = Array.isArray(v) ? v.join(" → ") : v;
  }
  return out;
}

async function pageLineage() {
  const { rows: raw } = await api("/api/lineage");
  if (!raw.length) return empty("No lineage recorded (SummaryCollector writes lineage.json per run).");
  const rows = raw.map(flatRow);
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  cols.sort((a, b) => (a === "run" ? -1 : b === "run" ? 1 : a.localeCompare(b)));
  const numeric = cols.filter((c) => c !== "run" && rows.some((r) => typeof r[c] === "number"));
  const filter = el("input", { id: "lineage-filter", type: "search", placeholder: "filter runs…" });
  controls.append(el("h4", {}, "Filter"), filter, el("p", { class: "muted" }, "Text matches any cell; drag on an axis of the chart to filter by range."));
  const table = el("table", { class: "data", id: "lineage-table" });
  const chart = el("div", { class: "wide", id: "parcoords" });
  content.replaceChildren(el("div", { class: "card", style: "display:block" }, el("h3", {}, "Runs"), chart), table);
  let ranges = {};
  function visible() {
    const text = filter.value.toLowerCase();
    return rows.filter((r) => (!text || cols.some((c) => String(r[c] ?? "").toLowerCase().includes(text))) &&
      Object.entries(ranges).every(([c, [lo, hi]]) => typeof r[c] === "number" && r[c] >= lo && r[c] <= hi));
  }
  function drawTable() {
    const vis = visible();
    table.replaceChildren(el("tr", {}, ...cols.map((c) => el("th", {}, c))),
      ...vis.map((r) => el("tr", { class: "lineage-row" }, ...cols.map((c) => el("td", {}, r[c] === undefined || r[c] === null ? "" : String(r[c]))))));
    return vis;
  }
  function drawChart(vis) {
    const dims = [{ label: "run", values: vis.map((_, i) => i), tickvals: vis.map((_, i) => i), ticktext: vis.map((r) => r.run) }]
      .concat(numeric.map((c) => ({ label: c, values: vis.map((r) => (typeof r[c] === "number" ? r[c] : NaN)) })));
    plot(chart, [{ type: "parcoords", dimensions: dims,
                   line: { color: vis.map((_, i) => i), colorscale: "Viridis" } }], { margin: { l: 80, r: 60, t: 40, b: 20 } });
  }
  let pending = null;  // typing redraws once it pauses: the chart is slow to draw per key
  filter.addEventListener("input", () => {
    clearTimeout(pending);
    pending = setTimeout(() => { ranges = {}; drawChart(drawTable()); }, 200);
  });
  drawChart(drawTable());
  chart.on("plotly_restyle", () => {  // brushing an axis filters the table
    ranges = {};
    chart.data[0].dimensions.forEach((d, i) => {
      if (i > 0 && d.constraintrange) {
        const cr = Array.isArray(d.constraintrange[0]) ? d.constraintrange[0] : d.constraintrange;
        ranges[numeric[i - 1]] = cr;
      }
    });
    drawTable();
  });
}

// ---- start
const page = PAGES.includes(location.pathname.replace(/^\/|\/$/g, "")) ? location.pathname.replace(/^\/|\/$/g, "") : "scalars";
document.getElementById("nav").replaceChildren(...PAGES.map((p) =>
  el("a", { href: "/" + p, class: p === page ? "active" : "" }, p)));
document.title = `Mycel Insight: ${page}`;
const run = { scalars: pageScalars, histograms: pageHistograms, images: pageImages, graph: pageGraph,
              dataset: pageDataset, profiler: pageProfiler, lineage: pageLineage }[page];
(typeof Plotly === "undefined"
  ? Promise.reject(new Error("plotly.js did not load (is the plotly package installed?)"))
  : run())
  .then(() => { document.body.dataset.ready = "1"; })
  .catch((e) => { showErrors([String(e.message || e)]); document.body.dataset.ready = "1"; });

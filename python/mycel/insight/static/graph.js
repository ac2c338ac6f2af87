// Mycel Insight's graph page (loaded before app.js, whose helpers it calls when the page runs):
// the computation graph grouped by Cell scope, drawn and listed, with each op's details.
"use strict";

// ---- computation graph: nodes grouped by Cell scope, collapsible; details of a clicked op
function fmtShape(s) { return "[" + s.map((d) => (d === null ? "?" : d)).join(", ") + "]"; }
function outputsOf(n) {
  const shapes = n.attrs._output_shapes || [];
  const dtypes = n.attrs._output_dtypes || (n.attrs.T !== undefined ? [n.attrs.T] : []);
  return shapes.map((s, i) => `${dtypes[i] || ""}${fmtShape(s)}`);
}

function buildTree(nodes) {
  const root = { name: "", path: "", groups: new Map(), ops: [], count: 0 };
  for (const n of nodes) {
    const parts = n.name.split("/");
    let g = root;
    g.count++;
    for (const p of parts.slice(0, -1)) {
      if (!g.groups.has(p)) g.groups.set(p, { name: p, path: g.path ? g.path + "/" + p : p, groups: new Map(), ops: [], count: 0 });
      g = g.groups.get(p);
      g.count++;
    }
    g.ops.push(n);
  }
  return root;
}

async function pageGraph() {
  const { runs } = await api("/api/runs");
  if (!runs.length) return empty("No runs with summaries in this log directory.");
  async function show(run) {
    const { graph } = await api("/api/graph", { run });
    if (!graph) return empty("No computation graph in this run (SummaryCollector records it in GRAPH_MODE).");
    const byName = new Map(graph.nodes.map((n) => [n.name, n]));
    const details = el("div", { class: "graph-details", id: "op-details" },
                       el("p", { class: "muted" }, "Click an op to see its attributes."));
    const expanded = new Set(["Default"]);
    const svgBox = el("div", { class: "svg-graph", id: "graph-svg" });
    function showOp(n, row) {
      for (const s of content.querySelectorAll(".op.selected")) s.classList.remove("selected");
      if (row) row.classList.add("selected");
      const attrs = Object.entries(n.attrs).filter(([k]) => !k.startsWith("_") && k !== "T");
      details.replaceChildren(
        el("h3", {}, n.op), el("div", {}, el("code", {}, n.name)),
        el("p", {}, el("b", {}, "source: "), n.attrs._source ? el("code", { class: "source" }, n.attrs._source) : "(unknown)"),
        n.attrs._source_text ? el("pre", {}, n.attrs._source_text) : null,
        el("h4", {}, "inputs"),
        el("table", { class: "data" }, ...n.inputs.map((i) => {
          const p = byName.get(i);
          return el("tr", {}, el("td", {}, el("code", {}, i)), el("td", {}, p ? outputsOf(p).join(", ") : ""));
        })),
        el("h4", {}, "outputs"), el("div", { class: "outputs" }, outputsOf(n).join(", ") || "(none)"),
        el("h4", {}, "attributes"),
        attrs.length ? el("table", { class: "data attrs" }, ...attrs.map(([k, v]) =>
          el("tr", {}, el("th", {}, k), el("td", {}, JSON.stringify(v))))) : el("p", { class: "muted" }, "none"));
    }
    function renderGroup(g) {
      const body = el("div", { class: "group-body" });
      const head = el("div", { class: "group-head" }, `${g.name} (${g.count} ops)`);
      const box = el("div", { class: "group" + (expanded.has(g.path) ? " expanded" : ""), "data-scope": g.path }, head, body);
      head.addEventListener("click", () => {
        box.classList.toggle("expanded");
        if (box.classList.contains("expanded")) expanded.add(g.path); else expanded.delete(g.path);
        drawSvg();
      });
      for (const sub of [...g.groups.values()].sort((a, b) => a.name.localeCompare(b.name))) body.append(renderGroup(sub));
      for (const n of g.ops) {
        const short = n.name.split("/").pop();
        const row = el("div", { class: "op", "data-name": n.name }, `${short} `,
                       el("span", { class: "shape" }, outputsOf(n).join(", ")));
        row.addEventListener("click", () => showOp(n, row));
        body.append(row);
      }
      return box;
    }
    // The drawing: each op whose scope is expanded is a box; a collapsed scope is one box.
    function unitOf(name) {
      const parts = name.split("/");
      for (let i = 1; i < parts.length; i++) {
        const scope = parts.slice(0, i).join("/");
        if (!expanded.has(scope)) return scope;
      }
      return name;
    }
    function drawSvg() {
      const units = new Map(), edges = new Set();
      for (const n of graph.nodes) {
        if (n.op === "Const") continue;
        const u = unitOf(n.name);
        if (!units.has(u)) units.set(u, { id: u, group: u !== n.name, label: u.split("/").pop(), preds: new Set() });
        for (const i of n.inputs) {
          const src = byName.get(i);
          if (!src || src.op === "Const") continue;
          const v = unitOf(i);
          if (v !== u) { units.get(u).preds.add(v); edges.add(v + "\u0000" + u); }
        }
      }
      // Rows by longest path over the edges that go forward in program order (a unit's first
      // op): gradients flow back into the scopes of the forward, and those edges would be cycles.
      const first = new Map();
      graph.nodes.forEach((n, i) => {  // weights and inputs come first in the list: not an op's place
        const u = unitOf(n.name);
        const at = n.op === "Parameter" || n.op === "Input" ? -1 : i;
        if (units.has(u) && (!first.has(u) || (first.get(u) === -1 && at >= 0))) first.set(u, at);
      });
      const layer = new Map();
      for (const u of [...units.keys()].sort((a, b) => first.get(a) - first.get(b))) {
        let d = 0;
        for (const p of units.get(u).preds) if (first.get(p) < first.get(u)) d = Math.max(d, layer.get(p) + 1);
        layer.set(u, d);
      }
      const rows = [];
      for (const [u, d] of layer) (rows[d] = rows[d] || []).push(u);
      const W = 150, H = 26, GX = 20, GY = 34;
      const pos = new Map();
      rows.forEach((r, d) => r.forEach((u, i) => pos.set(u, { x: 10 + i * (W + GX), y: 10 + d * (H + GY) })));
      const width = 20 + Math.max(1, ...rows.map((r) => r.length)) * (W + GX);
      const height = 20 + rows.length * (H + GY);
      const ns = "http://www.w3.org/2000/svg";
      const svg = document.createElementNS(ns, "svg");
      svg.setAttribute("width", width); svg.setAttribute("height", height);
      for (const e of edges) {
        const [a, b] = e.split("\u0000");
        const p = pos.get(a), q = pos.get(b);
        if (!p || !q) continue;
        const line = document.createElementNS(ns, "line");
        line.setAttribute("x1", p.x + W / 2); line.setAttribute("y1", p.y + H);
        line.setAttribute("x2", q.x + W / 2); line.setAttribute("y2", q.y);
        line.setAttribute("stroke", "#99a"); svg.append(line);
      }
      for (const [u, p] of pos) {
        const unit = units.get(u);
        const g = document.createElementNS(ns, "g");
        g.setAttribute("class", unit.group ? "svg-group" : "svg-op");
        const rect = document.createElementNS(ns, "rect");
        rect.setAttribute("x", p.x); rect.setAttribute("y", p.y); rect.setAttribute("width", W); rect.setAttribute("height", H);
        rect.setAttribute("rx", unit.group ? 8 : 3);
        rect.setAttribute("fill", unit.group ? "#dde8f3" : "#fff"); rect.setAttribute("stroke", unit.group ? "#4a78a8" : "#888");
        const text = document.createElementNS(ns, "text");
        text.setAttribute("x", p.x + 6); text.setAttribute("y", p.y + 17); text.setAttribute("font-size", "11");
        text.textContent = (unit.group ? "\u25B8 " : "") + unit.label.slice(0, 22);
        const title = document.createElementNS(ns, "title"); title.textContent = u;
        g.append(rect, text, title);
        g.style.cursor = "pointer";
        g.addEventListener("click", () => {
          if (unit.group) {
            expanded.add(u);
            content.querySelector(`.group[data-scope="${CSS.escape(u)}"]`)?.classList.add("expanded");
            drawSvg();
          } else {
            showOp(byName.get(u), content.querySelector(`.op[data-name="${CSS.escape(u)}"]`));
          }
        });
        svg.append(g);
      }
      svgBox.replaceChildren(svg);
      svgBox.dataset.units = String(pos.size);
    }
    const root = buildTree(graph.nodes);
    const tree = el("div", { class: "graph-tree", id: "graph-tree" },
                    ...[...root.groups.values()].map(renderGroup), ...root.ops.map((n) => el("div", { class: "op" }, n.name)));
    content.replaceChildren(el("p", { class: "muted" }, `${graph.nodes.length} nodes, recorded at step ${graph.step}. Click a scope to expand it.`),
                            svgBox, el("div", { class: "graph-layout" }, tree, details));
    drawSvg();
  }
  runSelect(runs, show);
  await show(runs[0]);
}

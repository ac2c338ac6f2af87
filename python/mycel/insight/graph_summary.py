"""The computation graph of a compiled step as summary nodes (TensorBoard's GraphDef, written by
SummaryRecord.add_value("graph", ...)): every op of the optimized graph, named by the Cell scope
it came from (`Default/conv1/conv2d-op3`), with its attributes, output shapes and dtypes and the
Python source line that made it.

Each op's scope is exact: inlining records the Cells an op came through (the IR's inlined-at
chain, `cells` in the graph data, innermost first, labelled with their attribute paths from the
compiled Cell), gradient and optimizer ops included. Only an op whose innermost Cell has no path
(a Cell outside the compiled one's tree) or graph data without that chain falls back to a guess:
an op whose line lies in a Cell class's source belongs to that class's instance in the network;
when the class has several instances, the weights the op reads (or its neighbours' scopes)
decide which."""
import inspect
import linecache
import os

from mycel.common.error_frames import label_path

_ROOT = "Default"


def _class_range(cls):
    """(file, first line, last line) of a class's source, or None (a built-in, a REPL class)."""
    try:
        lines, first = inspect.getsourcelines(cls)
        return os.path.realpath(inspect.getsourcefile(cls)), first, first + len(lines) - 1
    except (OSError, TypeError):
        return None


class _Scopes:
    """Which Cell instance (by attribute path) a source line and a weight belong to."""

    def __init__(self, network):
        self.ranges = []  # (file, first, last, [cell paths]) per Cell class in the network
        by_class = {}
        for path, cell in network.cells_and_names():
            by_class.setdefault(type(cell), []).append(path)
        self.paths = sorted(p for cells in by_class.values() for p in cells if p)
        for cls, paths in by_class.items():
            r = _class_range(cls)
            if r is not None:
                self.ranges.append((*r, paths))

    def of_weight(self, name):
        """The deepest Cell whose path prefixes a weight's name (network.fc.weight: network.fc;
        optimizer.moments.fc.weight: optimizer), or the root ("")."""
        owners = [p for p in self.paths if name.startswith(p + ".")]
        return max(owners, key=len) if owners else ""

    def candidates(self, loc):
        """The Cell paths whose class's source holds `loc` ("file:line:col"); [] when none."""
        if not loc:
            return []
        file, _, rest = loc.rpartition(":")
        file, _, line = file.rpartition(":")
        if not line.isdigit():
            return []
        file, line = os.path.realpath(file), int(line)
        best = None
        for f, first, last, paths in self.ranges:  # the innermost class holding the line
            if f == file and first <= line <= last and (best is None or last - first < best[0]):
                best = (last - first, paths)
        return best[1] if best else []


def _flat_abstract(a, out):
    """Appends (shape, dtype) of every tensor in an abstract value (tuples flattened)."""
    if not a:
        return out
    if a[0] == "tensor":
        out.append((list(a[1]), a[2]))
    elif a[0] == "tuple":
        for item in a[1]:
            _flat_abstract(item, out)
    return out


def _attr_value(v):
    """An op attribute as a GraphDef attribute (None and other values become their text)."""
    if isinstance(v, (str, bool, int, float)):
        return v
    if isinstance(v, (list, tuple)) and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                            for x in v):
        return list(v)
    return repr(v)


def _scope_name(path):
    return "/".join([_ROOT] + [p for p in path.split(".") if p]) if path else _ROOT


def _source_text(loc):
    file, _, rest = (loc or "").rpartition(":")
    file, _, line = file.rpartition(":")
    return linecache.getline(file, int(line)).strip() if line.isdigit() else ""


def _exact_scope(node):
    """The Cell path of the innermost Cell an op was inlined from ("" for the compiled Cell's own
    construct), or None when the graph data cannot say."""
    cells = node.get("cells")
    if cells is None:
        return None
    return label_path(cells[0]) if cells else ""


def graph_nodes(data, network):
    """Summary nodes [(name, op, [input names], {attr: value})] of a graph from
    CompiledGraph.graph_data, scoped by the Cells of `network` (the Cell that was compiled)."""
    scopes = _Scopes(network)
    nodes = data["nodes"]
    params = data["params"]
    index = {n["id"]: k for k, n in enumerate(nodes)}  # ids count the parameters first
    # 1. The inlined-at chain names most ops' scope exactly. The rest: their candidate Cell paths
    # by source line, with the weights they read settling ties.
    scope = [_exact_scope(n) for n in nodes]
    cand = [[] if scope[k] is not None else scopes.candidates(n.get("loc"))
            for k, n in enumerate(nodes)]
    scope = [s if s is not None else (c[0] if len(c) == 1 else None) for s, c in zip(scope, cand)]
    for k, n in enumerate(nodes):
        if scope[k] is None and cand[k]:
            for kind, *ref in n["inputs"]:
                if kind == "param" and params[ref[0]]["weight"] is not None:
                    owner = scopes.of_weight(params[ref[0]]["name"])
                    if owner in cand[k]:
                        scope[k] = owner
                        break
    # 2. Still ambiguous: the scope of a neighbour (producer or consumer) among the candidates.
    users = [[] for _ in nodes]
    for k, n in enumerate(nodes):
        for kind, *ref in n["inputs"]:
            if kind == "node":
                users[index[ref[0]]].append(k)
    changed = True
    while changed:
        changed = False
        for k, n in enumerate(nodes):
            if scope[k] is not None or not cand[k]:
                continue
            near = [index[ref[0]] for kind, *ref in n["inputs"] if kind == "node"] + users[k]
            for j in near:
                if scope[j] in cand[k]:
                    scope[k], changed = scope[j], True
                    break
    # 3. What is left goes to the deepest scope all its candidates share (the root for none).
    for k in range(len(nodes)):
        if scope[k] is None:
            parts = [c.split(".") for c in cand[k]] or [[]]
            common = []
            for level in zip(*parts):
                if len(set(level)) != 1:
                    break
                common.append(level[0])
            scope[k] = ".".join(common)

    out, names = [], {}
    for i, p in enumerate(params):  # graph inputs: the step's arguments and its weights
        w = p["weight"]
        path = scopes.of_weight(p["name"]) if w is not None else ""
        short = p["name"][len(path) + 1:] if path else p["name"]
        name = f"{_scope_name(path)}/{short}"
        names[("param", i)] = name
        out.append((name, "Parameter" if w is not None else "Input", [],
                    _shape_attrs(p["abstract"], {"_weight": w is not None})))
    consts = 0
    for k, n in enumerate(nodes):
        name = f"{_scope_name(scope[k])}/{n['op']}-op{n['id']}"
        inputs = []
        for kind, *ref in n["inputs"]:
            if kind == "const":
                cname = f"{_scope_name(scope[k])}/Const-c{consts}"
                consts += 1
                out.append((cname, "Const", [], {"value": repr(ref[0])[:80]}))
                inputs.append(cname)
            else:
                inputs.append(names[(kind, ref[0])])
        names[("node", n["id"])] = name
        attrs = {key: _attr_value(v) for key, v in n["attrs"].items()}
        attrs["_kind"] = n["kind"]
        if n.get("loc"):
            attrs["_source"] = n["loc"]
            attrs["_source_text"] = _source_text(n["loc"])
        out.append((name, n["op"], inputs, _shape_attrs(n["abstract"], attrs)))
    return out


def _shape_attrs(abstract, attrs):
    """attrs plus _output_shapes (TensorBoard's name; None for an unknown dim) and the output
    dtypes (T for one output, _output_dtypes for several)."""
    outs = _flat_abstract(abstract, [])
    attrs["_output_shapes"] = [s for s, _ in outs]
    if len(outs) == 1:
        attrs["T"] = outs[0][1]
    elif outs:
        attrs["_output_dtypes"] = [d for _, d in outs]
    return attrs

"""What SummaryCollector writes beside the event file for the dashboard's lineage and dataset
pages: the dataset pipeline as a graph (dataset_graph.json) and the run's lineage (lineage.json:
hyper-parameters, dataset path and pipeline, network, loss, optimizer, metrics, checkpoint).
Both are JSON written whole (a temporary file renamed over the old one)."""
import json
import os

DATASET_GRAPH_FILE = "dataset_graph.json"
LINEAGE_FILE = "lineage.json"


def write_json_atomic(path, obj):
    """Writes obj as JSON to path via a temporary file in the same directory and a rename, so a
    reader sees the old file or the new one, never a part."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True, default=str)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _plain(v, depth=0):
    """A JSON-able view of a pipeline parameter: numbers and strings as they are, containers
    item by item, a transform or sampler by its class and its own public parameters."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (list, tuple)):
        return [_plain(x, depth + 1) for x in v[:32]]
    if isinstance(v, dict):
        return {str(k): _plain(x, depth + 1) for k, x in list(v.items())[:32]}
    if callable(v) and not hasattr(v, "__dict__"):
        return getattr(v, "__qualname__", type(v).__name__)
    if depth < 2 and hasattr(v, "__dict__"):
        own = getattr(v, "_params", None)  # a dataset transform keeps what it was built with here
        items = own.items() if isinstance(own, dict) else vars(v).items()
        params = {k: _plain(x, depth + 1) for k, x in items
                  if not k.startswith("_") and _simple(x)}
        return {"class": type(v).__name__, **params} if params else type(v).__name__
    return getattr(v, "__qualname__", type(v).__name__)


def _simple(x):
    return x is None or isinstance(x, (bool, int, float, str, list, tuple, dict))


_SKIP = {"children", "source"}  # the tree itself; the C++ source object (its path is a parameter)


def dataset_graph(dataset):
    """The pipeline that ends in `dataset` as {"nodes": [{id, op, params, columns, children}]}
    (node 0 is the last stage; children are the stages it reads from)."""
    nodes = []

    def visit(d):
        k = len(nodes)
        node = {"id": k, "op": type(d).__name__, "params": {}, "children": []}
        nodes.append(node)
        for name, v in vars(d).items():
            if name.startswith("_") or name in _SKIP:
                continue
            node["params"][name] = _plain(v)
        try:
            node["columns"] = list(d.get_col_names())
        except Exception:  # noqa: BLE001 (a user's source that cannot tell)
            node["columns"] = None
        for c in getattr(d, "children", []):
            node["children"].append(visit(c))
        return k

    visit(dataset)
    return {"nodes": nodes}


def dataset_path(graph):
    """The files or directory the pipeline's sources read (dataset_dir / dataset_files), or None."""
    found = []
    for n in graph["nodes"]:
        for key in ("dataset_dir", "dataset_files", "dataset_file"):
            v = n["params"].get(key)
            if isinstance(v, str):
                found.append(v)
            elif isinstance(v, list):
                found.extend(x for x in v if isinstance(x, str))
    return found[0] if len(found) == 1 else (found or None)


def pipeline_ops(graph):
    """The stages from the source to the last one, e.g. ["MnistDataset", "MapDataset", ...]."""
    order = []

    def walk(k):
        for c in graph["nodes"][k]["children"]:
            walk(c)
        order.append(graph["nodes"][k]["op"])

    if graph["nodes"]:
        walk(0)
    return order

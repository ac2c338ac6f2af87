"""Layering of src/mycel: each folder includes only the folders the table below allows (kernels sit
at the bottom, on core alone), and analysis and the backend decide by registry traits, never by an
op's name. Both are read from the sources, so a stray include or name test fails here, in CI."""
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src", "mycel")

# Folder -> the other folders of src/mycel its files may include (DESIGN.md section 2's order:
# core -> kernels -> ops -> ir -> analysis -> ad -> opt -> backend -> pynative/frontend -> glue,
# with the later parts beside them). This table is the data the test checks; change it only with
# the layer picture in DESIGN.md.
ALLOWED = {
    "core": set(),
    "kernels": {"core"},
    "insight": {"core"},
    "io": {"core"},
    "ops": {"core", "kernels", "insight", "parallel"},
    "parallel": {"core", "ops"},
    "ir": {"core", "ops"},
    "analysis": {"core", "ir", "ops"},
    "ad": {"core", "ir", "ops", "analysis"},
    "opt": {"core", "ir", "ops"},
    "te": {"core", "kernels", "ops"},
    "backend": {"core", "kernels", "ops", "ir", "insight", "te"},
    "pipeline": {"core", "ops", "ir", "analysis", "ad", "opt", "backend", "parallel"},
    "pynative": {"core", "ops", "ir", "analysis", "ad", "pipeline"},
    "frontend": {"core", "ops", "ir"},
    "data": {"core", "insight"},
    "lite": {"core", "kernels", "ops"},
    "python": None,  # the nanobind glue may include every layer
}
# Mutual includes the table tolerates for now (collective ops call the communicator, which
# describes redistributions in registry ops): each is a cycle to remove, never one to add.
KNOWN_CYCLES = {frozenset({"ops", "parallel"})}

INCLUDE = re.compile(r'^\s*#\s*include\s+"mycel/([a-z_0-9]+)/', re.M)


def _includes():
    """{folder: {included folder: [file, ...]}} over src/mycel's .h and .cc files."""
    found = {}
    for folder in sorted(os.listdir(SRC)):
        top = os.path.join(SRC, folder)
        if not os.path.isdir(top):
            continue
        deps = found.setdefault(folder, {})
        for dirpath, _, files in os.walk(top):
            for name in files:
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    for dep in INCLUDE.findall(f.read()):
                        if dep != folder:
                            deps.setdefault(dep, []).append(os.path.relpath(path, ROOT))
    return found


def test_every_folder_has_a_row():
    missing = sorted(set(_includes()) - set(ALLOWED))
    assert not missing, f"src/mycel folders without a row in ALLOWED (say what they may include): {missing}"


def test_folders_include_only_allowed_layers():
    bad = []
    for folder, deps in _includes().items():
        allowed = ALLOWED.get(folder)
        if allowed is None:
            continue
        for dep, files in sorted(deps.items()):
            if dep not in allowed:
                bad.append(f"{folder} -> {dep} ({', '.join(sorted(set(files))[:3])})")
    assert not bad, "includes across layers the table does not allow:\n  " + "\n  ".join(bad)


def test_kernels_depend_on_core_only():
    deps = _includes()["kernels"]
    assert set(deps) <= {"core"}, {d: f[:3] for d, f in deps.items() if d != "core"}


def test_no_new_cycles_between_folders():
    inc = _includes()
    cycles = {frozenset({a, b}) for a, deps in inc.items() for b in deps if a in inc.get(b, {})}
    assert cycles <= KNOWN_CYCLES, sorted(tuple(sorted(c)) for c in cycles - KNOWN_CYCLES)


# An op chosen by its name: a comparison of a name with a string literal, a name-prefix test,
# is_op(instr, "relu"), a table keyed by op names, a look-up by name. Registry::get().at("cast")
# used to *emit* a cast decides nothing and is not counted; the lines that count are listed on
# failure.
NAME_CASES = [
    re.compile(r'\b(n|name|op_name)(\(\))?\s*[!=]=\s*"'),
    re.compile(r'"\s*[!=]=\s*[a-z_.>-]*name\b'),
    re.compile(r'\b(n|name|op_name)(\(\))?\.(rfind|find|starts_with|compare|substr)\('),
    re.compile(r'\bis_op\([^)]*"'),
    re.compile(r'\{"[a-z_0-9]+",\s*(Prim|EwOp|PostOp)::'),
    re.compile(r'from_name\('),
]


def _name_cases(folders):
    hits = []
    for folder in folders:
        for dirpath, _, files in os.walk(os.path.join(SRC, folder)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    for no, line in enumerate(f, 1):
                        code = line.split("//")[0]
                        if "MYCEL_THROW" in code or "MYCEL_CHECK" in code:
                            continue  # messages name ops; they decide nothing
                        if any(p.search(code) for p in NAME_CASES):
                            hits.append(f"{os.path.relpath(path, ROOT)}:{no}: {line.strip()}")
    return hits


@pytest.mark.parametrize("folders", [("analysis",), ("backend",)])
def test_no_op_name_special_cases(folders):
    hits = _name_cases(folders)
    assert not hits, (f"{len(hits)} op-name special cases in {folders} (make them registry traits, "
                      "ops/registry.h OpDef):\n  " + "\n  ".join(hits))


def test_name_case_patterns_catch_the_old_forms():
    # The grep above must see the forms that used to be there, or a zero count means nothing.
    old = ['if (op.name == "reshape" && j == 0)', 'return n == "conv2d" || n.rfind("conv2d+", 0) == 0;',
           'if (is_op(c, "relu") && c.in[0] == cur)', '{"add", Prim::kScalarAdd}, {"sub", Prim::kScalarSub},',
           'cpu::ew_op_from_name(in.op->name, op)', 'in.op->name == "max_pool2d"']
    for line in old:
        assert any(p.search(line) for p in NAME_CASES), line
    assert not any(p.search('const OpDef& cast = Registry::get().at("cast");') for p in NAME_CASES)


# A trait kept beside the registry in a table keyed by the op (record_only.h and placement.h
# once were: std::unordered_set<const OpDef*> filled by mark_record_only(name) after
# Registry::add) is a second place that defines an op; traits are OpDef fields, set where the op
# is defined.
SIDE_TABLE = re.compile(r"\b(unordered_)?(map|set)<\s*const\s+(OpDef|OpSchema)\s*\*")


def test_op_traits_have_no_side_tables():
    hits = []
    for dirpath, _, files in os.walk(os.path.join(SRC, "ops")):
        for name in sorted(files):
            if name.endswith((".h", ".cc")):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8") as f:
                    hits += [f"{os.path.relpath(path, ROOT)}:{no}: {line.strip()}"
                             for no, line in enumerate(f, 1) if SIDE_TABLE.search(line.split("//")[0])]
    assert not hits, "op traits kept in a side table (make them OpDef fields):\n  " + "\n  ".join(hits)
    assert SIDE_TABLE.search("std::unordered_map<const OpDef*, Placement>& placements() {")
    assert SIDE_TABLE.search("static std::unordered_set<const OpDef*> s;")


def _module_level_imports(path):
    """Modules a Python file imports when it is loaded (imports inside functions run later)."""
    import ast
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    found, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, (ast.If, ast.Try)):  # conditional imports still run at load time
            todo += node.body + node.orelse + getattr(node, "finalbody", [])
            todo += [s for h in getattr(node, "handlers", []) for s in h.body]
    return found


def test_tensor_method_modules_do_not_import_the_tensor_module():
    # The old cycle: common/tensor.py installs the methods of tensor_methods.py and
    # tensor_op_methods.py, which imported common/tensor.py back. They take the class itself.
    common = os.path.join(ROOT, "python", "mycel", "common")
    for name in ("tensor_methods.py", "tensor_op_methods.py"):
        imports = _module_level_imports(os.path.join(common, name))
        assert "mycel.common.tensor" not in imports, name
    assert "mycel.common.tensor_methods" in _module_level_imports(os.path.join(common, "tensor.py"))

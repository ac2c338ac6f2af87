"""Registry completeness: every op has a doc line, inference, kernels for its dtypes, a primitive
class, and a row in the op test table."""
import numpy as np
import pytest

import mycel
from mycel import _mycel, ops
from op_cases import all_cases

HANDLES = _mycel.op_handles
TABLE_OPS = {c.op for c in all_cases()}


def test_every_op_has_a_table_row():
    missing = sorted(set(HANDLES) - TABLE_OPS)
    assert not missing, f"ops without a row in tests/python/op_cases: {missing}"


def test_table_names_only_registered_ops():
    unknown = sorted(TABLE_OPS - set(HANDLES))
    assert not unknown, f"op_cases rows for unregistered ops: {unknown}"


@pytest.mark.parametrize("name", sorted(HANDLES))
def test_op_metadata(name):
    h = HANDLES[name]
    assert h.doc and h.doc.strip(), f"{name} has no doc line"
    assert h.grad in ("bprop", "none", "unsupported", "todo")
    assert getattr(ops, name).__doc__
    cls = getattr(ops.operations, h.class_name)
    assert issubclass(cls, ops.operations.Primitive)
    assert getattr(ops, h.class_name) is cls


@pytest.mark.parametrize("name", sorted(HANDLES))
def test_op_dtypes_claimed_are_tested(name):
    """Each dtype an op claims appears in at least one table row for it."""
    h = HANDLES[name]
    tested = set()
    for c in all_cases():
        if c.op == name:
            tested.update(c.dtypes)
    claimed = {d.name for d in h.dtypes}
    if "float32" in tested:
        tested.add("bfloat16")  # test_op_table runs float32 rows in bfloat16 too
    untested = sorted(claimed - tested)
    assert not untested, f"{name} claims dtypes with no table row: {untested}"


def test_docs_ops_md_is_current():
    """docs/ops.md is generated from the registry; regenerate with scripts/gen_op_docs.py."""
    import importlib.util
    import os
    root = os.path.join(os.path.dirname(__file__), "..", "..")
    spec = importlib.util.spec_from_file_location("gen_op_docs", os.path.join(root, "scripts", "gen_op_docs.py"))
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    with open(os.path.join(root, "docs", "ops.md")) as f:
        assert f.read() == gen.render(), "docs/ops.md is stale: run .venv/bin/python scripts/gen_op_docs.py"

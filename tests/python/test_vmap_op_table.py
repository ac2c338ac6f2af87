"""Every row of the op table (op_cases/) under vmap: three items drawn like the row's inputs,
stacked, mapped (all inputs along axis 0; or the first along its last axis with the others
shared), against the op run eagerly item by item. Exercises every batching rule and the per-item
loop on the shapes and attributes the op tests use."""
import os

import numpy as np
import pytest

import mycel
from mycel import Tensor, context, ops
from mycel.ops import operations as P
from op_cases import all_cases, make_input

B = 3
COLLECTIVES = {"all_gather", "all_reduce", "all_to_all", "broadcast", "reduce", "reduce_scatter", "send"}
ALL = [c for c in all_cases() if not c.nondeterministic and not c.needs_peer and "float32" in c.dtypes]
DATA_DEPENDENT = {"unique_with_counts", "masked_select", "nonzero", "sparse_count_sparse_output",
                  "sparse_segment_mean_with_num_segments", "sparse_tensor_to_csr_sparse_matrix",
                  "sparse_matrix_transpose", "csr_spgemm", "strided_slice_dynamic", "slice_dynamic",
                  "reshape_dynamic"}


def _first_rows(k):
    """The first k rows of each op (the whole table would take minutes on two cores)."""
    seen = {}
    out = []
    for c in ALL:
        seen[c.op] = seen.get(c.op, 0) + 1
        if seen[c.op] <= k:
            out.append(c)
    return out


# MYCEL_VMAP_FULL_TABLE=1 runs every row (about 2,000 cases, a minute or more on two cores).
_FULL = bool(os.environ.get("MYCEL_VMAP_FULL_TABLE"))
PARAMS = [pytest.param(c, "all0", id=f"{c.name()}-all0") for c in _first_rows(999 if _FULL else 3)] + \
    [pytest.param(c, "last_shared", id=f"{c.name()}-last_shared") for c in _first_rows(999 if _FULL else 2)]


def _draw(case, rng):
    if callable(case.shapes):
        return list(case.shapes(rng, "float32"))
    return [make_input(rng, s, "float32", case.domain) for s in case.shapes]


def _pack(case, arrays):
    """The op's positional arguments: a variadic last input takes the rest as one tuple."""
    inputs = mycel._mycel.op_handles[case.op].inputs
    if inputs and inputs[-1][2]:
        k = len(inputs) - 1
        return list(arrays[:k]) + [tuple(arrays[k:])]
    return list(arrays)


def _tensor(a):
    return tuple(_tensor(x) for x in a) if isinstance(a, tuple) else Tensor(a)


def _stack(items, axis):
    if isinstance(items[0], tuple):
        return tuple(np.stack([it[k] for it in items], axis=axis) for k in range(len(items[0])))
    return np.stack(items, axis=axis)


def _np(x):
    return tuple(_np(i) for i in x) if isinstance(x, tuple) else x.asnumpy()


@pytest.mark.parametrize("case,variant", PARAMS)
def test_op_under_vmap_matches_the_loop(case, variant):
    handle = mycel._mycel.op_handles[case.op]
    if not handle.inputs:
        pytest.skip("no inputs to map")
    if case.op.endswith("_summary"):
        pytest.skip("summaries record values for the dashboard; test_vmap covers the loop they take")
    prim = P._REGISTRY_CLASSES[handle.class_name](**case.attrs)
    rng = np.random.default_rng(0)
    shared_rng = np.random.default_rng(1)
    shared = _pack(case, _draw(case, shared_rng))
    items = [_pack(case, _draw(case, rng)) for _ in range(B)]
    if variant == "last_shared":
        items = [[it[0]] + shared[1:] for it in items]
        if all(np.ndim(a) == 0 for a in (items[0][0] if isinstance(items[0][0], tuple) else (items[0][0],))):
            pytest.skip("0-d first input")
    old = context.get_context("mode")
    context.set_context(mode=context.PYNATIVE_MODE)
    try:
        want = [_np(prim(*[_tensor(a) for a in it])) for it in items]
    except (ValueError, TypeError, IndexError):
        pytest.skip("the row's inputs are not valid for independent draws")
    finally:
        context.set_context(mode=old)
    if variant == "all0":
        args = [_stack([it[i] for it in items], 0) for i in range(len(items[0]))]
        in_axes, out_axes = 0, 0
    else:
        args = [_stack([it[0] for it in items], -1)] + shared[1:]
        in_axes = (-1,) + (None,) * (len(args) - 1)
        out_axes = 0
    # A collective is one call over the batch (its rule) or refused: never a per-item loop, so
    # every rank runs the same sequence. With one process the ruled ones run and match the loop.
    if case.op in COLLECTIVES and mycel._mycel.graph.batching_rule(case.op) != "own":
        with pytest.raises(NotImplementedError, match="talks to other processes"):
            ops.vmap(prim, in_axes=in_axes, out_axes=out_axes)(*[_tensor(a) for a in args])
        return
    # Sizes known only from the values (docs/dynamic_shape.md): refused, naming the op.
    if case.op in DATA_DEPENDENT:
        with pytest.raises((NotImplementedError, RuntimeError), match="known only from the values"):
            ops.vmap(prim, in_axes=in_axes, out_axes=out_axes)(*[_tensor(a) for a in args])
        return
    got = _np(ops.vmap(prim, in_axes=in_axes, out_axes=out_axes)(*[_tensor(a) for a in args]))
    ref = _stack(want, 0)
    scale = max([1.0] + [float(np.abs(r).max()) for r in (ref if isinstance(ref, tuple) else (ref,))
                         if np.size(r) and np.asarray(r).dtype.kind == "f"])
    tol = dict(rtol=max(case.rtol or 0, 1e-4), atol=max(case.atol or 0, 1e-5 * scale), equal_nan=True)
    if isinstance(ref, tuple):
        for g, r in zip(got, ref):
            np.testing.assert_allclose(g, r, **tol, err_msg=case.name())
    else:
        np.testing.assert_allclose(got, ref, **tol, err_msg=case.name())

"""Gradient rows for the shape ops (all linear: the rule is the adjoint data movement)."""
from . import GradCase


def _seq(*shapes):
    """One variadic input: a list of normal arrays."""
    return lambda rng: [[rng.standard_normal(s) for s in shapes]]


CASES = [
    GradCase("reshape", [(3, 4)], dict(shape=(2, -1, 2))),
    GradCase("reshape", [()], dict(shape=(1, 1)), id="0d"),
    GradCase("flatten", [(2, 3, 2)]),
    GradCase("expand_dims", [(3, 4)], dict(axis=1)),
    GradCase("expand_dims", [(3, 4)], dict(axis=-1), id="neg"),
    GradCase("squeeze", [(1, 3, 1, 2)], dict(axis=())),
    GradCase("squeeze", [(1, 3, 1)], dict(axis=(0, -1)), id="axes"),
    GradCase("identity", [(3, 2)]),
    GradCase("tril", [(3, 4)]),
    GradCase("tril", [(2, 3, 3)], dict(diagonal=-1), id="batch"),
    GradCase("triu", [(4, 3)], dict(diagonal=1)),
    GradCase("transpose", [(2, 3, 4)], dict(perm=(2, 0, 1))),
    GradCase("transpose", [(2, 3, 4)], dict(perm=()), id="reverse"),
    GradCase("transpose", [(2, 3, 4)], dict(perm=(1, -1, 0)), id="neg"),
    GradCase("broadcast_to", [(3, 1)], dict(shape=(2, 3, 4))),
    GradCase("broadcast_to", [()], dict(shape=(2, 3)), id="0d"),
    GradCase("broadcast_to", [(3, 1)], dict(shape=(-1, 4)), id="keep"),
    GradCase("broadcast_like", [(3, 1), (2, 3, 4)], wrt=[0]),
    GradCase("broadcast_like", [(4,), (2, 4)], wrt=[0], id="lead"),
    GradCase("tile", [(2, 3)], dict(multiples=(2, 1, 2))),
    GradCase("tile", [(2, 3, 2)], dict(multiples=(3,)), id="short"),
    GradCase("tile", [()], dict(multiples=(2, 2)), id="0d"),
    GradCase("concat", _seq((2, 3), (1, 3), (4, 3)), wrt=[0]),
    GradCase("concat", _seq((2, 3), (2, 1)), dict(axis=-1), wrt=[0], id="axis"),
    GradCase("concat", _seq((2, 3)), wrt=[0], id="one"),
    GradCase("stack", _seq((2, 3), (2, 3), (2, 3)), wrt=[0]),
    GradCase("stack", _seq((2, 3), (2, 3)), dict(axis=2), wrt=[0], id="last"),
    GradCase("stack", _seq((2,)), wrt=[0], id="one"),
    GradCase("split", [(4, 3)], dict(output_num=2)),
    GradCase("split", [(2, 6)], dict(axis=1, size_splits=(1, -1, 2)), id="sizes"),
    GradCase("split", [(2, 3)], dict(axis=1), id="one"),
    GradCase("cast", [(2, 3)], dict(dtype="float64")),
    GradCase("cast", [(2, 3)], dict(dtype="float32"), eps=1e-3, rtol=1e-3, atol=1e-4, id="narrow"),
]

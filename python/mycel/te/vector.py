"""Whole-tensor helpers in the spelling of MindSpore's TE examples (vmuls, vadds, vexp, ...)."""
import builtins

from mycel.te import expr as E


def _map(x, fn, tag):
    return E.compute(x.shape, lambda *i: fn(x(*i)), f"{x.name}_{tag}")


def _zip(a, b, fn, tag):
    if a.shape != b.shape:
        raise ValueError(f"[te.{tag}] shapes must be equal, got {a.shape} and {b.shape}")
    return E.compute(a.shape, lambda *i: fn(a(*i), b(*i)), f"{a.name}_{tag}")


def vmuls(x, s):
    """x * scalar."""
    return _map(x, lambda v: v * s, "vmuls")


def vadds(x, s):
    """x + scalar."""
    return _map(x, lambda v: v + s, "vadds")


def vexp(x): return _map(x, E.exp, "vexp")
def vlog(x): return _map(x, E.log, "vlog")
def vsqrt(x): return _map(x, E.sqrt, "vsqrt")
def vtanh(x): return _map(x, E.tanh, "vtanh")
def vabs(x): return _map(x, E.abs, "vabs")
def vrec(x): return _map(x, lambda v: 1.0 / v, "vrec")
def vrelu(x): return _map(x, lambda v: E.if_then_else(v > 0.0, v, 0.0), "vrelu")
def vmul(a, b): return _zip(a, b, lambda p, q: p * q, "vmul")
def vadd(a, b): return _zip(a, b, lambda p, q: p + q, "vadd")
def vsub(a, b): return _zip(a, b, lambda p, q: p - q, "vsub")
def vdiv(a, b): return _zip(a, b, lambda p, q: p / q, "vdiv")


def vmax(a, b):
    return _zip(a, b, lambda p, q: E.if_then_else(p >= q, p, q), "vmax")


def vmin(a, b):
    return _zip(a, b, lambda p, q: E.if_then_else(p <= q, p, q), "vmin")


def _reduce(kind):
    def f(x, axis=None, keepdims=False):
        nd = x.ndim
        axes = list(range(nd)) if axis is None else (
            [axis] if isinstance(axis, int) else list(axis))
        norm = []
        for a in axes:
            if not -nd <= a < nd:
                raise ValueError(f"[te.reduce_{kind}] axis {a} is out of range for rank {nd}")
            norm.append(a % nd)
        if len(set(norm)) != len(norm):
            raise ValueError(f"[te.reduce_{kind}] axis {axes} repeats an axis")
        raxes = {a: E.reduce_axis((0, x.shape[a]), f"r{a}") for a in norm}
        keep = [a for a in range(nd) if a not in raxes]
        shape = [1 if a in raxes else x.shape[a] for a in range(nd)] if keepdims else \
            [x.shape[a] for a in keep]

        def body(*i):
            idx, pos = [], 0
            for a in range(nd):
                if a in raxes:
                    idx.append(raxes[a])
                    pos += 1 if keepdims else 0
                else:
                    idx.append(i[pos])
                    pos += 1
            return getattr(E, kind)(x(*idx), [raxes[a] for a in norm])
        return E.compute(shape, body, f"{x.name}_{kind}")
    f.__name__ = f"reduce_{kind}"
    f.__doc__ = f"The {kind} of x over axis (all axes when None)."
    return f


reduce_sum = _reduce("sum")
reduce_max = _reduce("max")
reduce_min = _reduce("min")
_ = builtins

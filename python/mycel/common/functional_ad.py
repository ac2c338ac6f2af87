"""vjp, jvp, jacrev and jacfwd (MindSpore 2.x's functional autodiff), built on grad with sens_param.

* vjp: reverse mode with a given output sensitivity (GradOperation's sens_param).
* jvp: forward mode as the linear transpose of reverse mode. vjp(u) = J^T u is linear in u, so
  d/du <vjp(u), v> = J v: a grad of a grad (ops/ad_graphs.py), which needs no forward-mode rules.
* jacrev: one vjp per output element (one-hot sensitivity); jacfwd: one jvp per input element
  (one-hot tangent). Shapes: out.shape + in.shape.

Both modes run the same compiled programs (mycel.jit of a small entry function): the PyNative
recorder takes a single-tensor sensitivity and cannot nest, while jvp is a grad of a grad and
vjp/jacrev need a tuple sensitivity for several outputs. So `fn` must be in graph mode's subset.
Each program compiles once per input signature; jacrev/jacfwd call it once per element.

has_aux: fn returns (out, aux...); only out is differentiated (the aux outputs get a zero
sensitivity / their tangents are dropped) and aux comes back as it is.
"""
import weakref

import numpy as np

from mycel import _mycel

_PROGRAMS = weakref.WeakKeyDictionary()  # fn -> {key: compiled program}, for vjp/jvp called often


def _program(fn, key, make):
    try:
        per_fn = _PROGRAMS.setdefault(fn, {})
    except TypeError:  # not weak-referenceable: no cache
        return make()
    prog = per_fn.get(key)
    if prog is None:
        prog = per_fn[key] = make()
    return prog


def _is_tensor(x):
    return isinstance(x, _mycel.Tensor)


def _as_tuple(x, what):
    items = tuple(x) if isinstance(x, (tuple, list)) else (x,)
    for i, t in enumerate(items):
        if not _is_tensor(t):
            raise TypeError(f"{what}: element {i} must be a Tensor, got {type(t).__name__}")
    return items


def _split_aux(op, result, has_aux):
    """(out, aux) of fn's result; aux is None without has_aux."""
    if not has_aux:
        return result, None
    if not isinstance(result, tuple) or len(result) < 2:
        raise ValueError(f"{op}: with has_aux=True, fn must return a tuple of at least 2 outputs "
                         f"(out, aux...), got {type(result).__name__}")
    return result[0], (result[1] if len(result) == 2 else result[1:])


def _zeros_like(x):
    if isinstance(x, tuple):
        return tuple(_zeros_like(t) for t in x)
    return _mycel.Tensor(np.zeros(x.shape, x.asnumpy().dtype)) if _is_tensor(x) else x


def _full_sens(out_sens, aux, has_aux):
    """The sensitivity of fn's whole result: out_sens for out, zeros for the aux outputs."""
    if not has_aux:
        return out_sens
    rest = aux if isinstance(aux, tuple) else (aux,)
    return (out_sens,) + tuple(_zeros_like(a) for a in rest)


def _check_like(op, v, out):
    """v must have out's structure, shapes and dtypes."""
    if isinstance(out, tuple):
        if not isinstance(v, (tuple, list)) or len(v) != len(out):
            raise ValueError(f"{op}: the cotangent must be a tuple of {len(out)} Tensors like the output")
        return tuple(_check_like(op, a, b) for a, b in zip(v, out))
    if not _is_tensor(v):
        raise TypeError(f"{op}: the cotangent must be a Tensor, got {type(v).__name__}")
    if tuple(v.shape) != tuple(out.shape) or v.dtype != out.dtype:
        raise ValueError(f"{op}: the cotangent must have the output's shape and dtype "
                         f"{tuple(out.shape)} {out.dtype}, got {tuple(v.shape)} {v.dtype}")
    return v


def vjp(fn, *inputs, weights=None, has_aux=False):
    """(outputs, vjp_fn) or, with has_aux, (outputs, vjp_fn, aux). vjp_fn(v) returns v @ J: the
    cotangent of the input (one input) or a tuple of them; with weights, (inputs', weights')."""
    from mycel.ops import ad_graphs
    xs = _as_tuple(inputs, "vjp inputs")
    out, aux = _split_aux("vjp", fn(*xs), has_aux)
    positions = 0 if len(xs) == 1 else tuple(range(len(xs)))
    weights = tuple(weights) if isinstance(weights, (list, tuple)) else weights
    if weights is not None and not isinstance(weights, tuple):
        weights = (weights,)
    prog = _program(fn, ("vjp", len(xs), positions, weights and tuple(id(w) for w in weights)),
                    lambda: ad_graphs.vjp_program(ad_graphs.as_parsable(fn, len(xs)), positions, weights))

    def vjp_fn(v):
        return prog(xs, _full_sens(_check_like("vjp_fn", v, out), aux, has_aux))
    return (out, vjp_fn, aux) if has_aux else (out, vjp_fn)


def _jvp_at(fn, prog, xs, tangents, has_aux):
    """(out, J @ tangents, aux) of fn at xs."""
    out, aux = _split_aux("jvp", fn(*xs), has_aux)
    u = _full_sens(_zeros_like(out), aux, has_aux)
    jv = prog(xs, u, tuple(tangents))
    return out, (jv[0] if has_aux else jv), aux


def jvp(fn, inputs, v, has_aux=False):
    """(outputs, J @ v) or, with has_aux, (outputs, J @ v, aux); inputs and v: a Tensor or a
    tuple of Tensors of the same shapes."""
    from mycel.ops import ad_graphs
    xs = _as_tuple(inputs, "jvp inputs")
    vs = _as_tuple(v, "jvp v")
    if len(vs) != len(xs):
        raise ValueError(f"jvp: v must have one tangent per input ({len(xs)}), got {len(vs)}")
    for i, (x, t) in enumerate(zip(xs, vs)):
        if tuple(x.shape) != tuple(t.shape) or x.dtype != t.dtype:
            raise ValueError(f"jvp: v[{i}] must have the shape and dtype of inputs[{i}] "
                             f"{tuple(x.shape)} {x.dtype}, got {tuple(t.shape)} {t.dtype}")
    positions = tuple(range(len(xs)))
    prog = _program(fn, ("jvp", len(xs), positions), lambda: ad_graphs.jvp_program(ad_graphs.as_parsable(fn, len(xs)), positions))
    out, jv, aux = _jvp_at(fn, prog, xs, vs, has_aux)
    return (out, jv, aux) if has_aux else (out, jv)


def _positions(op, grad_position, n):
    single = isinstance(grad_position, int)
    positions = (grad_position,) if single else tuple(grad_position)
    for p in positions:
        if not isinstance(p, int) or not -n <= p < n:
            raise ValueError(f"{op}: grad_position {p!r} is out of range for {n} inputs")
    return tuple(p % n for p in positions), single


def _shape_result(jac, out, single):
    """jac[k][p] (numpy) as MindSpore nests it: per output (if several), per position (if a tuple)."""
    def per_out(row):
        row = tuple(_mycel.Tensor(np.ascontiguousarray(j)) for j in row)
        return row[0] if single else row
    if isinstance(out, tuple):
        return tuple(per_out(r) for r in jac)
    return per_out(jac[0])


def _flat_outputs(out):
    return out if isinstance(out, tuple) else (out,)


def jacrev(fn, grad_position=0, has_aux=False):
    """The Jacobian function of fn by reverse mode: one vjp per output element."""
    from mycel.ops import ad_graphs
    programs = {}

    def jac_fn(*inputs):
        xs = _as_tuple(inputs, "jacrev inputs")
        positions, single = _positions("jacrev", grad_position, len(xs))
        out, aux = _split_aux("jacrev", fn(*xs), has_aux)
        if positions not in programs:
            programs[positions] = ad_graphs.vjp_program(ad_graphs.as_parsable(fn, len(xs)), positions, None)
        prog = programs[positions]
        outs = _flat_outputs(out)
        zeros = [np.zeros(o.shape, o.asnumpy().dtype) for o in outs]
        jac = []
        for k, o in enumerate(outs):
            rows = [[] for _ in positions]
            for e in range(int(np.prod(o.shape, dtype=np.int64))):
                sens = [_mycel.Tensor(z) for z in zeros]
                hot = zeros[k].copy()
                hot.reshape(-1)[e] = 1
                sens[k] = _mycel.Tensor(hot)
                s = tuple(sens) if isinstance(out, tuple) else sens[0]
                grads = prog(xs, _full_sens(s, aux, has_aux))
                for i, g in enumerate(grads):
                    rows[i].append(g.asnumpy())
            jac.append([np.stack(r).reshape(tuple(o.shape) + tuple(xs[p].shape)) if r
                        else np.zeros(tuple(o.shape) + tuple(xs[p].shape), zeros[k].dtype)
                        for r, p in zip(rows, positions)])
        result = _shape_result(jac, out, single)
        return (result, aux) if has_aux else result
    return jac_fn


def jacfwd(fn, grad_position=0, has_aux=False):
    """The Jacobian function of fn by forward mode: one jvp per input element."""
    from mycel.ops import ad_graphs
    programs = {}

    def jac_fn(*inputs):
        xs = _as_tuple(inputs, "jacfwd inputs")
        positions, single = _positions("jacfwd", grad_position, len(xs))
        if positions not in programs:
            programs[positions] = ad_graphs.jvp_program(ad_graphs.as_parsable(fn, len(xs)), positions)
        prog = programs[positions]
        out, aux = _split_aux("jacfwd", fn(*xs), has_aux)
        outs = _flat_outputs(out)
        u = _full_sens(_zeros_like(out), aux, has_aux)
        tangents = [np.zeros(xs[p].shape, xs[p].asnumpy().dtype) for p in positions]
        cols = [[[] for _ in positions] for _ in outs]  # cols[k][i]: J_k,p column per element
        for i, p in enumerate(positions):
            for e in range(int(np.prod(xs[p].shape, dtype=np.int64))):
                ts = [_mycel.Tensor(t) for t in tangents]
                hot = tangents[i].copy()
                hot.reshape(-1)[e] = 1
                ts[i] = _mycel.Tensor(hot)
                jv = prog(xs, u, tuple(ts))
                jv = jv[0] if has_aux else jv
                for k, col in enumerate(_flat_outputs(jv)):
                    cols[k][i].append(col.asnumpy())
        jac = []
        for k, o in enumerate(outs):
            row = []
            for i, p in enumerate(positions):
                shape = tuple(o.shape) + tuple(xs[p].shape)
                c = cols[k][i]
                row.append(np.stack(c, axis=-1).reshape(shape) if c else np.zeros(shape, tangents[i].dtype))
            jac.append(row)
        result = _shape_result(jac, out, single)
        return (result, aux) if has_aux else result
    return jac_fn


def _mark_graph_forms():
    from mycel.ops import ad_graphs
    jvp._mycel_graph_impl = ad_graphs.jvp_in_graph
    vjp._mycel_transform = "vjp"  # the frontend builds (out, vjp_fn) in the caller's graph

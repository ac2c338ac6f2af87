"""Signatures and help text of mycel.ops, generated from the registry: every public name of
mycel.ops and mycel.ops.operations has an inspect.Signature, and those of registry ops match the
op's schema (input names, attribute names, defaults) as the C++ registry reports it."""
import inspect
import pydoc

import numpy as np
import pytest

import mycel
from mycel import _mycel, ops
from mycel.ops import operations as P
from mycel.ops.signature import OpFunction

HANDLES = _mycel.op_handles
EMPTY = inspect.Parameter.empty


KIND_TYPES = {"bool": "bool", "int": "int", "float": "float", "str": "str",
              "tuple of int": "tuple[int, ...]", "tuple of float": "tuple[float, ...]",
              "dtype": "mycel._mycel.dtype"}


def schema(handle, with_inputs=True):
    """(names in order, name -> default) straight from the registry entry."""
    names, defaults = [], {}
    if with_inputs:
        for name, optional, _variadic in handle.inputs:
            names.append(name)
            if optional:
                defaults[name] = None
    for name, _kind, value, has_default in handle.attrs:
        names.append(name)
        if has_default:
            defaults[name] = value
    return names, defaults


def assert_matches(sig, handle, with_inputs=True, positional_order=None):
    names, defaults = schema(handle, with_inputs)
    params = list(sig.parameters.values())
    assert sorted(p.name for p in params) == sorted(names)
    positional = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
    # positional order is the call's binding order, or MindSpore's where a class declares it
    # (P.ReduceSum(keep_dims): `_positional`)
    assert positional == list(positional_order or names[:len(positional)])
    kinds = {name: kind for name, kind, _, _ in handle.attrs}
    for p in params:
        assert p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        if p.name in kinds:  # an attribute is annotated with the Python type of its kind
            assert inspect.formatannotation(p.annotation) == KIND_TYPES[kinds[p.name]], (handle.name, p.name)
        else:
            assert p.annotation is EMPTY
        if p.name in defaults:
            assert p.default == defaults[p.name], (handle.name, p.name)
        else:
            assert p.default is EMPTY, (handle.name, p.name)


def public(module):
    return [(n, getattr(module, n)) for n in dir(module) if not n.startswith("_")
            and not inspect.ismodule(getattr(module, n))]


def test_every_public_ops_name_has_a_signature():
    registry_functions = set()
    for name, obj in public(ops):
        if not callable(obj):
            continue
        sig = inspect.signature(obj)  # raises if none
        if isinstance(obj, OpFunction):
            assert_matches(sig, obj._handle)
            registry_functions.add(obj._handle.name)
    # every registry op is reachable with its signature, but for those whose public form takes
    # MindSpore's argument order or arguments instead (a Python composite over the registry op,
    # ops/extra.py, ops/linalg.py)
    reordered = {"gather_elements", "qr"}  # qr: MindSpore's mode='reduced'|'complete' (ops/linalg.py)
    # the sampled distributions: MindSpore's (shape, param, seed) order and seed=None (ops/random_more.py)
    reordered |= {"standard_laplace", "random_gamma", "random_poisson", "random_categorical", "multinomial",
                  "multinomial_with_replacement"}  # (x, seed, offset, numsamples): ints or tensors
    # MindSpore's broadcasting masked_select/masked_scatter and nonzero(as_tuple) (ops/extra.py)
    reordered |= {"masked_select", "masked_scatter", "nonzero"}
    # broadcasting binomial/random_beta, seed=None samplers, cumsum/cumprod's dtype (random_more.py, scans.py)
    reordered |= {"binomial", "random_beta", "log_normal", "exponential", "cumsum", "cumprod"}
    # one_hot with Tensor on/off values setting the dtype (ops/one_hot.py)
    reordered |= {"one_hot"}
    assert all(not isinstance(getattr(ops, n), OpFunction) for n in reordered)
    assert registry_functions | reordered == set(HANDLES)


def test_every_primitive_class_has_a_signature():
    for name in P.__all__:
        cls = getattr(P, name)
        sig = inspect.signature(cls)
        if getattr(cls, "_handle", None) is not None:
            # MindSpore's extra constructor arguments of a Python subclass (Argmax's output_type)
            extra = getattr(cls, "_extra_attrs", ())
            sig = sig.replace(parameters=[p for p in sig.parameters.values() if p.name not in extra])
            assert_matches(sig, cls._handle, with_inputs=False, positional_order=getattr(cls, "_positional", None))


def test_examples_of_signatures():
    assert str(inspect.signature(ops.matmul)) == "(x, y, transpose_a: bool = False, transpose_b: bool = False)"
    assert str(inspect.signature(P.MatMul)) == "(transpose_a: bool = False, transpose_b: bool = False)"
    # a configured primitive is called with its inputs
    assert str(inspect.signature(P.MatMul(transpose_b=True))) == "(x, y, transpose_a: bool = False)"
    assert str(inspect.signature(ops.reduce_sum)) == str(inspect.signature(ops.sum))
    assert ops.reduce_sum.__name__ == "reduce_sum"


def test_help_shows_signature_and_generated_doc():
    text = pydoc.render_doc(ops.conv2d, renderer=pydoc.plaintext)
    h = HANDLES["conv2d"]
    assert "conv2d" + str(inspect.signature(ops.conv2d)) in text
    assert h.doc.rstrip(".") in text
    assert "Inputs:" in text and "Attributes:" in text
    assert "    stride (tuple of int, default (1,))" in text
    assert "    b (Tensor or None, default None)" in text
    assert "Supported dtypes (of x): bfloat16, float32, float64" in text
    assert ">>> ops.conv2d(x, w)" in text  # the runnable example (test_op_examples.py runs them)
    cls_text = pydoc.render_doc(P.Conv2D, renderer=pydoc.plaintext)
    assert "Conv2D" + str(inspect.signature(P.Conv2D)) in cls_text


def test_the_functional_form_still_calls_the_registry():
    x = mycel.Tensor(np.ones((2, 3), np.float32))
    w = mycel.Tensor(np.ones((4, 3), np.float32))
    assert ops.matmul(x, w, transpose_b=True).shape == (2, 4)
    assert inspect.signature(ops.matmul).bind(x, w, transpose_b=True)  # the signature binds like the call


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE])
def test_functional_form_in_both_modes(mode):
    class Net(mycel.nn.Cell):
        def construct(self, x, w):
            return ops.reduce_sum(ops.matmul(x, w, transpose_b=True), 1)

    mycel.set_context(mode=mode)
    try:
        x = mycel.Tensor(np.ones((2, 3), np.float32))
        out = Net()(x, x)
        np.testing.assert_allclose(out.asnumpy(), [6.0, 6.0])
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_op_function_object():
    """The functional form wraps the C++ entry point and behaves like a builtin function."""
    assert ops.matmul.func is _mycel.ops.matmul
    assert repr(ops.matmul) == "<mycel.ops.matmul>"
    assert ops.matmul.__module__ == "mycel.ops" and ops.matmul.__name__ == "matmul"

    class Holder:
        act = ops.relu  # not bound as a method when read through an instance

    x = mycel.Tensor(np.array([-1.0, 2.0], np.float32))
    np.testing.assert_array_equal(Holder().act(x).asnumpy(), [0.0, 2.0])
    with pytest.raises(TypeError):
        OpFunction(1)  # not callable

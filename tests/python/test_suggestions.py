"""Misspelt names get "did you mean ...?": keywords and attributes of ops and primitives (C++,
both modes), attributes of mycel.ops, Cell constructor keywords and set_context keys (Python)."""
import os

import numpy as np
import pytest

import mycel
from mycel import nn, ops
from mycel.common.suggest import did_you_mean
from mycel.ops import operations as P

X = mycel.Tensor(np.ones((2, 3), np.float32))


def test_op_keyword():
    with pytest.raises(TypeError) as e:
        ops.matmul(X, X, transpose_B=True)
    assert str(e.value) == "[matmul] got an unexpected keyword argument 'transpose_B'; did you mean 'transpose_b'?"


def test_op_keyword_far_from_every_name_lists_them():
    with pytest.raises(TypeError) as e:
        ops.matmul(X, X, adjoint=True)
    assert str(e.value) == ("[matmul] got an unexpected keyword argument 'adjoint'; expected one of: "
                            "x, y, transpose_a, transpose_b")


def test_primitive_attribute():
    with pytest.raises(TypeError) as e:
        P.MatMul(transpose_B=True)
    assert str(e.value) == "[MatMul] got an unexpected attribute 'transpose_B'; did you mean 'transpose_b'?"


def test_attribute_alias_is_a_candidate():
    ops.sum(X, keepdim=True)  # an alias of keep_dims (PyTorch's spelling) is accepted ...
    with pytest.raises(TypeError) as e:  # ... and suggested
        ops.sum(X, keepdm=True)
    assert str(e.value) == "[sum] got an unexpected keyword argument 'keepdm'; did you mean 'keepdim'?"


def test_op_keyword_in_graph_mode():
    @mycel.jit
    def f(x):
        return ops.matmul(x, x, transpose_B=True)

    with pytest.raises(TypeError) as e:
        f(X)
    line = f.__wrapped__.__code__.co_firstlineno + 2
    assert str(e.value).startswith(f"{os.path.abspath(__file__)}:{line}:")
    assert ("[matmul] got an unexpected keyword argument 'transpose_B'; did you mean 'transpose_b'?"
            in str(e.value))


def test_function_keyword_in_graph_mode():
    def helper(x, scale=1.0):
        return x * scale

    @mycel.jit
    def f(x):
        return helper(x, scael=2.0)

    with pytest.raises(TypeError) as e:
        f(X)
    assert "helper() got an unexpected keyword argument 'scael'; did you mean 'scale'?" in str(e.value)


def test_ops_module_attribute():
    with pytest.raises(AttributeError) as e:
        ops.relue
    assert str(e.value) == "module 'mycel.ops' has no attribute 'relue'; did you mean 'relu'?"
    with pytest.raises(AttributeError) as e:
        P.Matmul
    assert str(e.value) == "module 'mycel.ops.operations' has no attribute 'Matmul'; did you mean 'MatMul'?"
    assert not hasattr(ops, "__wrapped__")  # dunder lookups stay plain AttributeErrors
    with pytest.raises(AttributeError) as e:
        ops.__wrapped__
    assert str(e.value) == "module 'mycel.ops' has no attribute '__wrapped__'"


def test_package_attributes():
    with pytest.raises(AttributeError) as e:
        mycel.set_contxt
    assert str(e.value) == "module 'mycel' has no attribute 'set_contxt'; did you mean 'set_context'?"
    with pytest.raises(AttributeError) as e:
        nn.Dence
    assert str(e.value) == "module 'mycel.nn' has no attribute 'Dence'; did you mean 'Dense'?"


def test_probing_ops_stays_fast():
    """getattr with a default never reads the message, so no difflib run: far below 1 ms."""
    import timeit
    assert timeit.timeit(lambda: getattr(ops, "no_such_op", None), number=200) / 200 < 2e-4


def test_cell_constructor_keyword():
    with pytest.raises(TypeError) as e:
        nn.Dense(3, 4, has_bais=True)
    assert str(e.value) == "Dense.__init__() got an unexpected keyword argument 'has_bais'; did you mean 'has_bias'?"
    with pytest.raises(TypeError) as e:
        nn.Conv2d(1, 6, 5, pad_mod="valid")
    assert str(e.value) == "Conv2d.__init__() got an unexpected keyword argument 'pad_mod'; did you mean 'pad_mode'?"


def test_user_cell_keyword_and_kwargs_cells():
    class Net(nn.Cell):
        def __init__(self, hidden=4):
            super().__init__()
            self.hidden = hidden

    with pytest.raises(TypeError) as e:
        Net(hiden=3)
    assert str(e.value) == "Net.__init__() got an unexpected keyword argument 'hiden'; did you mean 'hidden'?"
    assert Net(hidden=3).hidden == 3

    class Free(nn.Cell):  # **kwargs: any keyword is the Cell's business
        def __init__(self, **kwargs):
            super().__init__()
            self.kw = kwargs

    assert Free(anything=1).kw == {"anything": 1}


def test_set_context_key():
    with pytest.raises(ValueError) as e:
        mycel.set_context(mod=mycel.GRAPH_MODE)
    assert str(e.value) == "set_context: unknown setting 'mod'; did you mean 'mode'?"
    with pytest.raises(ValueError) as e:
        mycel.set_context(precision="high")
    assert str(e.value) == "set_context: unknown setting 'precision'; expected one of: mode, device_target, num_threads, device_id, jit_config, save_graphs, save_graphs_path, max_call_depth, jit_syntax_level"
    assert mycel.get_context("mode") == mycel.PYNATIVE_MODE


def test_did_you_mean_helper():
    assert did_you_mean("transpose_B", ["transpose_a", "transpose_b"]) == "; did you mean 'transpose_b'?"
    assert did_you_mean("zzz", []) == ""
    assert did_you_mean("zzz", [f"name{i}" for i in range(20)]) == ""  # a long list does not help


def test_model_keyword():
    from mycel.train import Model
    with pytest.raises(TypeError) as e:
        Model(nn.Dense(3, 4), loss_scale_manger=None)
    assert str(e.value) == "Model: unexpected argument 'loss_scale_manger'; did you mean 'loss_scale_manager'?"

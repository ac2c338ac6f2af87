"""A layer fed an input of another dtype than its weight says which came from the user (the
input x) and which from the layer (its weight) and how to fix it, in both modes."""
import numpy as np
import pytest

import mycel
from mycel import nn

MODES = [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE]


def message(layer, arg="x"):
    return (f"{layer}: the input {arg} you gave is float64, but the layer's weight is float32 (from the "
            "layer's dtype argument); cast the input with x.astype(mycel.float32), or call "
            ".to_float(mycel.float32) on the layer to have it cast its inputs")


@pytest.fixture(params=MODES, ids=["pynative", "graph"])
def mode(request):
    mycel.set_context(mode=request.param)
    yield request.param
    mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_conv2d_float64_input(mode):
    conv = nn.Conv2d(1, 6, 5)
    x = mycel.Tensor(np.ones((1, 1, 32, 32)))  # numpy's float64
    with pytest.raises(TypeError) as e:
        conv(x)
    assert str(e.value) == message("Conv2d")
    # the fixes the message names both work
    assert conv(x.astype(mycel.float32)).shape == (1, 6, 32, 32)
    assert conv.to_float(mycel.float32)(x).shape == (1, 6, 32, 32)


def test_dense_float64_input(mode):
    dense = nn.Dense(3, 4)
    x = mycel.Tensor(np.ones((2, 3)))
    with pytest.raises(TypeError) as e:
        dense(x)
    assert str(e.value) == message("Dense")
    assert dense(x.astype(mycel.float32)).shape == (2, 4)


def test_conv2d_transpose_float64_input(mode):
    layer = nn.Conv2dTranspose(2, 3, 3)
    with pytest.raises(TypeError) as e:
        layer(mycel.Tensor(np.ones((1, 2, 4, 4))))
    assert str(e.value) == message("Conv2dTranspose")


def test_matching_dtypes_run(mode):
    dense = nn.Dense(3, 4, dtype=mycel.float64)
    assert dense(mycel.Tensor(np.ones((2, 3)))).dtype == mycel.float64


def test_layer_norm_float64_input(mode):
    layer = nn.LayerNorm((4,))
    x = mycel.Tensor(np.ones((2, 4)))
    with pytest.raises(TypeError) as e:
        layer(x)
    assert str(e.value) == message("LayerNorm")
    assert layer(x.astype(mycel.float32)).shape == (2, 4)


def test_lstm_float64_input(mode):
    layer = nn.LSTM(4, 5)
    x = mycel.Tensor(np.ones((3, 2, 4)))
    with pytest.raises(TypeError) as e:
        layer(x)
    assert str(e.value) == message("LSTM")
    out, _ = layer(x.astype(mycel.float32))
    assert out.shape == (3, 2, 5)


@pytest.mark.parametrize("use_one_hot", [False, True])
def test_embedding_float_ids(mode, use_one_hot):
    layer = nn.Embedding(10, 4, use_one_hot=use_one_hot)
    ids = mycel.Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(TypeError) as e:
        layer(ids)
    assert str(e.value) == ("Embedding: the ids you gave are float32, but a lookup needs integer ids "
                            "(int32 or int64); cast them with ids.astype(mycel.int32)")
    assert layer(ids.astype(mycel.int32)).shape == (2, 3, 4)


def test_batch_norm_mixed_input_dtype_computes_in_input_dtype(mode):
    """BatchNorm keeps float32 statistics beside a float64 (or low-precision) input, as mixed
    precision needs: no error, and the result is the float64 normalization."""
    layer = nn.BatchNorm2d(3)
    layer.set_train(True)
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 4))
    y = layer(mycel.Tensor(x))
    assert y.dtype == mycel.float64
    ref = (x - x.mean((0, 2, 3), keepdims=True)) / np.sqrt(x.var((0, 2, 3), keepdims=True) + 1e-5)
    np.testing.assert_allclose(y.asnumpy(), ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("layer, shape", [(nn.Conv1d(2, 3, 3), (1, 2, 8)), (nn.LSTMCell(4, 5), (2, 4)),
                                          (nn.GRUCell(4, 5), (2, 4)), (nn.RNNCell(4, 5), (2, 4))],
                         ids=["Conv1d", "LSTMCell", "GRUCell", "RNNCell"])
def test_more_weighted_layers_float64_input(mode, layer, shape):
    x = mycel.Tensor(np.ones(shape))
    with pytest.raises(TypeError) as e:
        layer(x)
    assert str(e.value) == message(type(layer).__name__)
    out = layer(x.astype(mycel.float32))
    assert (out[0] if isinstance(out, tuple) else out).dtype == mycel.float32


def test_attention_float64_query_names_query(mode):
    """A transformer layer's first weighted op is its attention: the message names `query`."""
    q = mycel.Tensor(np.ones((3, 2, 8)))
    with pytest.raises(TypeError) as e:
        nn.MultiheadAttention(8, 2)(q, q, q)
    assert str(e.value) == message("MultiheadAttention", "query")
    with pytest.raises(TypeError) as e:
        nn.TransformerEncoderLayer(8, 2, 16)(mycel.Tensor(np.ones((2, 3, 8))))
    assert str(e.value) == message("MultiheadAttention", "query")

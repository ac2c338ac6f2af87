"""mycel.string (MindSpore's mstype.string) and StringTensor: printing as MindSpore does, the
dtype helpers (dtype_to_nptype, pytype_to_dtype, ...), tensors of str/bytes elements against
numpy, dataset string columns handed over as StringTensors, and F.string_eq / F.string_concat
eagerly and folded in graph mode."""
import numpy as np
import pytest

import mycel
from mycel import StringTensor, Tensor, nn
from mycel import dataset as ds
from mycel import dtype as mstype
from mycel.common.string_tensor import string_tensor_row
from mycel.ops import functional as F


def test_string_dtype_prints_and_converts_like_mindspore():
    assert str(mycel.string) == "String" and repr(mstype.string) == "String"
    assert mycel.string.name == "string" and f"{mycel.string}" == "string"
    assert mstype.string == mycel.string and mycel.string != mycel.float32
    assert mstype.dtype_to_nptype(mycel.string) is np.str_
    assert mstype.dtype_to_nptype(mycel.float16) is np.float16
    assert mstype.pytype_to_dtype(str) == mycel.string
    assert mstype.pytype_to_dtype(np.int32) == mycel.int32
    assert mycel.pytype_to_dtype(bool) == mycel.bool_
    assert mycel.dtype_to_pytype(mycel.string) is str and mycel.dtype_to_pytype(mycel.int8) is int
    assert mycel.get_py_obj_dtype(Tensor(np.ones(2, np.float32))) == mycel.float32
    assert mycel.get_py_obj_dtype("a") == mycel.string
    import pickle
    assert pickle.loads(pickle.dumps(mycel.string)) is mycel.string


def test_string_tensor_vs_numpy():
    words = [["ab", "c"], ["de", "fgh"]]
    t = StringTensor(words)
    ref = np.array(words)
    assert t.dtype == mycel.string and t.shape == (2, 2) and t.ndim == 2 and t.size == 4
    np.testing.assert_array_equal(t.asnumpy(), ref)
    assert repr(t[0, 1]) == "Tensor(shape=[], dtype=String, value= 'c')"
    assert repr(t[1]) == "Tensor(shape=[2], dtype=String, value= ['de', 'fgh'])"
    assert str(t[0, 0]) == "ab" and t[1, 1].item() == "fgh" and t.tolist() == words
    np.testing.assert_array_equal((t == "c").asnumpy(), ref == "c")
    np.testing.assert_array_equal((t != StringTensor(ref)).asnumpy(), np.zeros((2, 2), bool))
    np.testing.assert_array_equal((t + "!").asnumpy(), np.char.add(ref, "!"))
    np.testing.assert_array_equal(t.reshape(4).asnumpy(), ref.reshape(4))
    assert [x.item() for x in t.flatten()] == ref.reshape(-1).tolist()
    b = StringTensor(np.array([b"x", b"yz"]))
    assert b.asnumpy().dtype.kind == "S" and b[1].item() == b"yz"
    num = StringTensor(["1.5", "-2"]).astype(mycel.float32)
    np.testing.assert_array_equal(num.asnumpy(), np.array([1.5, -2], np.float32))
    assert StringTensor(np.array(["a", "b"], dtype=object)).asnumpy().dtype.kind == "U"


def test_string_tensor_errors():
    with pytest.raises(TypeError, match="str or bytes elements"):
        StringTensor(np.ones(3))
    with pytest.raises(TypeError, match="all str or all bytes"):
        StringTensor(np.array(["a", b"b"], dtype=object))
    with pytest.raises(ValueError, match="one element"):
        StringTensor(["a", "b"]).item()
    with pytest.raises(TypeError, match="x must be a str"):
        F.string_eq(1, "a")


def test_dataset_string_column_as_string_tensor():
    data = ds.NumpySlicesDataset({"text": np.array(["hello", "sparse", "world"]), "n": np.arange(3)},
                                 shuffle=False)
    rows = [string_tensor_row(r) for r in data.create_tuple_iterator(output_numpy=True)]
    assert [r[0].item() for r in rows] == ["hello", "sparse", "world"]
    assert all(r[0].dtype == mycel.string for r in rows) and rows[2][1] == 2


class _ModeNet(nn.Cell):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode

    def construct(self, x):
        if F.string_eq(self.mode, "train"):
            return x * 2
        return x


@pytest.mark.parametrize("mode", [mycel.PYNATIVE_MODE, mycel.GRAPH_MODE], ids=["pynative", "graph"])
def test_string_eq_and_concat_both_modes(mode):
    mycel.set_context(mode=mode)
    try:
        x = Tensor(np.arange(3, dtype=np.float32))
        np.testing.assert_array_equal(_ModeNet("train")(x).asnumpy(), 2 * np.arange(3))
        np.testing.assert_array_equal(_ModeNet("eval")(x).asnumpy(), np.arange(3))
        assert F.string_concat("ab", "cd") == "abcd" and F.string_eq("a", "a")
    finally:
        mycel.set_context(mode=mycel.PYNATIVE_MODE)


def test_tensor_of_strings_is_a_string_tensor():
    # MindSpore: Tensor(np.array(["a"])) is a Tensor of dtype String.
    words = np.array([["ab", "c"], ["", "déf"]])
    t = Tensor(words)
    assert isinstance(t, StringTensor) and t.dtype == mstype.string
    np.testing.assert_array_equal(t.asnumpy(), words)
    assert Tensor(["hi"]).item() == "hi" and Tensor([b"x\x00y"]).item() == b"x\x00y"
    with pytest.raises(TypeError):
        Tensor("hi")  # a bare str is not tensor data, in MindSpore either
    assert Tensor(["a", "b"], dtype=mstype.string).shape == (2,)
    assert Tensor(input_data=[["p"], ["q"]]).shape == (2, 1)
    # Every other input still builds a numeric Tensor, subclasses included.
    x = Tensor(np.arange(3.0), mstype.float32)
    assert type(x) is Tensor and x.dtype == mstype.float32
    np.testing.assert_array_equal(x.asnumpy(), np.arange(3.0, dtype=np.float32))
    assert Tensor(shape=(2, 3), dtype=mstype.int32).asnumpy().tolist() == [[0] * 3] * 2
    assert Tensor([]).shape == (0,)
    p = mycel.Parameter(Tensor(np.ones(2)), name="w")
    assert type(p) is mycel.Parameter and p.name == "w"
    with pytest.raises(TypeError, match="numpy sees dtype"):
        Tensor(np.array(["a"]), mstype.float32)  # strings do not parse as numbers
    with pytest.raises(TypeError):
        Tensor(1.0, foo=2)
    with pytest.raises(TypeError):
        Tensor(1.0, input_data=2.0)
    with pytest.raises(TypeError, match="needs input_data"):
        Tensor()

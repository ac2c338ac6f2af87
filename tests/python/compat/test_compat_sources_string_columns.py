"""String columns as MindSpore's iterators hand them over: Tensors of dtype String (StringTensor)
without output_numpy, numpy str/bytes arrays with it; numeric columns unchanged. Checked on a
source that yields 1-d string columns (CoNLL2000) and on numpy slices, batched and not."""
import numpy as np

import mycel
import mycel.dataset as ds


def _conll(tmp_path):
    (tmp_path / "train.txt").write_text("He PRP B-NP\nruns VBZ B-VP\n\nGo VB B-VP\n")
    return ds.CoNLL2000Dataset(str(tmp_path), usage="train", shuffle=False)


def test_dict_iterator_hands_over_string_tensors(tmp_path):
    rows = list(_conll(tmp_path).create_dict_iterator(num_epochs=1))
    assert len(rows) == 2
    word = rows[0]["word"]
    assert isinstance(word, mycel.StringTensor) and word.dtype == mycel.string
    assert word.shape == (2,) and word.tolist() == ["He", "runs"]
    assert rows[1]["chunk_tag"].tolist() == ["B-VP"]
    assert repr(rows[1]["pos_tag"]) == "Tensor(shape=[1], dtype=String, value= ['VB'])"
    numpy_rows = list(_conll(tmp_path).create_dict_iterator(num_epochs=1, output_numpy=True))
    assert isinstance(numpy_rows[0]["word"], np.ndarray) and numpy_rows[0]["word"].tolist() == ["He", "runs"]


def test_tuple_iterator_mixed_columns_and_batches():
    names = np.array(["ab", "c", "déf", ""])
    d = ds.NumpySlicesDataset({"name": names, "n": np.arange(4, dtype=np.int32)}, shuffle=False)
    for (s, n), ref, k in zip(d.create_tuple_iterator(num_epochs=1), names, range(4)):
        assert isinstance(s, mycel.StringTensor) and s.item() == ref
        assert isinstance(n, mycel.Tensor) and int(n.asnumpy()) == k
    batches = list(d.batch(3).create_tuple_iterator(num_epochs=1))
    assert isinstance(batches[0][0], mycel.StringTensor) and batches[0][0].tolist() == ["ab", "c", "déf"]
    assert batches[1][0].tolist() == [""]
    raw = ds.NumpySlicesDataset([b"\x00\xff", b"x"], shuffle=False)
    got = [r[0] for r in raw.create_tuple_iterator(num_epochs=1)]
    assert all(isinstance(g, mycel.StringTensor) for g in got)
    assert [g.item() for g in got] == [b"\x00\xff", b"x"]

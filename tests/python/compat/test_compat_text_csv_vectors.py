"""The CSV-backed text sources (AGNews, AmazonReview, DBpedia, SogouNews, YahooAnswers, YelpReview,
SST2) and the pretrained vectors (Vectors, FastText, GloVe, CharNGram) with ToVectors, as a
MindSpore user calls them (imports renamed), on files written here (CSV by the csv module):
rows and vectors against what was written, CharNGram against a brute-force mean."""
import csv

import numpy as np
import pytest

import mycel.dataset as ds
import mycel.dataset.text as text


def _rows(d):
    return [tuple(str(v) for v in r) for r in d.create_tuple_iterator(num_epochs=1, output_numpy=True)]


def _write_csv(path, rows):
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)


SOURCES = [(ds.AGNewsDataset, ["index", "title", "description"]),
           (ds.AmazonReviewDataset, ["label", "title", "content"]),
           (ds.DBpediaDataset, ["class", "title", "content"]),
           (ds.SogouNewsDataset, ["index", "title", "content"]),
           (ds.YahooAnswersDataset, ["class", "title", "content", "answer"]),
           (ds.YelpReviewDataset, ["label", "text"])]


@pytest.mark.parametrize("cls,columns", SOURCES, ids=[c[0].__name__ for c in SOURCES])
def test_csv_text_sources(tmp_path, cls, columns):
    k = len(columns)
    train = [[str(i % 4 + 1)] + [f'field {j} of "{i}",\nwith a comma' for j in range(k - 1)] for i in range(5)]
    test = [["2"] + ["中文 test"] * (k - 1), ["1"] + [""] * (k - 1)]
    _write_csv(tmp_path / "train.csv", train)
    _write_csv(tmp_path / "test.csv", test)
    d = cls(str(tmp_path), usage="train", shuffle=False)
    assert d.get_col_names() == columns
    assert _rows(d) == [tuple(r) for r in train]
    assert _rows(cls(str(tmp_path), usage="test", shuffle=False)) == [tuple(r) for r in test]
    assert _rows(cls(str(tmp_path), shuffle=False)) == [tuple(r) for r in train + test]
    got = _rows(cls(str(tmp_path), usage="all", shuffle=True))
    assert sorted(got) == sorted(tuple(r) for r in train + test)
    shards = [_rows(cls(str(tmp_path), num_shards=3, shard_id=i, shuffle=False)) for i in range(3)]
    assert {r for s in shards for r in s} == {tuple(r) for r in train + test}
    with pytest.raises(ValueError, match="valid set"):
        cls(str(tmp_path), usage="dev")


def test_csv_source_errors(tmp_path):
    _write_csv(tmp_path / "train.csv", [["1", "a", "b"], ["2", "only two"]])
    with pytest.raises(ValueError, match=r"train.csv':2: expected 3 fields, got 2"):
        ds.AGNewsDataset(str(tmp_path), usage="train")
    with pytest.raises(ValueError, match="test.csv does not exist"):
        ds.AGNewsDataset(str(tmp_path), usage="test")


def test_sst2(tmp_path):
    train = [("it 's a charming and often affecting journey . ", "1"), ('a "bare" quote', "0")]
    (tmp_path / "train.tsv").write_text("sentence\tlabel\n" + "".join(f"{s}\t{l}\n" for s, l in train),
                                        encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\nfine .\t1\n", encoding="utf-8")
    (tmp_path / "test.tsv").write_text("index\tsentence\n0\tuneasy mishmash .\n1\tsecond\n", encoding="utf-8")
    d = ds.SST2Dataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["sentence", "label"]
    assert _rows(d) == train
    assert _rows(ds.SST2Dataset(str(tmp_path), usage="dev", shuffle=False)) == [("fine .", "1")]
    d = ds.SST2Dataset(str(tmp_path), usage="test", shuffle=False)
    assert d.get_col_names() == ["sentence"]
    assert _rows(d) == [("uneasy mishmash .",), ("second",)]


def _vec_file(path, table, header=False):
    lines = [f"{len(table)} {len(next(iter(table.values())))}"] if header else []
    lines += [k + " " + " ".join(repr(float(v)) for v in vec) + " " for k, vec in table.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_vectors_fasttext_glove(tmp_path):
    rng = np.random.default_rng(0)
    table = {w: rng.standard_normal(4).astype(np.float32) for w in ["the", "cat", "Sat", "über", ","]}
    for cls, name, header in ((text.Vectors, "vectors.txt", False), (text.FastText, "wiki.en.vec", True),
                              (text.GloVe, "glove.6B.4d.txt", False)):
        vec = cls.from_file(_vec_file(tmp_path / name, table, header))
        assert len(vec) == 5 and vec.dim == 4
        out = text.ToVectors(vec)(np.array(["cat", "über", "dog"]))
        assert out.shape == (3, 4) and out.dtype == np.float32
        np.testing.assert_array_equal(out[0], table["cat"])
        np.testing.assert_array_equal(out[1], table["über"])
        np.testing.assert_array_equal(out[2], np.zeros(4))  # unknown: zeros by default
    vec = text.Vectors.from_file(str(tmp_path / "vectors.txt"), max_vectors=2)
    assert len(vec) == 2
    out = text.ToVectors(vec, unk_init=[9, 9, 9, 9], lower_case_backup=True)(np.array([["THE", "Cat"], ["sat", "x"]]))
    assert out.shape == (2, 2, 4)
    np.testing.assert_array_equal(out[0, 0], table["the"])  # THE -> the
    np.testing.assert_array_equal(out[0, 1], table["cat"])
    np.testing.assert_array_equal(out[1, 0], [9] * 4)  # 'sat' is past max_vectors; no upper-case backup
    with pytest.raises(ValueError, match="must be a \\*.vec file"):
        text.FastText.from_file(str(tmp_path / "vectors.txt"))
    with pytest.raises(ValueError, match="glove"):
        text.GloVe.from_file(str(tmp_path / "vectors.txt"))
    with pytest.raises(ValueError, match="unk_init has 2 values"):
        text.ToVectors(vec, unk_init=[1.0, 2.0])
    (tmp_path / "bad.txt").write_text("a 1 2 3\nb 1 2\n")
    with pytest.raises(ValueError, match=r"bad.txt':2: the vector of 'b' has 2 values"):
        text.Vectors.from_file(str(tmp_path / "bad.txt"))


def test_to_vectors_in_a_pipeline(tmp_path):
    table = {"a": [1.0, 2.0], "b": [3.0, 4.0]}
    vec = text.Vectors.from_file(_vec_file(tmp_path / "v.txt", table))
    data = ds.NumpySlicesDataset({"tokens": np.array([["a", "b"], ["b", "z"]])}, shuffle=False)
    data = data.map(text.ToVectors(vec), input_columns="tokens")
    got = [r[0] for r in data.create_tuple_iterator(output_numpy=True)]
    np.testing.assert_array_equal(got[0], [[1, 2], [3, 4]])
    np.testing.assert_array_equal(got[1], [[3, 4], [0, 0]])


def test_char_ngram(tmp_path):
    rng = np.random.default_rng(1)
    keys = ["2gram-#BEGIN#c", "2gram-ca", "3gram-cat", "4gram-cat#END#", "2gram-zz", "3gram-#BEGIN#ca"]
    table = {k: rng.standard_normal(3).astype(np.float32) for k in keys}
    vec = text.CharNGram.from_file(_vec_file(tmp_path / "charNgram.txt", table))

    def brute(word):
        chars = ["#BEGIN#"] + list(word) + ["#END#"]
        found = [table[f"{n}gram-" + "".join(chars[i:i + n])] for n in (2, 3, 4)
                 for i in range(len(chars) - n + 1) if f"{n}gram-" + "".join(chars[i:i + n]) in table]
        return np.mean(found, axis=0) if found else None

    out = text.ToVectors(vec, unk_init=[7.0, 7.0, 7.0])(np.array(["cat", "ca", "qq"]))
    np.testing.assert_allclose(out[0], brute("cat"), rtol=1e-6)
    np.testing.assert_allclose(out[1], brute("ca"), rtol=1e-6)
    np.testing.assert_array_equal(out[2], [7, 7, 7])

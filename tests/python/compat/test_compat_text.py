"""String columns and mycel.dataset.text, written as a MindSpore user would (imports renamed):
string columns from numpy, a generator and MindRecord, batched and mapped; Vocab, Lookup, the
tokenizers, Ngram, Truncate, ToNumber and PadEnd on strings, each against plain Python."""
import re

import numpy as np
import pytest

import mycel
import mycel.dataset as ds
import mycel.dataset.text as text
from mycel import dtype as mstype
from mycel.dataset import transforms

SENTENCES = ["the cat sat", "a dog", "the  dog\tran far", "", "café naïve 中文"]


def _rows(dataset, **kw):
    return list(dataset.create_tuple_iterator(num_epochs=1, output_numpy=True, **kw))


@pytest.mark.parametrize("output_numpy", [True, False])
def test_string_column_round_trip(output_numpy):
    data = np.array(SENTENCES)
    d = ds.NumpySlicesDataset({"s": data, "i": np.arange(5)}, shuffle=False)
    got = [r[0] for r in d.create_tuple_iterator(num_epochs=1, output_numpy=output_numpy)]
    if output_numpy:  # numpy str arrays
        assert all(isinstance(g, np.ndarray) and g.dtype.kind == "U" and g.shape == () for g in got)
    else:  # Tensors of dtype String, as MindSpore hands string columns over
        assert all(isinstance(g, mycel.StringTensor) and g.dtype == mycel.string and g.shape == () for g in got)
        assert all(g.asnumpy().dtype.kind == "U" for g in got)
    assert [str(g) for g in got] == SENTENCES
    # bytes stay bytes
    got = _rows(ds.NumpySlicesDataset([b"ab\x00c", b"\xff\xfe"], shuffle=False))
    assert [g[0].item() for g in got] == [b"ab\x00c", b"\xff\xfe"] and got[0][0].dtype.kind == "S"


def test_generator_strings_batch_and_shuffle():
    def gen():
        for i, s in enumerate(SENTENCES):
            yield np.array(s), np.array([s.upper(), str(i)]), np.int32(i)
    d = ds.GeneratorDataset(gen, ["s", "pair", "i"]).batch(2)
    rows = _rows(d)
    assert [r[0].tolist() for r in rows] == [SENTENCES[0:2], SENTENCES[2:4], SENTENCES[4:]]
    assert rows[1][1].tolist() == [[SENTENCES[2].upper(), "2"], ["", "3"]]
    # a random-access source, shuffled: same multiset of strings
    d = ds.GeneratorDataset([(np.array(s),) for s in SENTENCES], ["s"], shuffle=True)
    assert sorted(str(r[0]) for r in _rows(d)) == sorted(SENTENCES)


def test_batch_pads_string_rows():
    d = ds.GeneratorDataset([(np.array(["a", "bb", "ccc"][:n]),) for n in (1, 3, 2)], ["w"],
                            shuffle=False)
    got = _rows(d.batch(3, pad_info={"w": (None, "")}))[0][0]
    assert got.tolist() == [["a", "", ""], ["a", "bb", "ccc"], ["a", "bb", ""]]
    got = _rows(d.batch(3, pad_info={"w": (None, "x")}))[0][0]  # any pad string
    assert got.tolist() == [["a", "x", "x"], ["a", "bb", "ccc"], ["a", "bb", "x"]]
    with pytest.raises(ValueError, match="rows must have equal shapes"):
        _rows(d.batch(3))


def test_python_map_and_filter_on_strings():
    d = ds.NumpySlicesDataset({"s": np.array(SENTENCES)}, shuffle=False)
    d = d.map(lambda s: (np.array(str(s)[::-1]), np.int64(len(str(s)))), input_columns="s",
              output_columns=["r", "n"])
    d = d.filter(lambda n: n > 0, input_columns=["n"])
    rows = _rows(d)
    want = [(s[::-1], len(s)) for s in SENTENCES if s]
    assert [(str(r), int(n)) for r, n in rows] == want


def test_numeric_transform_refuses_strings():
    d = ds.NumpySlicesDataset({"s": np.array(SENTENCES)}, shuffle=False)
    with pytest.raises(TypeError, match="TypeCast: the input holds strings"):
        _rows(d.map(transforms.TypeCast(mstype.int32), input_columns="s"))
    with pytest.raises(TypeError, match="holds strings"):
        transforms.TypeCast(mstype.int32)(np.array(["1"]))


def test_mindrecord_string_field(tmp_path):
    from mycel.mindrecord import FileWriter
    path = str(tmp_path / "t.mindrecord")
    w = FileWriter(path, shard_num=1)
    w.add_schema({"id": {"type": "int64"}, "text": {"type": "string"}, "blob": {"type": "bytes"}})
    w.write_raw_data([{"id": i, "text": s, "blob": s.encode()[:3]} for i, s in enumerate(SENTENCES)])
    w.commit()
    d = ds.MindDataset(path, shuffle=False)
    rows = list(d.create_dict_iterator(num_epochs=1, output_numpy=True))
    assert [str(r["text"]) for r in rows] == SENTENCES
    assert [r["blob"].tobytes() for r in rows] == [s.encode()[:3] for s in SENTENCES]
    assert rows[0]["blob"].dtype == np.uint8


def test_vocab_constructors(tmp_path):
    v = text.Vocab.from_list(["a", "b", "c"], special_tokens=["<pad>", "<unk>"], special_first=True)
    assert v.vocab() == {"<pad>": 0, "<unk>": 1, "a": 2, "b": 3, "c": 4}
    v = text.Vocab.from_list(["a", "b"], special_tokens=["<unk>"], special_first=False)
    assert v.vocab() == {"a": 0, "b": 1, "<unk>": 2}
    assert v.tokens_to_ids(["b", "zz"]) == [1, -1] and v.ids_to_tokens([2, 0, 9]) == ["<unk>", "a", ""]
    assert text.Vocab.from_dict({"x": 7, "y": 3}).vocab() == {"x": 7, "y": 3}
    f = tmp_path / "vocab.txt"
    f.write_text("hello,1\nworld,2\nfoo,3\n", encoding="utf-8")
    v = text.Vocab.from_file(str(f), delimiter=",", vocab_size=2, special_tokens=["<unk>"])
    assert v.vocab() == {"<unk>": 0, "hello": 1, "world": 2}
    with pytest.raises(ValueError, match="duplicate word 'a'"):
        text.Vocab.from_list(["a", "a"])
    with pytest.raises(ValueError, match="no such file"):
        text.Vocab.from_file(str(tmp_path / "missing.txt"))
    # from a dataset: most frequent first, ties in lexicographic order
    words = "b a c a b a d".split()
    d = ds.NumpySlicesDataset({"w": np.array(words)}, shuffle=False)
    v = text.Vocab.from_dataset(d, "w", top_k=3)
    counts = {w: words.count(w) for w in words}
    want = sorted(counts, key=lambda w: (-counts[w], w))[:3]
    assert v.vocab() == {w: i for i, w in enumerate(want)}


def test_tokenize_lookup_pipeline():
    vocab = text.Vocab.from_list(sorted({w for s in SENTENCES for w in s.split()}), ["<unk>"])
    d = ds.NumpySlicesDataset({"s": np.array(SENTENCES)}, shuffle=False)
    d = d.map(text.WhitespaceTokenizer(), input_columns="s")
    d = d.map(text.Lookup(vocab, "<unk>"), input_columns="s")
    got = [r[0] for r in _rows(d)]
    table = vocab.vocab()
    for g, s in zip(got, SENTENCES):
        assert g.dtype == np.int32
        # an empty text is the one token '' (MindSpore's tokenizers), which is unknown here
        assert g.tolist() == [table.get(w, table["<unk>"]) for w in (s.split() or [""])]
    lookup = text.Lookup(vocab, "<unk>", data_type=mstype.int64)
    out = lookup(np.array([["the", "zebra"], ["dog", "a"]]))
    assert out.dtype == np.int64 and out.tolist() == [[table["the"], 0], [table["dog"], table["a"]]]
    with pytest.raises(ValueError, match="'zebra' is not in the vocabulary"):
        text.Lookup(vocab)(np.array(["zebra"]))
    with pytest.raises(ValueError, match="unknown_token '<oov>' is not in the vocabulary"):
        text.Lookup(vocab, "<oov>")


def test_tokenizers_with_offsets():
    s = "café  naïve 中文 x"
    toks, start, limit = text.WhitespaceTokenizer(with_offsets=True)(s)
    raw = s.encode("utf-8")
    ref = [(m.group(), m.start(), m.end()) for m in re.finditer(rb"\S+", raw)]
    assert toks.tolist() == [t.decode() for t, _, _ in ref]
    assert start.tolist() == [a for _, a, _ in ref] and limit.tolist() == [b for _, _, b in ref]
    chars, start, limit = text.UnicodeCharTokenizer(with_offsets=True)("aé中")
    assert chars.tolist() == ["a", "é", "中"] and start.tolist() == [0, 1, 3] and limit.tolist() == [1, 3, 6]
    assert text.RegexTokenizer(r"\s+|,", keep_delim_pattern=",")("a, b,c").tolist() == ["a", ",", "b", ",", "c"]
    assert text.PythonTokenizer(lambda t: t.split("-"))("x-y").tolist() == ["x", "y"]
    with pytest.raises(ValueError, match="WhitespaceTokenizer: the input must be a scalar string"):
        text.WhitespaceTokenizer()(np.array(["a b", "c"]))
    with pytest.raises(TypeError, match="WhitespaceTokenizer: the input must be a string, got a int64"):
        text.WhitespaceTokenizer()(np.array(3))


def _ngram_ref(seq, n, lpad, rpad, sep):
    out = []
    for k in n:
        p = [lpad[0]] * min(lpad[1], k - 1) + seq + [rpad[0]] * min(rpad[1], k - 1)
        grams = [sep.join(p[i:i + k]) for i in range(len(p) - k + 1)]
        out += grams or [""]
    return out


def test_ngram():
    seq = ["WildRose", "Country"]
    got = text.Ngram([1, 2, 3], left_pad=("_", 2), right_pad=("_", 2), separator=" ")(np.array(seq))
    # MindSpore's documented example: n-grams with up to n-1 pads on each side
    assert got.tolist() == ["WildRose", "Country", "_ WildRose", "WildRose Country", "Country _",
                            "_ _ WildRose", "_ WildRose Country", "WildRose Country _", "Country _ _"]
    seq = "a b c d".split()
    for n, lp, rp in (([2], ("", 0), ("", 0)), ([4, 5], ("<s>", 1), ("</s>", 3)), ([6], ("", 0), ("", 0))):
        got = text.Ngram(n, lp, rp, "-")(np.array(seq)).tolist()
        assert got == _ngram_ref(seq, n, lp, rp, "-")
    with pytest.raises(ValueError, match="n must be a positive int"):
        text.Ngram([0])


def test_truncate_to_number_pad_end_and_friends():
    a = np.array(["w1", "w2", "w3", "w4"])
    assert text.Truncate(2)(a).tolist() == ["w1", "w2"]
    x, y = text.TruncateSequencePair(5)(np.arange(4), np.arange(6))
    assert (len(x), len(y)) == (2, 3)  # cut from the longer side first
    nums = np.array(["1", " -2 ", "300"])
    np.testing.assert_array_equal(text.ToNumber(mstype.int16)(nums), np.array([1, -2, 300], np.int16))
    np.testing.assert_allclose(text.ToNumber(mstype.float32)(np.array(["1.5", "-2e3"])), [1.5, -2000.0])
    with pytest.raises(ValueError, match="'300' is out of the range of int8"):
        text.ToNumber(mstype.int8)(nums)
    with pytest.raises(ValueError, match="'x1' is not a valid int32 number"):
        text.ToNumber(mstype.int32)(np.array(["x1"]))
    with pytest.raises(ValueError, match="out of the range of float16"):
        text.ToNumber(mstype.float16)(np.array(["1e10"]))
    assert transforms.PadEnd([6], "<pad>")(a).tolist() == a.tolist() + ["<pad>", "<pad>"]
    assert transforms.PadEnd([3], "")(a).tolist() == a[:3].tolist()
    assert text.AddToken("<s>", begin=True)(a[:2]).tolist() == ["<s>", "w1", "w2"]
    assert text.SlidingWindow(3)(a).tolist() == [["w1", "w2", "w3"], ["w2", "w3", "w4"]]
    assert text.CaseFold()(np.array("Straße ABC")).tolist() == "strasse abc"
    assert text.RegexReplace(r"\d", "#")(a).tolist() == ["w#"] * 4
    assert text.to_str(np.array([b"a", b"bc"])).tolist() == ["a", "bc"]
    # in a pipeline, batched
    d = ds.NumpySlicesDataset({"s": np.array(SENTENCES)}, shuffle=False)
    d = d.map([text.WhitespaceTokenizer(), text.Truncate(2), transforms.PadEnd([2], "<pad>")], "s")
    got = _rows(d.batch(5))[0][0]
    want = [((s.split() or [""])[:2] + ["<pad>"] * 2)[:2] for s in SENTENCES]
    assert got.tolist() == want


def test_text_file_dataset(tmp_path):
    (tmp_path / "b.txt").write_text("Welcome to Beijing!\n\n北京欢迎您！\r\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("我喜欢English!\nlast line", encoding="utf-8")
    d = ds.TextFileDataset(str(tmp_path / "*.txt"), shuffle=False)
    assert d.get_col_names() == ["text"] and d.get_dataset_size() == 4
    want = ["我喜欢English!", "last line", "Welcome to Beijing!", "北京欢迎您！"]  # files sorted
    assert [str(r["text"]) for r in d.create_dict_iterator(num_epochs=1, output_numpy=True)] == want
    shuffled = ds.TextFileDataset(str(tmp_path / "*.txt"))
    assert sorted(str(r[0]) for r in _rows(shuffled)) == sorted(want)
    tokens = d.map(text.WhitespaceTokenizer(), "text")
    assert [r[0].tolist() for r in _rows(tokens)][2] == ["Welcome", "to", "Beijing!"]
    shard = ds.TextFileDataset(str(tmp_path / "*.txt"), shuffle=False, num_shards=2, shard_id=1)
    assert shard.get_dataset_size() == 2
    with pytest.raises(ValueError, match="did not match any files"):
        ds.TextFileDataset(str(tmp_path / "none*.txt"))


def test_bert_tokenizers():
    # BERT's reference example: "unaffable" -> un ##aff ##able with this vocabulary
    vocab = text.Vocab.from_list(["[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un",
                                  "runn", "##ing", ",", "##aff", "##able", "!", "我", "喜", "欢"])
    wp = text.WordpieceTokenizer(vocab)
    assert wp(np.array(["unwanted", "running", "unaffable", "xyz"])).tolist() == \
        ["un", "##want", "##ed", "runn", "##ing", "un", "##aff", "##able", "[UNK]"]
    assert text.WordpieceTokenizer(vocab, unknown_token="")(np.array(["xyz"])).tolist() == ["xyz"]
    assert text.WordpieceTokenizer(vocab, max_bytes_per_token=4)(np.array(["running"])).tolist() == ["[UNK]"]
    basic = text.BasicTokenizer(lower_case=True)
    assert basic("  Héllo,WORLD!我喜欢 [CLS] [unused3]").tolist() == \
        ["hello", ",", "world", "!", "我", "喜", "欢", "[CLS]", "[unused3]"]
    assert text.BasicTokenizer()("Héllo  you").tolist() == ["Héllo", "you"]
    assert text.BasicTokenizer(keep_whitespace=True)("a b").tolist() == ["a", " ", "b"]
    bert = text.BertTokenizer(vocab, lower_case=True)
    d = ds.NumpySlicesDataset({"s": np.array(["UNwanted running!", "我喜欢"])}, shuffle=False)
    got = [r[0].tolist() for r in _rows(d.map(bert, "s"))]
    assert got == [["un", "##want", "##ed", "runn", "##ing", "!"], ["我", "喜", "欢"]]
    nfkc = text.NormalizeUTF8()(np.array(["ｆｕｌｌ①"]))
    assert nfkc.tolist() == ["full1"]


def _triples(out):
    toks, start, limit = out
    assert start.dtype == np.uint32 and limit.dtype == np.uint32  # MindSpore's offset type
    return list(zip(toks.tolist(), start.tolist(), limit.tolist()))


def test_basic_tokenizer_offsets_hand_computed():
    # byte offsets in UTF-8: 世 and 界 are 3 bytes each
    basic = text.BasicTokenizer(with_offsets=True)
    assert _triples(basic("Hello, 世界!")) == [("Hello", 0, 5), (",", 5, 6), ("世", 7, 10), ("界", 10, 13),
                                              ("!", 13, 14)]
    # lower_case: offsets count bytes of the folded text (é -> e: "hello" ends at 5, not 6)
    low = text.BasicTokenizer(lower_case=True, with_offsets=True)
    assert _triples(low("Héllo WORLD")) == [("hello", 0, 5), ("world", 6, 11)]
    # a whitespace run is one delimiter, kept whole with keep_whitespace
    keep = text.BasicTokenizer(keep_whitespace=True, with_offsets=True)
    assert _triples(keep("a  b")) == [("a", 0, 1), ("  ", 1, 3), ("b", 3, 4)]
    assert _triples(basic("[CLS] hi[SEP]")) == [("[CLS]", 0, 5), ("hi", 6, 8), ("[SEP]", 8, 13)]
    # a format character (zero-width space, 3 bytes) becomes one space before splitting
    assert _triples(basic("a\u200bb")) == [("a", 0, 1), ("b", 2, 3)]
    assert _triples(basic("   ")) == [("", 0, 0)]  # no token: the one empty token
    assert text.BasicTokenizer()("").tolist() == [""]


def test_wordpiece_and_bert_offsets_hand_computed():
    vocab = text.Vocab.from_list(["[UNK]", "want", "##want", "##ed", "un", "runn", "##ing", "!",
                                  "我", "喜", "欢"])
    wp = text.WordpieceTokenizer(vocab, with_offsets=True)
    # offsets in each word, the suffix indicator not counted
    assert _triples(wp(np.array(["unwanted", "running", "xyz"]))) == [
        ("un", 0, 2), ("##want", 2, 6), ("##ed", 6, 8), ("runn", 0, 4), ("##ing", 4, 7), ("[UNK]", 0, 3)]
    # a word over max_bytes_per_token: MindSpore's limit is the unknown token's length (5)
    assert _triples(text.WordpieceTokenizer(vocab, max_bytes_per_token=4, with_offsets=True)(
        np.array(["running"]))) == [("[UNK]", 0, 5)]
    assert _triples(text.WordpieceTokenizer(vocab, unknown_token="", with_offsets=True)(
        np.array(["xyz"]))) == [("xyz", 0, 3)]
    bert = text.BertTokenizer(vocab, lower_case=True, with_offsets=True)
    assert _triples(bert("UNwanted running!")) == [
        ("un", 0, 2), ("##want", 2, 6), ("##ed", 6, 8), ("runn", 9, 13), ("##ing", 13, 16), ("!", 16, 17)]
    assert _triples(bert("我喜欢")) == [("我", 0, 3), ("喜", 3, 6), ("欢", 6, 9)]
    assert _triples(bert("")) == [("", 0, 0)]
    # in a pipeline: three output columns, offsets uint32
    d = ds.NumpySlicesDataset({"s": np.array(["UNwanted running!", "我喜欢"])}, shuffle=False)
    d = d.map(bert, input_columns=["s"], output_columns=["token", "offsets_start", "offsets_limit"])
    rows = _rows(d)
    assert [r[0].tolist() for r in rows] == [["un", "##want", "##ed", "runn", "##ing", "!"], ["我", "喜", "欢"]]
    assert rows[0][1].dtype == np.uint32 and rows[1][1].tolist() == [0, 3, 6] and rows[1][2].tolist() == [3, 6, 9]


def test_simple_tokenizer_offsets_are_uint32_and_empty_is_one_token():
    toks, start, limit = text.WhitespaceTokenizer(with_offsets=True)("  ")
    assert toks.tolist() == [""] and start.tolist() == [0] and limit.tolist() == [0]
    assert start.dtype == np.uint32
    assert _triples(text.RegexTokenizer(r"\s+", with_offsets=True)("ab  ç")) == [("ab", 0, 2), ("ç", 4, 6)]
    assert text.UnicodeCharTokenizer()("").tolist() == [""]

"""EnWik9, PennTreebank, WikiText, CoNLL2000, UDPOS, IWSLT2016/2017 and Multi30k datasets as a
MindSpore user calls them, on small file trees written here in each corpus's layout: rows against
the sentences the test wrote."""
import numpy as np
import pytest

import mycel.dataset as ds


def _rows(d):
    return [tuple(np.asarray(c).tolist() for c in r)
            for r in d.create_tuple_iterator(num_epochs=1, output_numpy=True)]


def test_enwik9_keeps_every_line(tmp_path):
    lines = ["<mediawiki>", "", "  <page>", "text with ünïcode", ""]
    (tmp_path / "enwik9").write_text("\n".join(lines) + "\n", encoding="utf-8")
    d = ds.EnWik9Dataset(str(tmp_path), shuffle=False)
    assert d.get_col_names() == ["text"]
    assert [r[0] for r in _rows(d)] == lines
    assert sorted(r[0] for r in _rows(ds.EnWik9Dataset(str(tmp_path)))) == sorted(lines)
    assert ds.EnWik9Dataset(str(tmp_path), num_shards=2, shard_id=0).get_dataset_size() == 3


@pytest.mark.parametrize("cls,files", [
    (ds.PennTreebankDataset, {"train": "ptb.train.txt", "valid": "ptb.valid.txt", "test": "ptb.test.txt"}),
    (ds.WikiTextDataset, {"train": "wiki.train.tokens", "valid": "wiki.valid.tokens", "test": "wiki.test.tokens"}),
])
def test_line_corpora(tmp_path, cls, files):
    text = {u: [f"{u} line {k} <unk> N" for k in range(3)] for u in files}
    for u, name in files.items():
        (tmp_path / name).write_text("\n".join(text[u][:2]) + "\n\n" + text[u][2] + "\n")
    for u in files:
        assert [r[0] for r in _rows(cls(str(tmp_path), usage=u, shuffle=False))] == text[u]
    every = [r[0] for r in _rows(cls(str(tmp_path), shuffle=False))]
    assert every == [t for name in sorted(files.values()) for u in files if files[u] == name for t in text[u]]
    with pytest.raises(ValueError, match="Input usage is not within"):
        cls(str(tmp_path), usage="dev")
    (tmp_path / files["test"]).unlink()
    with pytest.raises(ValueError, match=files["test"] + " does not exist"):
        cls(str(tmp_path), usage="test")


def _tagged(sentences, sep):
    return "\n\n".join("\n".join(sep.join(tok) for tok in s) for s in sentences) + "\n"


def test_conll2000(tmp_path):
    train = [[("Confidence", "NN", "B-NP"), ("in", "IN", "B-PP"), ("the", "DT", "B-NP")],
             [("Chancellor", "NNP", "O"), (".", ".", "O")]]
    test = [[("Rockwell", "NNP", "B-NP")]]
    (tmp_path / "train.txt").write_text(_tagged(train, " "))
    (tmp_path / "test.txt").write_text(_tagged(test, " "))
    d = ds.CoNLL2000Dataset(str(tmp_path), usage="train", shuffle=False)
    assert d.get_col_names() == ["word", "pos_tag", "chunk_tag"]
    got = _rows(d)
    assert got == [tuple([t[k] for t in s] for k in range(3)) for s in train]
    assert [r[0] for r in _rows(ds.CoNLL2000Dataset(str(tmp_path), shuffle=False))] == \
        [["Rockwell"], ["Confidence", "in", "the"], ["Chancellor", "."]]
    (tmp_path / "test.txt").write_text("Rockwell NNP\n")
    with pytest.raises(ValueError, match=r"test.txt':1: expected 3 fields, got 2"):
        ds.CoNLL2000Dataset(str(tmp_path), usage="test")


def test_udpos(tmp_path):
    sents = {"train": [[("Al", "PROPN", "NNP"), ("-", "PUNCT", "HYPH")], [("Zaman", "PROPN", "NNP")]],
             "valid": [[("From", "ADP", "IN")]], "test": [[("What", "PRON", "WP"), ("?", "PUNCT", ".")]]}
    names = {"train": "en-ud-tag.v2.train.txt", "valid": "en-ud-tag.v2.dev.txt", "test": "en-ud-tag.v2.test.txt"}
    for u, s in sents.items():
        (tmp_path / names[u]).write_text(_tagged(s, "\t"))
    got = _rows(ds.UDPOSDataset(str(tmp_path), usage="valid", shuffle=False))
    assert got == [(["From"], ["ADP"], ["IN"])]
    got = _rows(ds.UDPOSDataset(str(tmp_path), shuffle=False))  # dev, test, train: file-name order
    assert [r[0] for r in got] == [["From"], ["What", "?"], ["Al", "-"], ["Zaman"]]
    assert ds.UDPOSDataset(str(tmp_path)).get_col_names() == ["word", "universal", "stanford"]


def _iwslt_xml(segments_per_doc, lang):
    docs = "".join(f'<doc docid="{k}"><url>http://x</url><talkid>{k}</talkid>' +
                   "".join(f'<seg id="{j}"> {s} </seg>\n' for j, s in enumerate(segs, 1)) + "</doc>\n"
                   for k, segs in enumerate(segments_per_doc))
    return f'<mteval>\n<refset setid="x" srclang="any" trglang="{lang}">\n{docs}</refset>\n</mteval>\n'


def _iwslt_tree(folder, prefix, src, tgt, valid, test):
    folder.mkdir(parents=True)
    train = {src: ["<url>http://www.ted.com/talks/a</url>", "<talkid>1</talkid>", " Hallo Welt ", "Zweiter Satz"],
             tgt: ["<url>http://www.ted.com/talks/a</url>", "<talkid>1</talkid>", "Hello world", " Second one "]}
    for lang, lines in train.items():
        (folder / f"train.tags.{src}-{tgt}.{lang}").write_text("\n".join(lines) + "\n")
    evals = {valid: {src: [["Ein", "Zwei"], ["Drei"]], tgt: [["One", "Two"], ["Three"]]},
             test: {src: [["Vier"]], tgt: [["Four"]]}}
    for which, per_lang in evals.items():
        for lang, segs in per_lang.items():
            (folder / f"{prefix}.TED.{which}.{src}-{tgt}.{lang}.xml").write_text(_iwslt_xml(segs, lang))
    return [("Hallo Welt", "Hello world"), ("Zweiter Satz", "Second one")], \
        [("Ein", "One"), ("Zwei", "Two"), ("Drei", "Three")], [("Vier", "Four")]


def test_iwslt2016(tmp_path):
    train, valid, test = _iwslt_tree(tmp_path / "texts/de/en/de-en", "IWSLT16", "de", "en", "tst2013", "tst2014")
    d = ds.IWSLT2016Dataset(str(tmp_path), usage="train", shuffle=False)
    assert d.get_col_names() == ["text", "translation"]
    assert _rows(d) == train
    assert _rows(ds.IWSLT2016Dataset(str(tmp_path), usage="valid", shuffle=False)) == valid
    assert _rows(ds.IWSLT2016Dataset(str(tmp_path), usage="all", shuffle=False)) == train + valid + test
    with pytest.raises(ValueError, match=r"IWSLT16.TED.tst2012.de-en.de.xml does not exist"):
        ds.IWSLT2016Dataset(str(tmp_path), usage="valid", valid_set="tst2012")
    with pytest.raises(ValueError, match=r"language_pair \['de', 'it'\] is not one of"):
        ds.IWSLT2016Dataset(str(tmp_path), language_pair=["de", "it"])
    with pytest.raises(ValueError, match="test_set 'tst2099' is not one of"):
        ds.IWSLT2016Dataset(str(tmp_path), test_set="tst2099")
    (tmp_path / "texts/de/en/de-en/IWSLT16.TED.tst2014.de-en.de.xml").write_text(
        '<!DOCTYPE x [<!ENTITY a "b">]><mteval/>')
    with pytest.raises(ValueError, match="document type declaration"):
        ds.IWSLT2016Dataset(str(tmp_path), usage="test")


def test_iwslt2017(tmp_path):
    folder = tmp_path / "texts/DeEnItNlRo/DeEnItNlRo/DeEnItNlRo-DeEnItNlRo"
    train, valid, test = _iwslt_tree(folder, "IWSLT17", "it", "nl", "dev2010", "tst2010")
    d = ds.IWSLT2017Dataset(str(tmp_path), language_pair=("it", "nl"), shuffle=False)
    assert _rows(d) == train + valid + test
    assert _rows(ds.IWSLT2017Dataset(str(tmp_path), usage="test", language_pair=["it", "nl"])) == test
    with pytest.raises(ValueError, match="train.tags.de-en.de does not exist"):
        ds.IWSLT2017Dataset(str(tmp_path), usage="train")


def test_multi30k(tmp_path):
    data = {"training/train": (["A dog.", "Two men."], ["Ein Hund.", "Zwei Männer."]),
            "validation/val": (["A cat."], ["Eine Katze."]),
            "mmt16_task1_test/test": (["Snow."], ["Schnee."])}
    for stem, (en, de) in data.items():
        (tmp_path / stem).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / (stem + ".en")).write_text("\n".join(en) + "\n", encoding="utf-8")
        (tmp_path / (stem + ".de")).write_text("\n".join(de) + "\n", encoding="utf-8")
    got = _rows(ds.Multi30kDataset(str(tmp_path), usage="train", shuffle=False))
    assert got == list(zip(*data["training/train"]))
    got = _rows(ds.Multi30kDataset(str(tmp_path), usage="valid", language_pair=["de", "en"], shuffle=False))
    assert got == [("Eine Katze.", "A cat.")]
    got = _rows(ds.Multi30kDataset(str(tmp_path), shuffle=False))
    assert [r[0] for r in got] == ["Snow.", "A dog.", "Two men.", "A cat."]
    with pytest.raises(ValueError, match="language_pair"):
        ds.Multi30kDataset(str(tmp_path), language_pair=["en", "fr"])
    (tmp_path / "validation/val.de").write_text("x\ny\n")
    with pytest.raises(ValueError, match=r"val.en' has 1 lines but .*val.de' 2"):
        ds.Multi30kDataset(str(tmp_path), usage="valid")

"""SQuADDataset as a MindSpore user calls it, on SQuAD 1.1 and 2.0 files written here with json:
every column against the questions written, usage, sharding and shuffling, and clear errors for a
missing or malformed file."""
import json

import numpy as np
import pytest

import mycel.dataset as ds


def _rows(d):
    return list(d.create_tuple_iterator(num_epochs=1, output_numpy=True))


def _squad(path, articles):
    """articles: [[(context, [(question, [(answer, start)])])]]"""
    doc = {"version": "x", "data": [{"title": f"t{a}", "paragraphs": [
        {"context": c, "qas": [{"id": f"{a}-{q}", "question": qq, "answers": [
            {"text": t, "answer_start": s} for t, s in ans]} for q, (qq, ans) in enumerate(qas)]}
        for c, qas in paras]} for a, paras in enumerate(articles)]}
    path.write_text(json.dumps(doc))
    return [(c, qq, ans) for paras in articles for c, qas in paras for qq, ans in qas]


def test_squad_v1_and_v2(tmp_path):
    ctx = "Mycel reads SQuAD files. It is a framework."
    train = _squad(tmp_path / "train-v1.1.json", [
        [(ctx, [("What does Mycel read?", [("SQuAD files", 12)]),
                ("What is it?", [("a framework", 31), ("framework", 33)])])],
        [("Second article.", [("Which article?", [("Second", 0)])])]])
    dev = _squad(tmp_path / "dev-v2.0.json", [[("Nothing here.", [("Unanswerable?", [])])]])
    d = ds.SQuADDataset(str(tmp_path), usage="train", shuffle=False)
    assert d.get_col_names() == ["context", "question", "text", "answer_start"]
    got = _rows(d)
    assert len(got) == 3
    for (c, q, text, start), (rc, rq, ans) in zip(got, train):
        assert str(c) == rc and str(q) == rq
        assert [str(t) for t in text] == [t for t, _ in ans]
        assert start.dtype == np.uint32 and start.tolist() == [s for _, s in ans]
        for t, s in zip(text, start):  # each answer sits in its context where answer_start says
            assert rc[int(s):int(s) + len(str(t))] == str(t)
    (c, q, text, start), = _rows(ds.SQuADDataset(str(tmp_path), usage="dev"))
    assert str(q) == "Unanswerable?" and text.tolist() == [""] and start.tolist() == [0xFFFFFFFF]
    assert ds.SQuADDataset(str(tmp_path)).get_dataset_size() == 4
    shards = [sorted(str(r[1]) for r in _rows(ds.SQuADDataset(str(tmp_path), num_shards=2, shard_id=i)))
              for i in (0, 1)]
    assert sorted(shards[0] + shards[1]) == sorted(q for _, q, _ in train + dev)
    shuffled = _rows(ds.SQuADDataset(str(tmp_path), shuffle=ds.Shuffle.GLOBAL))
    assert sorted(str(r[1]) for r in shuffled) == sorted(q for _, q, _ in train + dev)


def test_squad_errors(tmp_path):
    with pytest.raises(ValueError, match="dev-v1.1.json nor .*dev-v2.0.json exists"):
        ds.SQuADDataset(str(tmp_path), usage="dev")
    (tmp_path / "train-v1.1.json").write_text('{"data": [')
    with pytest.raises(ValueError, match="cannot read the JSON file .*train-v1.1.json"):
        ds.SQuADDataset(str(tmp_path), usage="train")
    (tmp_path / "train-v1.1.json").write_text(json.dumps(
        {"data": [{"paragraphs": [{"context": "c", "qas": [{"question": "q", "answers": [{"text": "c"}]}]}]}]}))
    with pytest.raises(ValueError, match=r"data\[0\].paragraphs\[0\].qas\[0\].answers\[0\] lacks a int 'answer_start'"):
        ds.SQuADDataset(str(tmp_path), usage="train")
    with pytest.raises(ValueError, match="Input usage is not within"):
        ds.SQuADDataset(str(tmp_path), usage="valid")

"""The C++ tokenizers of mycel.dataset.text, written as a MindSpore user would (imports renamed):
JiebaTokenizer against PyPI's jieba given the same dictionary and HMM, and against brute force
on a tiny dictionary; UnicodeScriptTokenizer against Unicode's own Scripts.txt/PropList.txt;
SentencePieceTokenizer/SentencePieceVocab against PyPI's sentencepiece on the same models."""
import itertools
import math
import os
import random

import numpy as np
import pytest

import mycel.dataset as ds
import mycel.dataset.text as text

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "jieba")
TINY_DICT, TINY_HMM = os.path.join(DATA, "dict.utf8"), os.path.join(DATA, "hmm_model.utf8")
MIN = -3.14e100


def _check_offsets(s, toks, starts, limits):
    raw = s.encode("utf-8")
    assert starts.dtype == np.uint32 and limits.dtype == np.uint32
    assert [raw[a:b].decode("utf-8") for a, b in zip(starts, limits)] == list(toks)


# ---------------------------------------------------------------- Jieba against PyPI's jieba

@pytest.fixture(scope="module")
def jieba_files(tmp_path_factory):
    """jieba's own dictionary (frequencies made distinct, so that no two routes tie) and HMM,
    written in cppjieba's formats; the reference jieba.Tokenizer loads the same dictionary."""
    jieba = pytest.importorskip("jieba")
    from jieba.finalseg import prob_emit, prob_start, prob_trans
    d = tmp_path_factory.mktemp("jieba")
    rng = random.Random(0)
    words = []
    with open(os.path.join(os.path.dirname(jieba.__file__), "dict.txt"), encoding="utf-8") as f, \
            open(d / "dict.utf8", "w", encoding="utf-8") as g:
        for line in f:
            w, freq, tag = line.split()
            freq = int(freq) * 1000 + rng.randrange(1000)
            words.append((w, freq))
            g.write(f"{w} {freq} {tag}\n")
    with open(d / "hmm.utf8", "w", encoding="utf-8") as g:
        g.write("# B E M S\n" + " ".join(str(prob_start.P.get(s, MIN)) for s in "BEMS") + "\n")
        for a in "BEMS":
            g.write(" ".join(str(prob_trans.P[a].get(b, MIN)) for b in "BEMS") + "\n")
        for a in "BEMS":
            g.write(",".join(f"{c}:{p}" for c, p in prob_emit.P[a].items() if c not in ",:") + "\n")
    ref = jieba.Tokenizer(dictionary=str(d / "dict.utf8"))
    ref.tmp_dir = str(d)
    ref.initialize()
    # Characters every HMM state can emit: elsewhere Viterbi compares -3.14e100 with itself.
    chars = sorted(c for c in prob_emit.P["B"] if all(c in prob_emit.P[s] for s in "EMS"))
    ok = set(chars)
    common = [w for w, f in words if f > 50000 and all(c in ok for c in w)]
    sentences = []
    for _ in range(300):
        parts = []
        for _ in range(rng.randrange(3, 12)):
            r = rng.random()
            parts.append(rng.choice(common) if r < 0.8 else rng.choice(chars) if r < 0.95 else "，")
        sentences.append("".join(parts))
    return str(d / "hmm.utf8"), str(d / "dict.utf8"), ref, sentences


def _hmm_ref(s):
    from jieba import finalseg
    out = []
    for i, blk in enumerate(s.split("，")):
        out += (["，"] if i else []) + list(finalseg.cut(blk))
    return out


def _mix_ref(ref, s):
    """cppjieba's MIX (MindSpore's): jieba's MP route, each run of single characters re-cut by
    jieba's HMM. (jieba's own cut(HMM=True) differs in one case: a run that is itself a
    dictionary word comes out as single characters there.)"""
    out, run = [], ""
    for w in list(ref.cut(s, HMM=False)) + [None]:
        if w is not None and len(w) == 1 and w != "，":
            run += w
            continue
        if run:
            out += _hmm_ref(run)
            run = ""
        if w is not None:
            out.append(w)
    return out


def test_jieba_matches_pypi_jieba(jieba_files):
    hmm, mp, ref, sentences = jieba_files
    toks = {m: text.JiebaTokenizer(hmm, mp, m, with_offsets=True) for m in text.JiebaMode}
    for s in sentences:
        expect = {text.JiebaMode.MP: list(ref.cut(s, HMM=False)), text.JiebaMode.HMM: _hmm_ref(s),
                  text.JiebaMode.MIX: _mix_ref(ref, s)}
        for mode, tok in toks.items():
            got, starts, limits = tok(s)
            assert got.tolist() == expect[mode], (mode, s)
            _check_offsets(s, got, starts, limits)


def test_jieba_in_a_pipeline(jieba_files):
    hmm, mp, ref, sentences = jieba_files
    d = ds.NumpySlicesDataset({"text": np.array(sentences[:20])}, shuffle=False)
    d = d.map(operations=text.JiebaTokenizer(hmm, mp, text.JiebaMode.MP, with_offsets=True),
              input_columns=["text"], output_columns=["token", "offsets_start", "offsets_limit"])
    rows = list(d.create_dict_iterator(num_epochs=1, output_numpy=True))
    assert [r["token"].tolist() for r in rows] == [list(ref.cut(s, HMM=False)) for s in sentences[:20]]
    for s, r in zip(sentences, rows):
        _check_offsets(s, r["token"], r["offsets_start"], r["offsets_limit"])


# ---------------------------------------------------------------- Jieba against brute force

def _tiny_weights(extra=()):
    freqs = {}
    with open(TINY_DICT, encoding="utf-8") as f:
        for line in f:
            w, fr, _ = line.split()
            freqs[w] = int(fr)
    total = sum(freqs.values())
    weights = {w: math.log(fr / total) for w, fr in freqs.items()}
    ordered = sorted(weights.values())
    for w, fr in extra:  # add_word: log(freq / total), or the median weight for None
        weights[w] = math.log(fr / total) if fr else ordered[len(ordered) // 2]
    return weights, ordered[0]


def _best_route_score(s, weights, least):
    """The best score over every segmentation of s, by enumeration (2^(n-1) cut sets)."""
    best = -math.inf
    for cuts in itertools.product([False, True], repeat=len(s) - 1):
        words, start = [], 0
        for i, c in enumerate(cuts, 1):
            if c:
                words.append(s[start:i])
                start = i
        words.append(s[start:])
        if all(w in weights or len(w) == 1 for w in words):
            best = max(best, sum(weights.get(w, least) for w in words))
    return best


def _route_score(words, weights, least):
    assert all(w in weights or len(w) == 1 for w in words), words
    return sum(weights.get(w, least) for w in words)


@pytest.mark.parametrize("added", [(), (("园里散", 400), ("好天", None))])
def test_jieba_mp_is_the_best_route(added):
    weights, least = _tiny_weights(added)
    tok = text.JiebaTokenizer(TINY_HMM, TINY_DICT, text.JiebaMode.MP)
    for w, f in added:
        tok.add_word(w, f)
    rng = random.Random(1)
    alphabet = "今天气很好我们去公园散步明年猫"  # 猫 is in no word of the dictionary
    for _ in range(150):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 11)))
        got = tok(s).tolist()
        assert "".join(got) == s
        assert _route_score(got, weights, least) == pytest.approx(_best_route_score(s, weights, least),
                                                                   rel=1e-12), s


def _tiny_hmm():
    with open(TINY_HMM, encoding="utf-8") as f:
        lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    start = [float(x) for x in lines[0].split()]
    trans = [[float(x) for x in ln.split()] for ln in lines[1:5]]
    emit = [{kv.split(":")[0]: float(kv.split(":")[1]) for kv in ln.split(",")} for ln in lines[5:9]]
    return start, trans, emit


def _viterbi_brute(s, start, trans, emit):
    """The best B/E/M/S sequence (ending in E or S) by enumeration, cut into words."""
    best, best_seq = -math.inf, None
    for seq in itertools.product(range(4), repeat=len(s)):
        if seq[-1] not in (1, 3):
            continue
        v = start[seq[0]] + emit[seq[0]].get(s[0], MIN)
        for i in range(1, len(s)):
            v += trans[seq[i - 1]][seq[i]] + emit[seq[i]].get(s[i], MIN)
        if v > best:
            best, best_seq = v, seq
    words, cur = [], ""
    for c, st in zip(s, best_seq):
        cur += c
        if st in (1, 3):
            words.append(cur)
            cur = ""
    return words


def test_jieba_hmm_is_viterbi():
    start, trans, emit = _tiny_hmm()
    tok = text.JiebaTokenizer(TINY_HMM, TINY_DICT, text.JiebaMode.HMM)
    rng = random.Random(2)
    alphabet = "今天气很好我们去公园散步明年猫狗"
    for _ in range(80):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 7)))
        assert tok(s).tolist() == _viterbi_brute(s, start, trans, emit), s


def test_jieba_ascii_separators_and_mix():
    hmm = text.JiebaTokenizer(TINY_HMM, TINY_DICT, text.JiebaMode.HMM, with_offsets=True)
    s = "我们abc12去3.5公园，好 x!"
    toks, starts, limits = hmm(s)
    # letters (then letters/digits), numbers (digits and '.'), and each other ASCII character
    # are words of their own; '，' and ' ' are separators, tokens of their own.
    start, trans, emit = _tiny_hmm()
    vit = lambda run: _viterbi_brute(run, start, trans, emit)  # noqa: E731
    assert toks.tolist() == (vit("我们") + ["abc12"] + vit("去") + ["3.5"] + vit("公园")
                             + ["，", "好", " ", "x", "!"])
    _check_offsets(s, toks, starts, limits)
    # MIX keeps the MP route's words and re-cuts only runs of single characters with the HMM.
    mix = text.JiebaTokenizer(TINY_HMM, TINY_DICT)
    mp = text.JiebaTokenizer(TINY_HMM, TINY_DICT, text.JiebaMode.MP)
    for s in ["我们去公园散步", "今天天气很好", "猫狗去公园", "明年我们去"]:
        expect, run = [], ""
        for w in mp(s).tolist() + [None]:
            if w is not None and len(w) == 1:
                run += w
                continue
            if run:
                expect += _viterbi_brute(run, start, trans, emit)
                run = ""
            if w is not None:
                expect.append(w)
        assert mix(s).tolist() == expect, s
    assert mix("").tolist() == [""]


def test_jieba_add_dict(tmp_path):
    weights, least = _tiny_weights([("狗猫", 5000), ("猫狗", None)])
    a = text.JiebaTokenizer(TINY_HMM, TINY_DICT, text.JiebaMode.MP)
    a.add_dict({"狗猫": 5000, "猫狗": None})
    p = tmp_path / "user.txt"
    p.write_text("\ufeff狗猫 5000\n\n猫狗\n", encoding="utf-8")
    b = text.JiebaTokenizer(TINY_HMM, TINY_DICT, text.JiebaMode.MP)
    b.add_dict(str(p))
    for s in ["猫狗猫狗", "狗猫狗去公园", "我们猫狗"]:
        assert a(s).tolist() == b(s).tolist()
        assert _route_score(a(s).tolist(), weights, least) == pytest.approx(
            _best_route_score(s, weights, least), rel=1e-12)
    assert "猫狗" in a("我们猫狗").tolist()


def test_jieba_errors(tmp_path):
    with pytest.raises(ValueError, match="mp_path .* is not a file"):
        text.JiebaTokenizer(TINY_HMM, str(tmp_path / "missing.utf8"))
    with pytest.raises(TypeError, match="mode must be a JiebaMode"):
        text.JiebaTokenizer(TINY_HMM, TINY_DICT, "mp")
    bad = tmp_path / "bad.utf8"
    bad.write_text("今天 10 t\n天气 x n\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.utf8:2: 'x' is not a number"):
        text.JiebaTokenizer(TINY_HMM, str(bad))
    bad.write_text("今天 -3 t\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must be a positive number"):
        text.JiebaTokenizer(TINY_HMM, str(bad))
    bad.write_bytes(b"\xff\xfe 10 t\n")
    with pytest.raises(ValueError, match="not valid UTF-8"):
        text.JiebaTokenizer(TINY_HMM, str(bad))
    with open(TINY_HMM, encoding="utf-8") as f:
        lines = f.read().splitlines()
    bad.write_text("\n".join(lines[:6]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="ends before its transition"):
        text.JiebaTokenizer(str(bad), TINY_DICT)
    bad.write_text("\n".join(lines[:-1] + ["今-3.0"]) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="expected 'char:logprob'"):
        text.JiebaTokenizer(str(bad), TINY_DICT)
    tok = text.JiebaTokenizer(TINY_HMM, TINY_DICT)
    with pytest.raises(ValueError, match="freq must be an int >= 0"):
        tok.add_word("猫", -1)
    with pytest.raises(ValueError, match="must be a scalar string"):
        tok(np.array(["今天", "天气"]))
    with pytest.raises(TypeError, match="must be a string"):
        tok(np.array([1, 2]))


# ---------------------------------------------------------------- UnicodeScriptTokenizer

def _unicode_table(name, wanted=None):
    path = os.path.join("/usr/share/unicode", name)
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing (Debian's unicode-data)")
    table = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#")[0].strip()
            if not line:
                continue
            rng, prop = (x.strip() for x in line.split(";"))
            if wanted and prop != wanted:
                continue
            lo, _, hi = rng.partition("..")
            for cp in range(int(lo, 16), int(hi or lo, 16) + 1):
                table[cp] = prop
    return table


def test_unicode_script_tokenizer_against_scripts_txt():
    scripts = _unicode_table("Scripts.txt")
    spaces = _unicode_table("PropList.txt", "White_Space")

    def reference(s, keep_whitespace):
        toks, cur, last = [], "", None
        for ch in s:
            key = (scripts.get(ord(ch), "Unknown"), ord(ch) in spaces)
            if cur and key != last:
                if keep_whitespace or not last[1]:
                    toks.append(cur)
                cur = ""
            cur += ch
            last = key
        if cur and (keep_whitespace or not last[1]):
            toks.append(cur)
        return toks or [""]

    pool = ("abcXYZ" "αβγΩ" "жзк" "中文字" "ひらがな" "カタ" "한국" "مرحبا" "0123" ".,!?-'\"()" "\u0301\u0308"
            " \t\n\u3000\u00a0\u2003" "\u0e01\u0e02" "\U0001F600")
    rng = random.Random(3)
    for keep in (False, True):
        tok = text.UnicodeScriptTokenizer(keep_whitespace=keep, with_offsets=True)
        for _ in range(300):
            s = "".join(rng.choice(pool) for _ in range(rng.randrange(0, 16)))
            got, starts, limits = tok(s)
            assert got.tolist() == reference(s, keep), repr(s)
            if got.tolist() != [""]:
                _check_offsets(s, got, starts, limits)
    # TF Text's documented example
    assert text.UnicodeScriptTokenizer()("xy.,z de").tolist() == ["xy", ".,", "z", "de"]


def test_unicode_script_tokenizer_in_a_pipeline():
    d = ds.NumpySlicesDataset({"s": np.array(["Chinese中国 text", "Ünïcode 42"])}, shuffle=False)
    d = d.map(operations=text.UnicodeScriptTokenizer(), input_columns=["s"])
    assert [r[0].tolist() for r in d.create_tuple_iterator(num_epochs=1, output_numpy=True)] == \
        [["Chinese", "中国", "text"], ["Ünïcode", "42"]]
    with pytest.raises(TypeError, match="keep_whitespace must be a bool"):
        text.UnicodeScriptTokenizer(keep_whitespace=1)


# ---------------------------------------------------------------- SentencePiece

def _corpus(n, seed):
    rng = random.Random(seed)
    words = ("the quick brown fox jumps over lazy dog machine learning framework tokenizer data "
             "pipeline model train test sentence piece unigram byte pair encoding 中文 分词 测试").split()
    return [" ".join(rng.choice(words) for _ in range(rng.randrange(3, 12))) for _ in range(n)]


@pytest.mark.parametrize("model_type", list(text.SentencePieceModel))
def test_sentencepiece_vocab_from_dataset_matches_pypi(model_type):
    spm = pytest.importorskip("sentencepiece")
    train = _corpus(300, 4)
    d = ds.NumpySlicesDataset({"text": np.array(train)}, shuffle=False)
    size = {"unigram": 60, "bpe": 60, "char": 30, "word": 25}[model_type.value]
    vocab = text.SentencePieceVocab.from_dataset(d, ["text"], size, 1.0, model_type, {})
    ref = spm.SentencePieceProcessor(model_proto=vocab._model)
    assert ref.get_piece_size() == size
    as_str = text.SentencePieceTokenizer(vocab, text.SPieceTokenizerOutType.STRING)
    as_int = text.SentencePieceTokenizer(vocab, text.SPieceTokenizerOutType.INT)
    for s in _corpus(50, 5) + ["unseen wörds ünïcode", ""]:
        assert as_str(s).tolist() == ref.encode(s, out_type=str), s
        ids = as_int(s)
        assert ids.dtype == np.int32 and ids.tolist() == ref.encode(s), s


def test_sentencepiece_model_trained_by_pypi_and_save_model(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(_corpus(300, 6)), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "ref"),
                                   vocab_size=50, model_type="bpe", minloglevel=2)
    ref = spm.SentencePieceProcessor(model_file=str(tmp_path / "ref.model"))
    tok = text.SentencePieceTokenizer(str(tmp_path / "ref.model"))
    d = ds.NumpySlicesDataset({"s": np.array(_corpus(20, 7))}, shuffle=False)
    d = d.map(operations=tok, input_columns=["s"])
    got = [r[0].tolist() for r in d.create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert got == [ref.encode(s, out_type=str) for s in _corpus(20, 7)]
    # Our trainer on the same file, saved with save_model, loads in the reference library.
    vocab = text.SentencePieceVocab.from_file([str(corpus)], 50, 1.0, text.SentencePieceModel.BPE,
                                              {"split_digits": True})
    text.SentencePieceVocab.save_model(vocab, str(tmp_path), "ours.model")
    ours = spm.SentencePieceProcessor(model_file=str(tmp_path / "ours.model"))
    assert ours.get_piece_size() == 50 and ours.encode("machine learning 123", out_type=str) == \
        text.SentencePieceTokenizer(str(tmp_path / "ours.model"))("machine learning 123").tolist()


def test_sentencepiece_errors(tmp_path):
    bad = tmp_path / "bad.model"
    bad.write_bytes(b"\x0a\xff\xff\xff\xff\x0f not a model")
    with pytest.raises(ValueError, match="cannot load the model file"):
        text.SentencePieceTokenizer(str(bad))
    with pytest.raises(ValueError, match="is not a file"):
        text.SentencePieceTokenizer(str(tmp_path / "missing.model"))
    with pytest.raises(ValueError, match="not a valid SentencePiece model"):
        text.SentencePieceVocab(b"garbage")
    d = ds.NumpySlicesDataset({"t": np.array(["a b", "c d"])}, shuffle=False)
    with pytest.raises(ValueError, match="Vocabulary size too high"):
        text.SentencePieceVocab.from_dataset(d, ["t"], 5000, 1.0, text.SentencePieceModel.UNIGRAM, {})
    with pytest.raises(ValueError, match="column 'x' is not among"):
        text.SentencePieceVocab.from_dataset(d, ["x"], 10, 1.0, text.SentencePieceModel.UNIGRAM, {})
    with pytest.raises(TypeError, match="model_type must be a SentencePieceModel"):
        text.SentencePieceVocab.from_dataset(d, ["t"], 10, 1.0, "bpe", {})


def test_jieba_loaders_survive_corrupt_files(tmp_path):
    """Mutated dictionaries and HMM files load or raise ValueError; they never crash."""
    rng = random.Random(9)
    with open(TINY_DICT, "rb") as f:
        dict_bytes = f.read()
    with open(TINY_HMM, "rb") as f:
        hmm_bytes = f.read()
    for i in range(150):
        for which, data in (("dict", dict_bytes), ("hmm", hmm_bytes)):
            b = bytearray(data)
            for _ in range(rng.randrange(1, 6)):
                op = rng.randrange(3)
                pos = rng.randrange(len(b))
                if op == 0:
                    b[pos] = rng.randrange(256)
                elif op == 1:
                    del b[pos:pos + rng.randrange(1, 20)]
                else:
                    b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
            p = tmp_path / f"{which}{i}.utf8"
            p.write_bytes(bytes(b))
            args = (TINY_HMM, str(p)) if which == "dict" else (str(p), TINY_DICT)
            try:
                tok = text.JiebaTokenizer(*args)
            except ValueError:
                continue
            assert "".join(tok("今天天气很好我们去公园").tolist()) == "今天天气很好我们去公园"

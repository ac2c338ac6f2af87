"""RegexTokenizer, RegexReplace and WhitespaceTokenizer on ICU, as MindSpore's: ICU's pattern
syntax (Unicode properties, $n replacements), UTF-8 byte offsets, the White_Space property.
References: Python's re where the two syntaxes agree, unicodedata for the properties."""
import random
import re
import unicodedata

import numpy as np
import pytest

import mycel.dataset as ds
import mycel.dataset.text as text

# ICU's White_Space property (Unicode's PropList.txt), which differs from str.isspace: the
# information separators U+001C..U+001F are spaces to Python, not to ICU.
WHITE_SPACE = set(map(chr, [*range(0x9, 0xE), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
                            0x2028, 0x2029, 0x202F, 0x205F, 0x3000]))
ALPHABET = "ab1 ,.;-_\t\né漢字\u3000\u2003\x1c!?"


def _reference_split(delim, keep, s):
    """MindSpore's rule with Python's re: text between delimiters, kept delimiters; byte offsets."""
    toks, pos = [], 0
    for m in re.finditer(delim, s):
        if m.start() > pos:
            toks.append((s[pos:m.start()], pos))
        if keep and m.group() and re.fullmatch(keep, m.group()):
            toks.append((m.group(), m.start()))
        pos = m.end()
    if pos < len(s):
        toks.append((s[pos:], pos))
    toks = toks or [("", 0)]
    b = lambda i: len(s[:i].encode())  # noqa: E731
    return [(t, b(i), b(i) + len(t.encode())) for t, i in toks]


def _triples(out):
    return list(zip(out[0].tolist(), out[1].tolist(), out[2].tolist()))


@pytest.mark.parametrize("delim, keep", [(r"\s+", ""), (r"[,.;]", r","), (r"\s+|[,.;]+", r"[.;]+"),
                                         (r"[0-9]", r"[0-9]")])
def test_regex_tokenizer_matches_re_where_syntaxes_agree(delim, keep):
    rng = random.Random(0)
    tok = text.RegexTokenizer(delim, keep_delim_pattern=keep, with_offsets=True)
    for _ in range(200):
        # Not U+001C: Python's \s matches it, ICU's (White_Space) does not.
        s = "".join(rng.choice(ALPHABET.replace("\x1c", "")) for _ in range(rng.randint(0, 14)))
        assert _triples(tok(s)) == _reference_split(delim, keep, s), repr(s)


def test_regex_tokenizer_unicode_properties():
    s = "héllo, wörld!! 漢字¿ok?"
    got = text.RegexTokenizer(r"\p{P}+", keep_delim_pattern=r"\p{P}+")(s).tolist()
    # Reference: runs of characters whose Unicode category starts with P.
    runs, cur, cur_p = [], "", None
    for ch in s:
        p = unicodedata.category(ch).startswith("P")
        if cur and p != cur_p:
            runs.append(cur)
            cur = ""
        cur, cur_p = cur + ch, p
    runs.append(cur)
    assert got == runs
    han = text.RegexTokenizer(r"\p{Han}+", keep_delim_pattern=r"\p{Han}+")("ab漢字cd")
    assert han.tolist() == ["ab", "漢字", "cd"]


def test_regex_replace_icu_replacement_syntax_and_shape():
    a = np.array([["ab@cd x", "no"], ["e@f", "g@h y@z"]])
    got = text.RegexReplace(r"(\w+)@(\w+)", "$2 at $1")(a)
    want = np.vectorize(lambda s: re.sub(r"(\w+)@(\w+)", r"\2 at \1", s))(a)
    assert got.shape == (2, 2) and got.tolist() == want.tolist()
    assert text.RegexReplace(r"(?<w>\d)", "<${w}>", replace_all=False)("a1b2").tolist() == "a<1>b2"
    assert text.RegexReplace(r"\p{Lu}", "_")("ÀbÇd").tolist() == "_b_d"


def test_whitespace_tokenizer_uses_icu_white_space():
    rng = random.Random(1)
    tok = text.WhitespaceTokenizer(with_offsets=True)
    for _ in range(200):
        s = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 12)))
        words = re.findall("[^" + re.escape("".join(sorted(WHITE_SPACE))) + "]+", s)
        assert tok(s)[0].tolist() == (words or [""]), repr(s)
    assert tok("a\x1cb \u3000c")[0].tolist() == ["a\x1cb", "c"]
    assert _triples(tok("  wörld\t")) == [("wörld", 2, 8)]


def test_bad_patterns_and_inputs_are_clear_errors():
    with pytest.raises(ValueError, match=r"RegexTokenizer: delim_pattern '\(' is not a valid ICU"):
        text.RegexTokenizer("(")
    with pytest.raises(ValueError, match="RegexReplace: pattern"):
        text.RegexReplace("[a-", "x")
    with pytest.raises(ValueError, match=r"RegexReplace: replacing with '\$3' failed"):
        text.RegexReplace("(a)", "$3")("aa")
    with pytest.raises(TypeError, match="RegexTokenizer: delim_pattern must be a str"):
        text.RegexTokenizer(3)
    with pytest.raises(TypeError, match="RegexReplace: the input must hold strings"):
        text.RegexReplace("a", "b")(np.array([1, 2]))
    with pytest.raises(ValueError, match="RegexTokenizer: the input must be a scalar string"):
        text.RegexTokenizer(" ")(np.array(["a b", "c"]))


def test_in_a_pipeline_on_two_workers():
    rows = [f"w{i} {i * 7}, x{i}" for i in range(300)]
    data = ds.NumpySlicesDataset({"s": rows}, shuffle=False)
    data = data.map([text.RegexReplace(r"\d+", "<n>"), text.RegexTokenizer(r"[ ,]+")],
                    input_columns="s", num_parallel_workers=2)
    got = [r[0].tolist() for r in data.create_tuple_iterator(output_numpy=True)]
    assert got == [re.split(r"[ ,]+", re.sub(r"\d+", "<n>", s)) for s in rows]

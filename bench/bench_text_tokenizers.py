"""Text tokenizer throughput (not a test): run `python bench/bench_text_tokenizers.py`.

(a) JiebaTokenizer (C++, MP and MIX) against PyPI jieba's cut (HMM=False / True) on the same
    dictionary (jieba's own, written in cppjieba's format) and the same sentences, sentences/s,
    each called eagerly one sentence at a time, alternating A B A B, median of --repeats runs.
(b) The same through a dataset pipeline (map over a NumpySlicesDataset, 1 and 2 workers).
(c) SentencePieceTokenizer against the sentencepiece package encoding the same model.
The peers are Python packages without OpenMP, so they run in this process.
"""
import argparse
import os
import random
import statistics
import tempfile
import time

import numpy as np

import mycel.dataset as ds
import mycel.dataset.text as text


def _jieba_files(d):
    import jieba
    from jieba.finalseg import prob_emit, prob_start, prob_trans
    words = []
    with open(os.path.join(os.path.dirname(jieba.__file__), "dict.txt"), encoding="utf-8") as f, \
            open(os.path.join(d, "dict.utf8"), "w", encoding="utf-8") as g:
        for line in f:
            w, freq, tag = line.split()
            words.append((w, int(freq)))
            g.write(f"{w} {freq} {tag}\n")
    with open(os.path.join(d, "hmm.utf8"), "w", encoding="utf-8") as g:
        g.write(" ".join(str(prob_start.P.get(s, -3.14e100)) for s in "BEMS") + "\n")
        for a in "BEMS":
            g.write(" ".join(str(prob_trans.P[a].get(b, -3.14e100)) for b in "BEMS") + "\n")
        for a in "BEMS":
            g.write(",".join(f"{c}:{p}" for c, p in prob_emit.P[a].items() if c not in ",:") + "\n")
    return os.path.join(d, "hmm.utf8"), os.path.join(d, "dict.utf8"), words


def _time(fn, items, repeats):
    runs = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(items)
        runs.append(time.perf_counter() - t)
    return statistics.median(runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sentences", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    import jieba
    rng = random.Random(0)
    with tempfile.TemporaryDirectory() as d:
        hmm, mp, words = _jieba_files(d)
        common = [w for w, f in words if f > 1000]
        sents = ["".join(rng.choice(common) for _ in range(rng.randrange(5, 20))) for _ in range(args.sentences)]
        ref = jieba.Tokenizer(dictionary=mp)
        ref.tmp_dir = d
        ref.initialize()
        print(f"(a) Jieba, {len(sents)} sentences, eager calls (sentences/s, median of {args.repeats})")
        for mode, hmm_flag in ((text.JiebaMode.MP, False), (text.JiebaMode.MIX, True)):
            tok = text.JiebaTokenizer(hmm, mp, mode)
            ours = theirs = None
            for _ in range(2):  # alternate
                ours = _time(lambda s: [tok(x) for x in s], sents, args.repeats)
                theirs = _time(lambda s: [list(ref.cut(x, HMM=hmm_flag)) for x in s], sents, args.repeats)
            print(f"    {mode.name:4s}  mycel {len(sents) / ours:9.0f}   jieba {len(sents) / theirs:9.0f}"
                  f"   ratio {theirs / ours:5.2f}x")
        print("(b) Jieba MIX in a pipeline (sentences/s)")
        for workers in (1, 2):
            def run(s, workers=workers):
                data = ds.NumpySlicesDataset({"t": np.array(s)}, shuffle=False)
                data = data.map(text.JiebaTokenizer(hmm, mp), input_columns="t", num_parallel_workers=workers)
                for _ in data.create_tuple_iterator(num_epochs=1, output_numpy=True):
                    pass
            print(f"    {workers} worker(s): {len(sents) / _time(run, sents, args.repeats):9.0f}")
    import sentencepiece as spm
    lines = [" ".join(rng.choice("the quick brown fox jumps over lazy dog data model train".split())
                      for _ in range(rng.randrange(5, 20))) for _ in range(args.sentences)]
    vocab = text.SentencePieceVocab.from_dataset(ds.NumpySlicesDataset({"t": np.array(lines)}, shuffle=False),
                                                 ["t"], 40, 1.0, text.SentencePieceModel.UNIGRAM, {})
    tok = text.SentencePieceTokenizer(vocab)
    ref = spm.SentencePieceProcessor(model_proto=vocab._model)
    ours = _time(lambda s: [tok(x) for x in s], lines, args.repeats)
    theirs = _time(lambda s: [ref.encode(x, out_type=str) for x in s], lines, args.repeats)
    print(f"(c) SentencePiece, eager calls: mycel {len(lines) / ours:9.0f}/s   sentencepiece "
          f"{len(lines) / theirs:9.0f}/s   ratio {theirs / ours:5.2f}x")


if __name__ == "__main__":
    main()

"""BLEU (MindSpore's metrics.BleuScore, Papineni et al. 2002): corpus-level modified n-gram
precision with clipped counts and a brevity penalty."""
import math
from collections import Counter

import numpy as np

from mycel.train.metrics.metric import Metric


def _ngrams(tokens, n_max):
    """Counter of every n-gram (as a tuple) of tokens for n = 1 .. n_max."""
    counts = Counter()
    for n in range(1, n_max + 1):
        for i in range(len(tokens) - n + 1):
            counts[tuple(tokens[i:i + n])] += 1
    return counts


class BleuScore(Metric):
    """update(candidate_corpus, reference_corpus): candidates are token lists, each with a list of
    reference token lists. Per n-gram order the candidate counts are clipped by the largest count
    in any of its references; the reference length is the one closest to the candidate's.
    eval() = BP * exp(mean_n log p_n), BP = 1 if candidates are longer than references, else
    exp(1 - r / c); smooth adds 1 to every numerator and denominator. 0 when some p_n is 0."""

    def __init__(self, n_gram=4, smooth=False):
        if isinstance(n_gram, bool) or not isinstance(n_gram, int) or not 1 <= n_gram <= 4:
            raise ValueError(f"BleuScore: n_gram must be an int in [1, 4], got {n_gram!r}")
        self.n_gram = n_gram
        self.smooth = bool(smooth)
        super().__init__()

    def clear(self):
        self._numerator = np.zeros(self.n_gram)
        self._denominator = np.zeros(self.n_gram)
        self._candidate_len = 0.0
        self._reference_len = 0.0

    def update(self, *inputs):
        if len(inputs) != 2:
            raise ValueError(f"BleuScore.update takes (candidate_corpus, reference_corpus), got {len(inputs)} inputs")
        candidates, references = inputs
        if len(candidates) != len(references):
            raise ValueError(f"BleuScore.update: candidate_corpus ({len(candidates)}) and reference_corpus "
                             f"({len(references)}) must have the same length")
        for cand, refs in zip(candidates, references):
            cand = list(cand)
            if not refs:
                raise ValueError("BleuScore.update: every candidate needs at least one reference")
            self._candidate_len += len(cand)
            self._reference_len += min((len(r) for r in refs), key=lambda n: abs(n - len(cand)))
            allowed = Counter()
            for r in refs:
                allowed |= _ngrams(list(r), self.n_gram)  # max count over the references
            cand_counts = _ngrams(cand, self.n_gram)
            for gram, count in (cand_counts & allowed).items():
                self._numerator[len(gram) - 1] += count
            for n in range(1, self.n_gram + 1):
                self._denominator[n - 1] += max(len(cand) - n + 1, 0)

    def eval(self):
        if self._candidate_len == 0:
            raise RuntimeError("BleuScore.eval: no candidates; call update first")
        if self.smooth:
            precision = (self._numerator + 1) / (self._denominator + 1)
        else:
            if self._numerator.min() == 0:
                return 0.0
            precision = self._numerator / self._denominator
        log_mean = float(np.mean(np.log(precision)))
        c, r = self._candidate_len, self._reference_len
        penalty = 1.0 if c > r else math.exp(1 - r / c)
        return penalty * math.exp(log_mean)

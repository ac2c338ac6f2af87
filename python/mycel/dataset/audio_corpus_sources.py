"""Audio corpora with MindSpore's signatures: LibriTTSDataset, GTZANDataset and CMUArcticDataset,
over PCM WAV files in each corpus's folder layout. The transcript and list files are parsed when
the dataset is built (a bad file fails at once, naming it); each WAV file is read when its row is
drawn, and must have the corpus's sample rate (24000, 22050 and 16000 Hz), as MindSpore checks."""
import os
import re

import numpy as np

from mycel.dataset.audio_sources import read_wav
from mycel.dataset.detection_sources import _LazyRows
from mycel.dataset.engine import SourceDataset, _E
from mycel.dataset.sources import _check_common, _check_dir, _check_type, _check_usage, _engine_args

__all__ = ["LibriTTSDataset", "GTZANDataset", "CMUArcticDataset"]


def _wav(path, owner, rate):
    wav, got = read_wav(path, owner)
    if got != rate:
        raise ValueError(f"{owner}: '{path}' has sample rate {got} Hz; the corpus's files are {rate} Hz")
    return wav, np.array(rate, np.uint32)


def _text(path, owner):
    if not os.path.isfile(path):
        raise ValueError(f"{owner}: {path} does not exist")
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return f.read().splitlines()
    except UnicodeDecodeError as e:
        raise ValueError(f"{owner}: '{path}' is not UTF-8 text ({e})") from None


def _source(owner, records, row, columns, num_samples, num_parallel_workers, shuffle, sampler, num_shards,
            shard_id):
    if not records:
        raise ValueError(f"{owner}: no audio files found (check dataset_dir and usage/name)")
    return dict(source_name=_E.py_source(_LazyRows(owner, records, row), columns), source_kwargs=None,
                **_engine_args(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id))


# ---- LibriTTS ---------------------------------------------------------------------------------

_LIBRITTS_USAGES = ("dev-clean", "dev-other", "test-clean", "test-other", "train-clean-100",
                    "train-clean-360", "train-other-500")
_LIBRITTS_ID = re.compile(r"^([0-9]+)_([0-9]+)_[^_]+_[^_]+$")


class LibriTTSDataset(SourceDataset):
    """LibriTTS: dataset_dir/<usage>/<speaker>/<chapter>/ holding <speaker>_<chapter>.trans.tsv
    ('<utterance id>\t<original text>\t<normalized text>' lines) and <utterance id>.wav
    (24 kHz). usage: dev-clean, dev-other, test-clean, test-other, train-clean-100,
    train-clean-360, train-other-500 or all (None: every one present, in that order). Columns
    waveform (1, samples) float32, sample_rate uint32, original_text, normalized_text (str),
    speaker_id, chapter_id (uint32) and utterance_id (str); speakers and chapters in name order."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "LibriTTSDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        usage = "all" if usage is None else usage
        _check_type(usage, "usage", str)
        if usage not in _LIBRITTS_USAGES + ("all",):
            raise ValueError(f"Input usage is not within the valid set of {list(_LIBRITTS_USAGES) + ['all']}.")
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        self.usage = usage
        records = []
        for part in (_LIBRITTS_USAGES if usage == "all" else (usage,)):
            root = os.path.join(self.dataset_dir, part)
            if not os.path.isdir(root):
                if usage != "all":
                    raise ValueError(f"{owner}: the folder {root} does not exist (usage '{usage}')")
                continue
            for folder, dirs, files in sorted(os.walk(root)):
                dirs.sort()
                for name in sorted(f for f in files if f.endswith(".trans.tsv")):
                    records += self._transcripts(os.path.join(folder, name), owner)

        def row(rec):
            wav, rate = _wav(rec[0], owner, 24000)
            return (wav, rate, np.array(rec[1]), np.array(rec[2]), np.array(rec[3], np.uint32),
                    np.array(rec[4], np.uint32), np.array(rec[5]))

        super().__init__(**_source(owner, records, row, ["waveform", "sample_rate", "original_text",
                                                         "normalized_text", "speaker_id", "chapter_id",
                                                         "utterance_id"],
                                   num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id))

    @staticmethod
    def _transcripts(path, owner):
        out = []
        for k, line in enumerate(_text(path, owner), 1):
            if not line:
                continue
            f = line.split("\t")
            m = _LIBRITTS_ID.match(f[0])
            if len(f) != 3 or not m:
                raise ValueError(f"{owner}: '{path}':{k}: expected '<speaker>_<chapter>_<n>_<n>\\t<original>"
                                 f"\\t<normalized>', got {line[:80]!r}")
            speaker, chapter = int(m.group(1)), int(m.group(2))
            if speaker > 0xFFFFFFFF or chapter > 0xFFFFFFFF:
                raise ValueError(f"{owner}: '{path}':{k}: speaker or chapter id past 2^32 - 1")
            wav = os.path.join(os.path.dirname(path), f[0] + ".wav")
            out.append((wav, f[1], f[2], speaker, chapter, f[0]))
        return out


# ---- GTZAN ------------------------------------------------------------------------------------

_GENRES = ("blues", "classical", "country", "disco", "hiphop", "jazz", "metal", "pop", "reggae", "rock")
# the fault-filtered GTZAN split (Kereliuk, Sturm and Larsen 2015), as torchaudio and MindSpore use it:
# per genre, the track numbers of each part as ranges
_SPLIT = {
    "test": {
        "blues": "12-28 61-72 98-99", "classical": "11-29 34-41 49 77-79",
        "country": "30-40 43-44 46-48 50-51 53-64",
        "disco": "1 21 58 62-66 69 76-88 91-94 96-97 99", "hiphop": "0 26-27 30 40 43-45 51-54 62-75 99",
        "jazz": "73-99", "metal": "12-15 22-23 25-33 38-39 67 70 73-75 78 83 85 87-88",
        "pop": "0-1 13-14 43 63-66 69-79 82 88-96", "reggae": "34-40 46-48 52-53 64-68 71 79 82-84 87-90",
        "rock": "10-15 27-37 39-48 86-90"},
    "train": {
        "blues": "29-49 73-97", "classical": "30-33 43-48 50-67 80-99", "country": "19-26 28-29 65-99",
        "disco": "5 15-20 22-37 39-45 47 49 53-54 56-57 59 61 70 73-74 89",
        "hiphop": "2-25 28-29 31-38 41-42 55-61 77-80", "jazz": "0-1 11-24 41 47-72",
        "metal": "2-3 5 21 24 35 46-57 59-66 69 71-72 79-80 84 86 89-99",
        "pop": "2-9 11-12 16-20 23-29 31-36 38-42 44 46 49-50 80 97-99",
        "reggae": "0-2 4 6 9 11-12 14-32 42-45 49-51 54-60 63 69", "rock": "0-9 16-26 57-70 91-99"},
    "valid": {
        "blues": "0-11 50-60", "classical": "0-10 68-76", "country": "0-7 9-18 27 41-42 45 49",
        "disco": "0 2-4 6-14 46 48 52 67-68 72 75 90 95", "hiphop": "81-98", "jazz": "2-10 25-32",
        "metal": "0-1 6-11 16-20 36-37 68 76-77 81-82", "pop": "10 53 55 58-62 81 83-86",
        "reggae": "61-62 70 72 74 76-78 85 92-99", "rock": "38 49-56 71-85"},
}

def _tracks(ranges):
    out = []
    for part in ranges.split():
        lo, _, hi = part.partition("-")
        out += range(int(lo), int(hi or lo) + 1)
    return out


class GTZANDataset(SourceDataset):
    """GTZAN music genres: dataset_dir/<genre>/<genre>.000NN.wav (22050 Hz) for the ten genres.
    usage train, valid or test: the fault-filtered split (443 / 197 / 290 tracks; listed tracks
    that are absent are skipped); all (None): every <genre>.<n>.wav present, in name order.
    Columns waveform (channels, samples) float32, sample_rate uint32 and label, the genre (str)."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "GTZANDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        usage = _check_usage(usage, ("train", "valid", "test", "all"))
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        self.usage = usage
        records = []
        for genre in _GENRES:
            folder = os.path.join(self.dataset_dir, genre)
            if usage == "all":
                if os.path.isdir(folder):
                    records += [(os.path.join(folder, f), genre) for f in sorted(os.listdir(folder))
                                if f.endswith(".wav") and "." in f[:-4]]
                continue
            for n in _tracks(_SPLIT[usage][genre]):
                path = os.path.join(folder, f"{genre}.{n:05d}.wav")
                if os.path.isfile(path):
                    records.append((path, genre))

        def row(rec):
            wav, rate = _wav(rec[0], owner, 22050)
            return wav, rate, np.array(rec[1])

        super().__init__(**_source(owner, records, row, ["waveform", "sample_rate", "label"], num_samples,
                                   num_parallel_workers, shuffle, sampler, num_shards, shard_id))


# ---- CMU ARCTIC -------------------------------------------------------------------------------

_ARCTIC_NAMES = ("aew", "ahw", "aup", "awb", "axb", "bdl", "clb", "eey", "fem", "gka", "jmk", "ksp", "ljm",
                 "lnh", "rms", "rxr", "slp", "slt")
_ARCTIC_LINE = re.compile(r'^\(\s*(\S+)\s+"(.*)"\s*\)\s*$')


class CMUArcticDataset(SourceDataset):
    """CMU ARCTIC: dataset_dir/cmu_us_<name>_arctic/etc/txt.done.data ('( arctic_a0001 "text" )'
    lines) and .../wav/<utterance id>.wav (16 kHz). name: one of the 18 speakers (default
    'aew'). Columns waveform (channels, samples) float32, sample_rate uint32, transcript and
    utterance_id (str), in the order of txt.done.data."""

    def __init__(self, dataset_dir, name=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "CMUArcticDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        name = "aew" if name is None else name
        _check_type(name, "name", str)
        if name not in _ARCTIC_NAMES:
            raise ValueError(f"Input name is not within the valid set of {list(_ARCTIC_NAMES)}.")
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        self.name = name
        root = os.path.join(self.dataset_dir, f"cmu_us_{name}_arctic")
        listing = os.path.join(root, "etc", "txt.done.data")
        records = []
        for k, line in enumerate(_text(listing, owner), 1):
            if not line.strip():
                continue
            m = _ARCTIC_LINE.match(line)
            if not m:
                raise ValueError(f"{owner}: '{listing}':{k}: expected '( <utterance id> \"<text>\" )', "
                                 f"got {line[:80]!r}")
            records.append((os.path.join(root, "wav", m.group(1) + ".wav"), m.group(2), m.group(1)))

        def row(rec):
            wav, rate = _wav(rec[0], owner, 16000)
            return wav, rate, np.array(rec[1]), np.array(rec[2])

        super().__init__(**_source(owner, records, row, ["waveform", "sample_rate", "transcript", "utterance_id"],
                                   num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id))

"""Speech corpora with MindSpore's signatures: LibriSpeechDataset and TedliumDataset. Transcript and
segment files are parsed when the dataset is built (a bad or missing file fails at once, naming
it); audio is read when a row is drawn. LibriSpeech's audio is FLAC (mycel.dataset.flac);
TED-LIUM's is NIST SPHERE (.sph), read by read_sph here with every header field checked against
the file (tests/fuzz targets 'flac' and 'sph')."""
import os
import re

import numpy as np

from mycel.dataset.audio_sources import read_wav
from mycel.dataset.detection_sources import _LazyRows
from mycel.dataset.engine import SourceDataset
from mycel.dataset.flac import read_flac
from mycel.dataset.folder_sources import _choice, _need_dir
from mycel.dataset.image_sources import _source, _text_lines
from mycel.dataset.sources import _check_common, _check_dir

__all__ = ["LibriSpeechDataset", "TedliumDataset"]


def _build(self, owner, records, row, columns, num_samples, num_parallel_workers, shuffle, sampler,
           num_shards, shard_id):
    SourceDataset.__init__(self, **_source(owner, _LazyRows(owner, records, row), columns, num_samples,
                                           num_parallel_workers, shuffle, sampler, num_shards, shard_id))


# ---- LibriSpeech ------------------------------------------------------------------------------

_LIBRISPEECH_USAGES = ("dev-clean", "dev-other", "test-clean", "test-other", "train-clean-100",
                       "train-clean-360", "train-other-500")
_LIBRI_ID = re.compile(r"^([0-9]+)-([0-9]+)-([0-9]+)$")


def _libri_audio(folder, utterance, owner):
    """The audio file of an utterance: <id>.flac as the corpus ships, else <id>.wav (the corpus
    converted to PCM WAV)."""
    for ext in (".flac", ".wav"):
        path = os.path.join(folder, utterance + ext)
        if os.path.isfile(path):
            return path
    raise ValueError(f"{owner}: the audio file {os.path.join(folder, utterance)}.flac (or .wav) does not exist")


def _read_audio(path, owner):
    return read_flac(path, owner) if path.endswith(".flac") else read_wav(path, owner)


class LibriSpeechDataset(SourceDataset):
    """LibriSpeech: dataset_dir/<usage>/<speaker>/<chapter>/<speaker>-<chapter>.trans.txt
    ('<speaker>-<chapter>-<utterance> TRANSCRIPT' lines) and the audio of each utterance as
    <speaker>-<chapter>-<utterance>.flac (decoded by mycel.dataset.flac), or .wav. usage:
    dev-clean, dev-other, test-clean, test-other, train-clean-100, train-clean-360, train-other-500
    or all (None: every one present, in that order). Columns waveform (1, samples) float32,
    sample_rate, transcript (str), speaker_id, chapter_id, utterance_id (uint32); speakers and
    chapters in name order, utterances in transcript order."""

    def __init__(self, dataset_dir, usage=None, num_samples=None, num_parallel_workers=None, shuffle=None,
                 sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "LibriSpeechDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.usage = _choice(usage, "usage", _LIBRISPEECH_USAGES + ("all",), "all")
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        records = []
        for part in (_LIBRISPEECH_USAGES if self.usage == "all" else (self.usage,)):
            root = os.path.join(self.dataset_dir, part)
            if not os.path.isdir(root):
                if self.usage == "all":
                    continue
                raise ValueError(f"{owner}: the folder {root} does not exist (usage '{self.usage}')")
            for folder, dirs, files in sorted(os.walk(root)):
                dirs.sort()
                for name in sorted(f for f in files if f.endswith(".trans.txt")):
                    records += self._transcripts(os.path.join(folder, name), owner)

        def row(rec):
            wav, rate = _read_audio(rec[0], owner)
            return (wav, np.array(rate, np.uint32), np.array(rec[1]), np.array(rec[2], np.uint32),
                    np.array(rec[3], np.uint32), np.array(rec[4], np.uint32))

        _build(self, owner, records, row, ["waveform", "sample_rate", "transcript", "speaker_id", "chapter_id",
                                           "utterance_id"],
               num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)

    @staticmethod
    def _transcripts(path, owner):
        out = []
        folder = os.path.dirname(path)
        for k, line in enumerate(_text_lines(path, owner), 1):
            if not line.strip():
                continue
            utterance, _, text = line.strip().partition(" ")
            m = _LIBRI_ID.match(utterance)
            if not m:
                raise ValueError(f"{owner}: '{path}':{k}: expected '<speaker>-<chapter>-<utterance> <text>', "
                                 f"got {line[:80]!r}")
            ids = [int(g) for g in m.groups()]
            if max(ids) > 0xFFFFFFFF:
                raise ValueError(f"{owner}: '{path}':{k}: an id of {utterance} is past 2^32 - 1")
            out.append((_libri_audio(folder, utterance, owner), text, *ids))
        return out


# ---- NIST SPHERE ------------------------------------------------------------------------------

_SPH_MAX_HEADER = 1 << 20
_SPH_MAX_BYTES = 1 << 32


def read_sph(path, owner="read_sph", start=None, end=None):
    """(waveform (channels, samples) float32 in [-1, 1), sample_rate) of an uncompressed NIST
    SPHERE file (PCM, 1, 2 or 4-byte samples, either byte order; 'shorten'-compressed files are
    refused), keeping only samples [start, end) when given. The header ('NIST_1A', its size,
    then 'name -type value' lines up to 'end_head') is checked against the file size."""
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(16)

            def fail(what):
                raise ValueError(f"{owner}: '{path}' is not a supported NIST SPHERE file: {what}")

            if not head.startswith(b"NIST_1A") or len(head) < 16:
                fail("no 'NIST_1A' header")
            try:
                header_size = int(head[8:16].decode("ascii").strip())
            except (UnicodeDecodeError, ValueError):
                fail(f"header size {head[8:16]!r}")
            if not 16 <= header_size <= min(size, _SPH_MAX_HEADER):
                fail(f"header size {header_size} for a {size}-byte file")
            text = f.read(header_size - 16).decode("ascii", "replace")
            fields = {}
            for line in text.splitlines():
                parts = line.split(None, 2)
                if parts and parts[0] == "end_head":
                    break
                if len(parts) == 3 and parts[1].startswith("-"):
                    fields[parts[0]] = (parts[1], parts[2].strip())

            def number(name, default=None):
                if name not in fields:
                    if default is None:
                        fail(f"no '{name}' field")
                    return default
                kind, value = fields[name]
                if kind != "-i" or not value.isdigit():
                    fail(f"'{name}' is {kind} {value[:20]!r}, expected an integer")
                return int(value)

            rate = number("sample_rate")
            channels = number("channel_count", 1)
            width = number("sample_n_bytes", 2)
            coding = fields.get("sample_coding", ("-s3", "pcm"))[1]
            order = fields.get("sample_byte_format", ("-s2", "01"))[1]
            if coding.lower() != "pcm":
                fail(f"sample_coding {coding[:40]!r} (only uncompressed pcm is read; decompress shorten files "
                     "with sph2pipe)")
            if width not in (1, 2, 4) or not 1 <= channels <= 64 or rate == 0:
                fail(f"{width}-byte samples, {channels} channels, {rate} Hz")
            if width > 1 and order not in ("01", "10", "0123", "3210"):
                fail(f"sample_byte_format {order[:10]!r}")
            frame = width * channels
            frames = (size - header_size) // frame
            count = number("sample_count", frames)
            if count > frames:
                fail(f"sample_count {count} but only {frames} frames of data")
            lo = 0 if start is None else min(max(int(start), 0), count)
            hi = count if end is None else min(max(int(end), lo), count)
            if (hi - lo) * frame > _SPH_MAX_BYTES:
                fail(f"{hi - lo} frames requested")
            f.seek(header_size + lo * frame)
            raw = f.read((hi - lo) * frame)
    except OSError as e:
        raise ValueError(f"{owner}: cannot read '{path}' ({e.strerror})") from None
    little = width == 1 or order in ("01", "0123")
    dt = np.dtype({1: "i1", 2: "i2", 4: "i4"}[width]).newbyteorder("<" if little else ">")
    x = np.frombuffer(raw, dt).astype(np.float32) / float(1 << (8 * width - 1))
    return x.reshape(-1, channels).T.copy(), rate


# ---- TED-LIUM ---------------------------------------------------------------------------------

_TEDLIUM = {"release1": ("TEDLIUM_release1", ("train", "test", "dev")),
            "release2": ("TEDLIUM_release2", ("train", "test", "dev")),
            "release3": ("TEDLIUM_release-3", ("data",))}


class TedliumDataset(SourceDataset):
    """TED-LIUM: dataset_dir is the release's folder (TEDLIUM_release1, TEDLIUM_release2 or
    TEDLIUM_release-3, as MindSpore takes it; the folder holding it is accepted too). release1 and
    release2 read <usage>/stm/*.stm with the talks' audio in <usage>/sph/<talk>.sph; usage 'train',
    'test', 'dev' or 'all' (None: the three). release3 reads data/{stm,sph} (usage 'all' or None
    only). Each stm line '<talk> <channel> <speaker> <start s> <end s> <label> <transcript>' is a
    row (';;' comment lines are not): waveform (channels, samples) float32, the segment of the
    talk's audio, sample_rate int32, transcript, talk_id, speaker_id and identifier (str: the label
    field). extensions: the audio suffix ('.sph', the default, read as NIST SPHERE; '.wav' reads
    PCM WAV)."""

    def __init__(self, dataset_dir, release, usage=None, extensions=None, num_samples=None,
                 num_parallel_workers=None, shuffle=None, sampler=None, num_shards=None, shard_id=None, cache=None):
        owner = "TedliumDataset"
        self.dataset_dir = _check_dir(dataset_dir)
        self.release = _choice(release, "release", tuple(_TEDLIUM), None)
        folder, parts = _TEDLIUM[self.release]
        self.usage = _choice(usage, "usage", parts + ("all",) if self.release != "release3" else ("all",), "all")
        self.extensions = _choice(extensions, "extensions", (".sph", ".wav"), ".sph")
        _check_common(num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)
        # MindSpore's dataset_dir is the release's folder itself; its parent is accepted too
        base = self.dataset_dir
        if not os.path.isdir(os.path.join(base, parts[0])) and os.path.isdir(os.path.join(base, folder)):
            base = os.path.join(base, folder)
        records = []
        for part in (parts if self.usage == "all" else (self.usage,)):
            root = os.path.join(base, part)
            stm = _need_dir(os.path.join(root, "stm"), owner)
            for name in sorted(f for f in os.listdir(stm) if f.endswith(".stm")):
                records += self._segments(os.path.join(stm, name), os.path.join(root, "sph"), owner)

        def row(rec):
            audio, start, end = rec[0], rec[1], rec[2]
            if self.extensions == ".sph":
                rate = read_sph(audio, owner, 0, 0)[1]
                wav, _ = read_sph(audio, owner, round(start * rate), round(end * rate))
            else:
                full, rate = read_wav(audio, owner)
                wav = np.ascontiguousarray(full[:, round(start * rate):round(end * rate)])
            return (wav, np.array(rate, np.int32), np.array(rec[3]), np.array(rec[4]), np.array(rec[5]),
                    np.array(rec[6]))

        _build(self, owner, records, row, ["waveform", "sample_rate", "transcript", "talk_id", "speaker_id",
                                           "identifier"],
               num_samples, num_parallel_workers, shuffle, sampler, num_shards, shard_id)

    def _segments(self, path, sph_dir, owner):
        out = []
        for k, line in enumerate(_text_lines(path, owner), 1):
            f = line.split(None, 6)
            if not f or line.startswith(";;"):
                continue
            if len(f) < 6:
                raise ValueError(f"{owner}: '{path}':{k}: expected '<talk> <channel> <speaker> <start> <end> "
                                 f"<label> <transcript>', got {line[:80]!r}")
            try:
                start, end = float(f[3]), float(f[4])
            except ValueError:
                raise ValueError(f"{owner}: '{path}':{k}: start and end must be seconds, got {f[3]!r} {f[4]!r}") \
                    from None
            if not 0 <= start <= end < 1e7:
                raise ValueError(f"{owner}: '{path}':{k}: the segment [{start}, {end}] s is not a time span")
            audio = os.path.join(sph_dir, f[0] + self.extensions)
            if not os.path.isfile(audio):
                raise ValueError(f"{owner}: '{path}':{k}: the audio file {audio} does not exist")
            out.append((audio, start, end, f[6].strip() if len(f) > 6 else "", f[0], f[2], f[5]))
        return out


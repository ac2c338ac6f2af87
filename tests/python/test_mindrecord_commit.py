"""Publishing a MindRecord shard set is atomic: a writer killed at any point of commit() leaves
readers the complete old set or the complete new one, and the next commit finishes or removes
what it left. Two processes writing one name never share a temporary file. The kill points are
picked with MYCEL_FAULT (src/mycel/core/fault.h), so every point is hit deterministically."""
import os
import signal
import subprocess
import sys
import time

import pytest

import mycel.dataset as ds
from mycel.mindrecord import FileReader, FileWriter

SCHEMA = {"id": {"type": "int64"}, "tag": {"type": "string"}}
SHARDS = 4
BEFORE = ["begin", "shards_synced", "record_written"]  # the commit point is the record's rename
AFTER = ["committed"] + [f"renamed{i}" for i in range(SHARDS)] + ["record_removed"]

WRITER = r"""
import os, sys, time
from mycel.mindrecord import FileWriter
path, tag, n, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[5]
overwrite = sys.argv[4] == "1"
w = FileWriter(path, 4, overwrite=overwrite)
w.add_schema({"id": {"type": "int64"}, "tag": {"type": "string"}})
w.write_raw_data([{"id": i, "tag": tag} for i in range(n)])
print("ready", flush=True)
while go != "-" and not os.path.exists(go):
    time.sleep(0.001)
try:
    w.commit()
    print("ok", flush=True)
except ValueError as e:
    print("refused:", e, flush=True)
"""


def writer(path, tag, n, fault=None, overwrite=True, go="-"):
    env = dict(os.environ)
    env.pop("MYCEL_FAULT", None)
    if fault:
        env["MYCEL_FAULT"] = f"mindrecord_commit:{fault}"
    args = [path, tag, str(n), "1" if overwrite else "0", go]
    return subprocess.Popen([sys.executable, "-c", WRITER, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def write_set(path, tag, n):
    w = FileWriter(path, SHARDS, overwrite=True)
    w.add_schema(SCHEMA)
    w.write_raw_data([{"id": i, "tag": tag} for i in range(n)])
    w.commit()


def read_set(path):
    """(tag, ids) through FileReader and MindDataset, which must agree."""
    rows = list(FileReader(f"{path}0").get_next())
    tags = {r["tag"] for r in rows}
    assert len(tags) == 1, f"a mixed set: {tags}"
    ids = [int(r["id"]) for r in rows]
    ds_ids = [int(r[0]) for r in ds.MindDataset(f"{path}0", columns_list=["id"], shuffle=False)
              .create_tuple_iterator(num_epochs=1, output_numpy=True)]
    assert ds_ids == ids
    return tags.pop(), ids


FINALS = [f"set.mr{i}" for i in range(SHARDS)]


@pytest.mark.parametrize("point", BEFORE + AFTER)
def test_kill_at_each_point_of_a_commit(tmp_path, point):
    path = str(tmp_path / "set.mr")
    write_set(path, "old", 10)
    p = writer(path, "new", 13, fault=point)
    out, err = p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL, err
    # 10 and 13 rows split differently over 4 shards: a mix of the sets could not pass as either.
    want = ("old", list(range(10))) if point in BEFORE else ("new", list(range(13)))
    assert read_set(path) == want
    # The next commit in the directory finishes the killed one (or drops its files) first.
    q = writer(path, "later", 7)
    out, err = q.communicate(timeout=60)
    assert q.returncode == 0 and out.split() == ["ready", "ok"], err
    assert read_set(path) == ("later", list(range(7)))
    assert sorted(os.listdir(tmp_path)) == FINALS


def test_kill_after_the_commit_point_of_a_first_set(tmp_path):
    path = str(tmp_path / "set.mr")
    p = writer(path, "new", 9, fault="committed")
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL
    assert not os.path.exists(f"{path}0")  # every shard still under its temporary name
    assert read_set(path) == ("new", list(range(9)))


@pytest.mark.parametrize("point", BEFORE)
def test_an_error_before_the_commit_point_keeps_the_old_set(tmp_path, monkeypatch, point):
    path = str(tmp_path / "set.mr")
    write_set(path, "old", 6)
    w = FileWriter(path, SHARDS, overwrite=True)
    w.add_schema(SCHEMA)
    w.write_raw_data([{"id": i, "tag": "new"} for i in range(11)])
    monkeypatch.setenv("MYCEL_FAULT", f"mindrecord_commit:{point}:raise")
    with pytest.raises(RuntimeError, match=f"injected fault at 'mindrecord_commit:{point}'"):
        w.commit()
    monkeypatch.delenv("MYCEL_FAULT")
    assert read_set(path) == ("old", list(range(6)))
    assert sorted(os.listdir(tmp_path)) == FINALS


@pytest.mark.parametrize("overwrite", [False, True])
def test_two_processes_writing_one_name(tmp_path, overwrite):
    path = str(tmp_path / "set.mr")
    go = str(tmp_path / "go")
    procs = {tag: writer(path, tag, n, overwrite=overwrite, go=go)
             for tag, n in [("a", 40), ("b", 41)]}
    for p in procs.values():  # both have written every row before either commits
        assert p.stdout.readline().strip() == "ready"
    open(go, "w").close()
    results = {}
    for tag, p in procs.items():
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        results[tag] = out.strip()
    os.unlink(go)
    ok = [t for t, r in results.items() if r == "ok"]
    if overwrite:  # serialized: both publish, the last one wins whole
        assert len(ok) == 2
        tag, ids = read_set(path)
        assert ids == list(range(40 if tag == "a" else 41))
    else:  # the second finds the first's files and refuses, naming them
        assert len(ok) == 1, results
        loser = ({"a", "b"} - set(ok)).pop()
        assert "refused:" in results[loser] and "another writer" in results[loser]
        assert read_set(path) == (ok[0], list(range(40 if ok[0] == "a" else 41)))
    assert sorted(os.listdir(tmp_path)) == FINALS


READER = r"""
import sys
import time
from mycel.mindrecord import FileReader
rows = list(FileReader(sys.argv[1]).get_next())
print(sorted({r["tag"] for r in rows}), len(rows), flush=True)
"""


def _stopped_or_exited(pid, proc, timeout=30.0):
    """Waits until process `pid` is stopped (SIGSTOP) or has exited; True when stopped."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return True
        time.sleep(0.002)
    raise AssertionError("the reader neither stopped nor exited")


def test_a_reader_opening_a_set_while_a_commit_replaces_it_opens_it_again(tmp_path):
    path = str(tmp_path / "set.mr")
    write_set(path, "old", 10)
    env = dict(os.environ, MYCEL_FAULT="mindrecord_read:first_opened:stop")
    reader = subprocess.Popen([sys.executable, "-c", READER, f"{path}0"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)
    stops = 0
    try:
        # Frozen with the old shard 0 open; the new set is published before it opens shard 1.
        assert _stopped_or_exited(reader.pid, reader)
        stops += 1
        write_set(path, "new", 13)
        os.kill(reader.pid, signal.SIGCONT)
        while _stopped_or_exited(reader.pid, reader):  # it opens the set again, from shard 0
            stops += 1
            os.kill(reader.pid, signal.SIGCONT)
        out, err = reader.communicate(timeout=60)
    finally:
        reader.kill()
        reader.wait()
    assert reader.returncode == 0, err
    assert out.strip() == "['new'] 13"
    assert stops == 2


@pytest.mark.parametrize("text", [b"", b"garbage\n", b"MYCELMR-COMMIT 1\n2\nset.mr0\tx\nend\n",
                                  b"MYCELMR-COMMIT 1\n99999999999999999999\nend\n"])
def test_a_corrupt_commit_record_is_an_error_naming_it(tmp_path, text):
    # Records are written atomically, so only damage or tampering makes one unreadable.
    path = str(tmp_path / "set.mr")
    write_set(path, "old", 5)
    (tmp_path / "set.mr.mrcommit").write_bytes(text)
    with pytest.raises(RuntimeError, match=r"set\.mr\.mrcommit: corrupt MindRecord commit record"):
        FileReader(f"{path}0")

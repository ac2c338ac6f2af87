"""A save killed at any point of its write keeps the previous checkpoint loadable, and the next
save to the same path removes the temporary file the killed one left (MYCEL_FAULT picks the
point deterministically; see src/mycel/core/fault.h)."""
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import mycel
from mycel import Tensor

POINTS = ["opened", "partial", "written", "synced", "renamed"]  # in the order a save meets them

CHILD = r"""
import sys
import numpy as np
import mycel
from mycel import Tensor
mycel.save_checkpoint({"w": Tensor(np.full(1000, 2.0, np.float32)),
                       "b": Tensor(np.ones(3, np.float32))}, sys.argv[1])
"""


def save(path, arrays):
    mycel.save_checkpoint({k: Tensor(v) for k, v in arrays.items()}, str(path))


def load(path):
    return {k: v.asnumpy() for k, v in mycel.load_checkpoint(str(path)).items()}


def assert_same(got, want):
    assert list(got) == list(want)
    for k in want:
        np.testing.assert_array_equal(got[k], want[k])


def env_with(fault):
    env = dict(os.environ)
    env["MYCEL_FAULT"] = fault
    return env


@pytest.mark.parametrize("suffix", [".ckpt", ".safetensors"])
@pytest.mark.parametrize("point", POINTS)
def test_kill_at_each_point_of_a_save(tmp_path, suffix, point):
    path = tmp_path / f"model{suffix}"
    prev = {"w": np.arange(10, dtype=np.float32)}
    new = {"w": np.full(1000, 2.0, np.float32), "b": np.ones(3, np.float32)}
    save(path, prev)
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(path)], stderr=subprocess.PIPE,
                             env=env_with(f"atomic_write:{point}"))
    _, err = child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL, err.decode()
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name != path.name)
    if point == "renamed":  # killed after the rename: the new checkpoint is complete
        assert leftovers == []
        assert_same(load(path), new)
    else:
        assert leftovers == [f"{path.name}.tmp-{child.pid}"]
        assert_same(load(path), prev)
    latest = {"w": np.full(4, 7.0, np.float32)}
    save(path, latest)  # removes the dead writer's temporary file
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]
    assert_same(load(path), latest)


def test_a_live_writers_temporary_file_is_kept(tmp_path):
    path = tmp_path / "model.ckpt"
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        theirs = tmp_path / f"model.ckpt.tmp-{live.pid}"
        theirs.write_bytes(b"partial")
        save(path, {"w": np.zeros(2, np.float32)})
        assert theirs.exists()  # its writer may still finish it
    finally:
        live.kill()
        live.wait()
    save(path, {"w": np.ones(2, np.float32)})
    assert not theirs.exists()  # its writer is gone now
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.ckpt"]


@pytest.mark.parametrize("point", POINTS[:4])
def test_an_error_at_each_point_removes_the_temporary(tmp_path, monkeypatch, point):
    path = tmp_path / "model.ckpt"
    prev = {"w": np.arange(3, dtype=np.float32)}
    save(path, prev)
    monkeypatch.setenv("MYCEL_FAULT", f"atomic_write:{point}:raise")
    with pytest.raises(RuntimeError, match=f"injected fault at 'atomic_write:{point}'"):
        save(path, {"w": np.zeros(5, np.float32), "b": np.zeros(2, np.float32)})
    monkeypatch.delenv("MYCEL_FAULT")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.ckpt"]
    assert_same(load(path), prev)

"""A warm TE kernel cache: the fused-chain kernels of common training steps compiled ahead of time.

Every elementwise chain (and each chain feeding a sum, mean, max or min) of a compiled step is a
generated kernel, 1 to 2.5 s of system compiler when cold: by default built in the background
while the step runs on the interpreter (MYCEL_TE_FUSION=async), with MYCEL_TE_FUSION=1 before the
first step. Those kernels take their
sizes at run time (te.var), so a kernel compiled for one batch size or layer width serves all of
them: compiling one small training step of each common model family fills the on-disk cache
(MYCEL_TE_CACHE, else ~/.cache/mycel/te) for every later process that trains such a model. (A
reduction over the batch fuses with its chain only below a work limit, MYCEL_TE_ONE_THREAD_WORK:
the small step runs a second time with the limit at 0, so both forms are cached.)

    python -m mycel.te.warm [--cache DIR] [--only mlp|lenet5|transformer ...] [--force]

scripts/setup runs it after each build, so the cache is warm wherever Mycel was installed;
`warm_cache(models)` does it for your own (factory, input shape) pairs. It is idempotent and
fast when nothing changed: a warm run leaves a stamp in the cache folder, named by a hash of the
Mycel library (its path, size and time), the compiler (MYCEL_TE_CXX, its binary's size and time),
the models and the optimizers, and listing the kernel libraries the steps used; while the stamp
and every library it lists are there, a new run returns at once without building a step. The
kernels themselves are keyed by compiler, CPU, flags and source (a rebuild that changes no
generated source compiles nothing). A stamp records the library and compiler files it was made
for; one whose files have changed or gone can never match again and is removed by the next run.
"""
import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time

import numpy as np

import mycel
from mycel import nn, ops
from mycel._mycel import te as _te


class Mlp(nn.Cell):
    """784-512-512-10 with ReLU (bench_train.py's MLP)."""

    def __init__(self):
        super().__init__()
        self.body = nn.SequentialCell(nn.Dense(784, 512), nn.ReLU(), nn.Dense(512, 512), nn.ReLU(),
                                      nn.Dense(512, 10))

    def construct(self, x):
        return self.body(x)


class LeNet5(nn.Cell):
    """Two 5x5 convolutions with max pooling, then three dense layers (examples/lenet5.py)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, pad_mode="valid")
        self.conv2 = nn.Conv2d(6, 16, 5, pad_mode="valid")
        self.fc1 = nn.Dense(16 * 5 * 5, 120)
        self.fc2 = nn.Dense(120, 84)
        self.fc3 = nn.Dense(84, 10)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.flatten = nn.Flatten()

    def construct(self, x):
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


class Transformer(nn.Cell):
    """Two post-norm encoder layers, mean-pooled, then a classifier (examples/models)."""

    def __init__(self, d_model=128):
        super().__init__()
        self.layers = nn.SequentialCell([
            nn.TransformerEncoderLayer(d_model, 4, dim_feedforward=4 * d_model, dropout=0.0,
                                       batch_first=True) for _ in range(2)])
        self.classifier = nn.Dense(d_model, 10)

    def construct(self, x):
        return self.classifier(ops.mean(self.layers(x), axis=1))


# name: (model factory, input shape without the batch)
MODELS = {"mlp": (Mlp, (784,)), "lenet5": (LeNet5, (1, 32, 32)),
          "transformer": (Transformer, (128, 128))}


def _one_step(make, shape, optimizer, batch=2):
    """Compiles and runs one graph-mode training step (softmax cross-entropy, `optimizer`)."""
    rng = np.random.default_rng(0)
    x = mycel.Tensor(rng.standard_normal((batch,) + tuple(shape)).astype(np.float32))
    y = mycel.Tensor(rng.integers(0, 10, batch).astype(np.int32))
    net = make()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = optimizer(net.trainable_params())
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), opt)
    step.set_train(True)
    return float(step(x, y).asnumpy())


OPTIMIZERS = {
    "momentum": lambda p: nn.Momentum(p, learning_rate=0.01, momentum=0.9),
    "sgd": lambda p: nn.SGD(p, learning_rate=0.01),
    "adam": lambda p: nn.Adam(p, learning_rate=1e-3),
}


def _file_id(path):
    st = os.stat(path)
    return f"{os.path.realpath(path)} {st.st_size} {st.st_mtime_ns}"


def _tool_ids():
    """(library id, compiler name, compiler binary's id or ""): what a stamp depends on."""
    cxx = os.environ.get("MYCEL_TE_CXX") or "g++"
    found = shutil.which(cxx)
    return _file_id(mycel._mycel.__file__), cxx, _file_id(found) if found else ""


def _stamp_path(names, optimizers):
    """The stamp of a warm run of these models and optimizers with this library and compiler (in
    the kernel cache folder), or None for models given as factories (no stable name)."""
    if names is None or not all(isinstance(m, str) for m in names):
        return None
    lib, cxx, cxx_file = _tool_ids()
    key = "\n".join([lib, cxx, cxx_file, ",".join(sorted(names)), ",".join(sorted(optimizers))])
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return os.path.join(_te.cache_directory(), f"warm-{digest}.txt")


def _read_stamp(stamp):
    """(header lines "# key value", library paths), or None when it cannot be read."""
    try:
        with open(stamp, encoding="utf-8") as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return None
    return [l for l in lines if l.startswith("#")], [l for l in lines if not l.startswith("#")]


def _stamp_valid(stamp):
    read = _read_stamp(stamp)
    return bool(read and read[1]) and all(os.path.isfile(p) for p in read[1])


def _current_id(recorded):
    """The id the file a stamp's header names has now ("" when it is gone)."""
    path = recorded.rsplit(" ", 2)[0]
    try:
        return _file_id(path)
    except OSError:
        return ""


def _remove_stale_stamps(folder, keep):
    """Removes the warm stamps in `folder` that can never match again: made for a library or a
    compiler binary whose file has changed (a rebuild, an upgrade) or gone (a removed install),
    and stamps from before the header recorded them. Other installations' current stamps stay.
    Returns the removed paths."""
    removed = []
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if not (name.startswith("warm-") and name.endswith(".txt")) or path == keep:
            continue
        read = _read_stamp(path)
        if read is None:
            continue
        head = dict(h[1:].strip().split(" ", 1) for h in read[0] if " " in h[1:].strip())
        stale = any(_current_id(head[k]) != head[k] for k in ("library", "compiler_file")
                    if k in head) or "library" not in head
        if stale:
            try:
                os.unlink(path)
                removed.append(path)
            except OSError:
                pass
    return removed


def _write_stamp(stamp, libs):
    """The stamp, written atomically (a temporary file in the folder, then a rename): a header
    naming the library and compiler files it was made for, then the kernel libraries."""
    lib, _, cxx_file = _tool_ids()
    fd, tmp = tempfile.mkstemp(prefix=".warm-", dir=os.path.dirname(stamp))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            head = f"# library {lib}\n" + (f"# compiler_file {cxx_file}\n" if cxx_file else "")
            f.write(head + "".join(p + "\n" for p in libs))
        os.replace(tmp, stamp)
    except BaseException:
        os.unlink(tmp)
        raise


def warm_cache(models=None, optimizers=("momentum",), cache=None, verbose=False, force=False):
    """Compiles the TE kernels of one training step of each model into the kernel cache.

    models: names from MODELS, or (factory, input shape) pairs; all of MODELS when None.
    Returns the number of kernels the system compiler built (0 when the cache was warm). With
    named models a warm run's stamp (see the module's doc) makes the next run return 0 at once;
    force=True runs the steps anyway."""
    names = list(models or MODELS)
    items = [MODELS[m] if isinstance(m, str) else m for m in names]
    old_env = {k: os.environ.get(k)
               for k in ("MYCEL_TE_FUSION", "MYCEL_TE_CACHE", "MYCEL_TE_ONE_THREAD_WORK")}
    old_mode = mycel.get_context("mode")
    os.environ["MYCEL_TE_FUSION"] = "1"  # read when a step compiles
    if cache:
        os.environ["MYCEL_TE_CACHE"] = str(cache)
    before = _te.compile_count()
    try:
        stamp = _stamp_path(names, optimizers)
        if stamp and not force and _stamp_valid(stamp):
            if verbose:
                print(f"[te.warm] the cache is warm ({stamp})", flush=True)
            return 0
        mycel.set_context(mode=mycel.GRAPH_MODE)
        for make, shape in items:
            for name in optimizers:
                t0 = time.perf_counter()
                # A reduction over the batch fuses with its chain below a work limit and runs as
                # the chain's kernel and the reduction's op above it: the small step twice, fused
                # and with the limit at 0, puts both forms in the cache for every batch size.
                for limit in (None, "0"):
                    if limit is None:
                        os.environ.pop("MYCEL_TE_ONE_THREAD_WORK", None)
                    else:
                        os.environ["MYCEL_TE_ONE_THREAD_WORK"] = limit
                    _one_step(make, shape, OPTIMIZERS[name])
                os.environ.pop("MYCEL_TE_ONE_THREAD_WORK", None)
                if verbose:
                    print(f"[te.warm] {getattr(make, '__name__', make)} + {name}: "
                          f"{time.perf_counter() - t0:.1f} s, {_te.compile_count() - before} "
                          "kernels compiled so far", flush=True)
        if stamp:
            # this process's libraries in the folder (a superset of the steps')
            folder = os.path.realpath(_te.cache_directory())
            libs = [p for p in _te.used_libraries()
                    if os.path.dirname(os.path.realpath(p)) == folder]
            if libs:
                _write_stamp(stamp, libs)
            _remove_stale_stamps(os.path.dirname(stamp), stamp)
    finally:
        mycel.set_context(mode=old_mode)
        for k, v in old_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return _te.compile_count() - before


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m mycel.te.warm", description=__doc__.splitlines()[0])
    ap.add_argument("--cache", help="kernel cache folder (default: MYCEL_TE_CACHE, else "
                    "~/.cache/mycel/te)")
    ap.add_argument("--only", action="append", choices=sorted(MODELS), help="model families")
    ap.add_argument("--optimizer", action="append", choices=sorted(OPTIMIZERS),
                    help="optimizers (default: momentum)")
    ap.add_argument("--force", action="store_true",
                    help="run the steps even when the stamp says the cache is warm")
    ap.add_argument("--quiet", action="store_true", help="print only the summary line")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    n = warm_cache(args.only, tuple(args.optimizer or ("momentum",)), args.cache,
                   verbose=not args.quiet, force=args.force)
    print(f"[te.warm] {n} kernels compiled, {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

import os
import sys

# The references numpy and scipy compute run on one thread (before they load OpenBLAS): on two
# cores their OpenBLAS pool only competes with Mycel's OpenMP pool, and scipy's bundled OpenBLAS
# once hung a fresh-clone CI run spinning in exec_blas_async_wait (dgetrs inside
# scipy.linalg.expm, its worker never woke).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.dirname(__file__))
# Check the IR after every optimizer pass (release builds skip it by default): a pass that breaks
# scoping fails at that pass, not later in the backend. The whole suite stays about as fast.
os.environ.setdefault("MYCEL_VERIFY_IR", "1")

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _isolate_context():
    """Each test starts from the context the one before it found: the execution mode, the thread
    count and the MYCEL_* switches a test sets (A/B paths, fusions off) are put back after it, so
    that no test file needs its own copy of this fixture and a failing test leaks nothing."""
    import mycel
    from mycel import _mycel
    mode, threads = mycel.get_context("mode"), _mycel.get_num_threads()
    env = {k: v for k, v in os.environ.items() if k.startswith("MYCEL_")}
    yield
    if mycel.get_context("mode") != mode:
        mycel.set_context(mode=mode)
    if _mycel.get_num_threads() != threads:
        _mycel.set_num_threads(threads)  # not set_context: the user's-choice flag stays as it was
    for k in [k for k in os.environ if k.startswith("MYCEL_") and k not in env]:
        del os.environ[k]
    os.environ.update(env)


@pytest.fixture
def graph_mode():
    """The test runs in GRAPH_MODE (_isolate_context puts the mode and thread count back);
    a file whose tests all do: `pytestmark = pytest.mark.usefixtures("graph_mode")`."""
    import mycel
    mycel.set_context(mode=mycel.GRAPH_MODE)

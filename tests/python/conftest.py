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

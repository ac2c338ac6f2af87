"""What the TE test modules share: a fresh kernel cache per module, so each distinct kernel
compiles once and repeats hit the cache (the suite stays fast). Import `kernel_cache` into a test
module to use it (it is autouse)."""
import os

import pytest


@pytest.fixture(scope="module", autouse=True)
def kernel_cache(tmp_path_factory):
    old = os.environ.get("MYCEL_TE_CACHE")
    os.environ["MYCEL_TE_CACHE"] = str(tmp_path_factory.mktemp("te_cache"))
    yield
    if old is None:
        os.environ.pop("MYCEL_TE_CACHE")
    else:
        os.environ["MYCEL_TE_CACHE"] = old

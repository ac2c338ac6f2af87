import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
# Check the IR after every optimizer pass (release builds skip it by default): a pass that breaks
# scoping fails at that pass, not later in the backend. The whole suite stays about as fast.
os.environ.setdefault("MYCEL_VERIFY_IR", "1")

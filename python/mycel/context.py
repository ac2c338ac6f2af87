"""Global execution context: mode (PYNATIVE_MODE eager, GRAPH_MODE compiled) and threads."""
from mycel import _mycel

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_context = {"mode": PYNATIVE_MODE, "device_target": "CPU"}
_threads_set_by_user = False  # mycel.communication.init() then leaves the thread count alone


def set_context(**kwargs):
    """Sets mode=GRAPH_MODE|PYNATIVE_MODE, device_target='CPU', num_threads=N."""
    for key, value in kwargs.items():
        if key == "mode":
            if value not in (GRAPH_MODE, PYNATIVE_MODE):
                raise ValueError(f"set_context: mode must be GRAPH_MODE (0) or PYNATIVE_MODE (1), got {value!r}")
            _context["mode"] = value
        elif key == "device_target":
            if value != "CPU":
                raise ValueError(f"set_context: device_target {value!r} is not available; Mycel runs on 'CPU'")
            _context["device_target"] = value
        elif key == "num_threads":
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"set_context: num_threads must be a positive int, got {value!r}")
            global _threads_set_by_user
            _threads_set_by_user = True
            _mycel.set_num_threads(value)
        else:
            raise ValueError(f"set_context: unknown setting {key!r}")


def get_context(key):
    """The value of one context setting."""
    if key == "num_threads":
        return _mycel.get_num_threads()
    if key not in _context:
        raise ValueError(f"get_context: unknown setting {key!r}")
    return _context[key]


# MindSpore also offers the auto-parallel settings here (mindspore.context.set_auto_parallel_context).
from mycel.parallel.context import (ParallelMode, set_auto_parallel_context,  # noqa: E402,F401
                                    get_auto_parallel_context, reset_auto_parallel_context)

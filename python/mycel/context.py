"""Global execution context: mode (PYNATIVE_MODE eager, GRAPH_MODE compiled) and threads."""
from mycel import _mycel
from mycel.common.jit_config import check_jit_config, default_jit_config
from mycel.common.suggest import did_you_mean

GRAPH_MODE = 0
PYNATIVE_MODE = 1

_context = {"mode": PYNATIVE_MODE, "device_target": "CPU", "device_id": 0, "jit_config": default_jit_config(),
            "save_graphs": False, "max_call_depth": 1000}
_threads_set_by_user = False  # mycel.communication.init() then leaves the thread count alone
_SETTINGS = ("mode", "device_target", "num_threads", "device_id", "jit_config", "save_graphs",
             "max_call_depth")


def set_context(**kwargs):
    """Sets mode=GRAPH_MODE|PYNATIVE_MODE, device_target='CPU', num_threads=N, and MindSpore's
    device_id=0, jit_config={...} (or a JitConfig; see common/jit_config.py), save_graphs
    (False; True is MYCEL_DUMP_IR's job here) and max_call_depth (recorded)."""
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
        elif key == "device_id":
            if value != 0:
                raise ValueError(f"set_context: device_id {value!r} is not available; Mycel has one CPU device, 0")
            _context["device_id"] = value
        elif key == "jit_config":
            config = default_jit_config()
            config.update(check_jit_config("set_context", value))
            _context["jit_config"] = config
        elif key == "save_graphs":
            if value not in (False, 0):
                raise ValueError("set_context: save_graphs is not supported; set MYCEL_DUMP_IR=<dir> to "
                                 "write the IR after each optimization pass")
            _context["save_graphs"] = False
        elif key == "max_call_depth":
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"set_context: max_call_depth must be a positive int, got {value!r}")
            _context["max_call_depth"] = value
        else:
            raise ValueError(f"set_context: unknown setting {key!r}" + did_you_mean(key, _SETTINGS))


def get_context(key):
    """The value of one context setting."""
    if key == "num_threads":
        return _mycel.get_num_threads()
    if key == "jit_config":
        return dict(_context["jit_config"])
    if key not in _context:
        raise ValueError(f"get_context: unknown setting {key!r}" + did_you_mean(key, _SETTINGS))
    return _context[key]


# MindSpore also offers the auto-parallel settings here (mindspore.context.set_auto_parallel_context).
from mycel.parallel.context import (ParallelMode, set_auto_parallel_context,  # noqa: E402,F401
                                    get_auto_parallel_context, reset_auto_parallel_context)

"""Global execution context: mode (PYNATIVE_MODE eager, GRAPH_MODE compiled) and threads."""
import os

from mycel import _mycel
from mycel.common.jit_config import check_jit_config, default_jit_config
from mycel.common.suggest import did_you_mean

GRAPH_MODE = 0
PYNATIVE_MODE = 1
# MindSpore's jit_syntax_level values. Mycel's parser has one level: code it can compile is
# compiled, and what it cannot is an error naming the construct (LAX's fallback to running the
# Python interpreter inside the graph does not exist here), so the setting is kept, not used.
STRICT, COMPATIBLE, LAX = 0, 1, 2

_context = {"mode": PYNATIVE_MODE, "device_target": "CPU", "device_id": 0, "jit_config": default_jit_config(),
            "save_graphs": False, "save_graphs_path": ".", "max_call_depth": 1000,
            "jit_syntax_level": LAX}
_threads_set_by_user = False  # mycel.communication.init() then leaves the thread count alone
_SETTINGS = ("mode", "device_target", "num_threads", "device_id", "jit_config", "save_graphs",
             "save_graphs_path", "max_call_depth", "jit_syntax_level")
_dump_ir_set_here = False  # MYCEL_DUMP_IR came from save_graphs, so save_graphs=False clears it


def set_context(**kwargs):
    """Sets mode=GRAPH_MODE|PYNATIVE_MODE, device_target='CPU', num_threads=N, and MindSpore's
    device_id=0, jit_config={...} (or a JitConfig; see common/jit_config.py), save_graphs
    (True or 1-3: the IR after each optimization pass of each graph compiled from then on, under
    save_graphs_path, as MYCEL_DUMP_IR=<dir> does), max_call_depth and jit_syntax_level
    (STRICT, COMPATIBLE or LAX; recorded)."""
    if "save_graphs_path" in kwargs:  # before save_graphs, whichever order they came in
        path = kwargs["save_graphs_path"]
        if not isinstance(path, str) or not path:
            raise ValueError(f"set_context: save_graphs_path must be a non-empty str, got {path!r}")
        _context["save_graphs_path"] = path
        if _context["save_graphs"]:
            _set_ir_dump(True)
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
            if value not in (True, False, 0, 1, 2, 3):
                raise ValueError(f"set_context: save_graphs must be a bool or 0-3, got {value!r}")
            _context["save_graphs"] = value
            _set_ir_dump(bool(value))
        elif key == "save_graphs_path":
            pass  # taken above
        elif key == "max_call_depth":
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"set_context: max_call_depth must be a positive int, got {value!r}")
            _context["max_call_depth"] = value
        elif key == "jit_syntax_level":
            if value not in (STRICT, COMPATIBLE, LAX) or isinstance(value, bool):
                raise ValueError(f"set_context: jit_syntax_level must be mycel.STRICT, COMPATIBLE or LAX, got {value!r}")
            _context["jit_syntax_level"] = value
        else:
            raise ValueError(f"set_context: unknown setting {key!r}" + did_you_mean(key, _SETTINGS))


def _set_ir_dump(on):
    # The compiler reads MYCEL_DUMP_IR at each compile (pipeline/compile_step.cc).
    global _dump_ir_set_here
    if on:
        os.environ["MYCEL_DUMP_IR"] = os.path.abspath(_context["save_graphs_path"])
        _dump_ir_set_here = True
    elif _dump_ir_set_here:
        os.environ.pop("MYCEL_DUMP_IR", None)
        _dump_ir_set_here = False


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

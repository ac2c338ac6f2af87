"""MindSpore's `mindspore.log`: a logger named 'mycel' on Python's logging, its level from GLOG_v
as MindSpore reads it (0 DEBUG, 1 INFO, 2 WARNING (default), 3 ERROR, 4 CRITICAL)."""
import logging
import os
import sys

_LEVELS = {"0": logging.DEBUG, "1": logging.INFO, "2": logging.WARNING, "3": logging.ERROR,
           "4": logging.CRITICAL}
_logger = None


def get_logger():
    """The 'mycel' logger (made on first use, writing to stderr)."""
    global _logger
    if _logger is None:
        _logger = logging.getLogger("mycel")
        level = os.environ.get("GLOG_v", "2")
        if level not in _LEVELS:
            raise ValueError(f"mycel.log: GLOG_v must be one of {sorted(_LEVELS)}, got {level!r}")
        _logger.setLevel(_LEVELS[level])
        if not _logger.handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("[%(levelname)s] %(name)s(%(process)d) %(asctime)s: %(message)s"))
            _logger.addHandler(handler)
        _logger.propagate = False
    return _logger


def get_level():
    """The level as MindSpore's GLOG_v digit ('0'..'4')."""
    level = get_logger().getEffectiveLevel()
    for digit, value in _LEVELS.items():
        if value == level:
            return digit
    return "2"


def get_log_config():
    """{'GLOG_v': level}: the settings in force."""
    return {"GLOG_v": get_level()}


def debug(msg, *args, **kwargs):
    """Logs msg at DEBUG."""
    get_logger().debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    """Logs msg at INFO."""
    get_logger().info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    """Logs msg at WARNING."""
    get_logger().warning(msg, *args, **kwargs)


def error(msg, *args, **kwargs):
    """Logs msg at ERROR."""
    get_logger().error(msg, *args, **kwargs)


def critical(msg, *args, **kwargs):
    """Logs msg at CRITICAL."""
    get_logger().critical(msg, *args, **kwargs)


exception = error

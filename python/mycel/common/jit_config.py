"""JitConfig (MindSpore's mindspore.JitConfig) and the jit_config settings of set_context, jit and
Cell.set_jit_config. MindSpore's levels choose between kernel-by-kernel execution (O0), graph
fusion (O1) and whole-graph sinking (O2) on its accelerators; Mycel has one compiled CPU path
(fused, planned Program), so every level runs it. The values are validated as MindSpore does and
kept, so get_context('jit_config') and a Cell's jit_config read back what was set."""

_CHOICES = {"jit_level": ("O0", "O1", "O2", ""), "exc_mode": ("auto", "sink", "no_sink"),
            "jit_syntax_level": ("", "STRICT", "COMPATIBLE", "LAX"),
            "debug_level": ("RELEASE", "DEBUG"), "infer_boost": ("on", "off")}
_DEFAULTS = {"jit_level": "", "exc_mode": "auto", "jit_syntax_level": "", "debug_level": "RELEASE",
             "infer_boost": "off"}


def check_jit_config(who, config):
    """A validated dict of jit settings from a dict or a JitConfig."""
    if isinstance(config, JitConfig):
        return dict(config.jit_config_dict)
    if not isinstance(config, dict):
        raise TypeError(f"{who}: jit_config must be a dict or a JitConfig, got {type(config).__name__}")
    out = {}
    for key, value in config.items():
        if key in _CHOICES:
            if value not in _CHOICES[key]:
                raise ValueError(f"{who}: jit_config['{key}'] must be one of {list(_CHOICES[key])}, got {value!r}")
        elif not isinstance(key, str):
            raise TypeError(f"{who}: jit_config keys must be str, got {key!r}")
        out[key] = value
    return out


class JitConfig:
    """JitConfig(jit_level='O1', exc_mode='auto', jit_syntax_level='', debug_level='RELEASE',
    infer_boost='off', **kwargs): compile options for jit, Cell.set_jit_config or set_context."""

    def __init__(self, jit_level="", exc_mode="auto", jit_syntax_level="", debug_level="RELEASE",
                 infer_boost="off", **kwargs):
        settings = dict(jit_level=jit_level, exc_mode=exc_mode, jit_syntax_level=jit_syntax_level,
                        debug_level=debug_level, infer_boost=infer_boost, **kwargs)
        self.jit_config_dict = check_jit_config("JitConfig", settings)

    def __repr__(self):
        items = ", ".join(f"{k}={v!r}" for k, v in self.jit_config_dict.items())
        return f"JitConfig({items})"


def default_jit_config():
    """The settings before any set_context(jit_config=...)."""
    return dict(_DEFAULTS)

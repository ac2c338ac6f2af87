"""RadarMetric (MindArmour's): one radar (spider) curve per model over several normalized metrics,
drawn with matplotlib (an optional dependency: pip install matplotlib, or mycel[armour]) on its
object API, so no global pyplot state is touched; save() writes the PNG atomically."""
import math
import os
import tempfile

import numpy as np

_SCALES = {"hide": [], "norm": [0.2, 0.4, 0.6, 0.8], "sparse": [0.5],
           "dense": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]}


def _matplotlib():
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as e:  # optional dependency
        raise ImportError("RadarMetric draws with matplotlib: pip install matplotlib (or mycel[armour])") from e
    return Figure, FigureCanvasAgg


class RadarMetric:
    """RadarMetric(metrics_name, metrics_data (curves, metrics), labels, title, scale='hide')."""

    def __init__(self, metrics_name, metrics_data, labels, title, scale="hide"):
        o = "RadarMetric"
        if not isinstance(metrics_name, (list, tuple)) or len(metrics_name) < 3:
            raise ValueError(f"{o}: metrics_name must be a list of at least 3 names, got {metrics_name!r}")
        if not isinstance(labels, (list, tuple)):
            raise TypeError(f"{o}: labels must be a list or tuple, got {type(labels).__name__}")
        data = np.asarray(metrics_data, dtype=np.float64)
        if data.shape != (len(labels), len(metrics_name)):
            raise ValueError(f"{o}: metrics_data must have shape (len(labels), len(metrics_name)) = "
                             f"{(len(labels), len(metrics_name))}, got {data.shape}")
        if not np.isfinite(data).all():
            raise ValueError(f"{o}: metrics_data must be finite")
        if not isinstance(title, str):
            raise TypeError(f"{o}: title must be a str, got {type(title).__name__}")
        if scale not in _SCALES:
            raise ValueError(f"{o}: scale must be one of {list(_SCALES)}, got {scale!r}")
        self._names, self._data, self._labels = [str(n) for n in metrics_name], data, [str(v) for v in labels]
        self._title, self._scale = title, scale
        n = len(metrics_name)
        self._angles = [2.0 * math.pi * i / n for i in range(n)] + [0.0]   # closed curves

    def figure(self, figsize=(6.0, 6.0), dpi=100):
        """The chart as a matplotlib Figure: first metric on top, clockwise, radius 0..1."""
        figure_cls, canvas_cls = _matplotlib()
        fig = figure_cls(figsize=figsize, dpi=dpi)
        canvas_cls(fig)
        ax = fig.add_subplot(111, polar=True)
        ax.spines["polar"].set_visible(False)
        ax.set_theta_offset(math.pi / 2)
        ax.set_theta_direction(-1)
        ax.set_xticks(self._angles[:-1])
        ax.set_xticklabels(self._names)
        ax.set_rlabel_position(0)
        ticks = _SCALES[self._scale]
        ax.set_yticks(ticks)
        ax.set_yticklabels([f"{t:g}" for t in ticks], color="grey", size=7)
        ax.set_ylim(0, 1)
        ax.plot(self._angles, [1.0] * len(self._angles), color="grey", linewidth=1)
        for row, label in zip(self._data, self._labels):
            vals = list(row) + [row[0]]
            line, = ax.plot(self._angles, vals, linewidth=1, label=label)
            ax.fill(self._angles, vals, alpha=0.1, color=line.get_color())
        if self._labels:
            ax.legend(loc="upper right", bbox_to_anchor=(0.0, 0.0))
        ax.set_title(self._title, y=1.1, color="g")
        return fig

    def save(self, path, figsize=(6.0, 6.0), dpi=100):
        """Writes the chart as a PNG (a temporary file renamed into place)."""
        fig = self.figure(figsize, dpi)
        folder = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(prefix=".radar-", suffix=".png", dir=folder)
        try:
            with os.fdopen(fd, "wb") as f:
                fig.savefig(f, format="png", dpi=dpi)
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return path

    def show(self, path="radar_metric.png"):
        """MindArmour shows the chart in a window; here it is saved as a PNG at path (returned)."""
        return self.save(path)

"""Graph-mode errors that point at the user: analysis adds a "called from file:line: text" line
per function call it unwinds through (innermost first, like a traceback read upwards); here each
frame that calls `self.<attr>(...)` also names the Cell it reached, `self.fc2 (Dense<...>)`,
found by walking the attribute paths down from the compiled Cell."""
import re

_FRAME = re.compile(r"^\s*called from .*?:\d+: (.*)$")
_SELF_CALL = re.compile(r"\bself((?:\.\w+)+)\s*\(")


def _short_repr(cell):
    text = repr(cell)
    if "\n" in text:  # a container: its type and settings, not its children
        text = f"{type(cell).__name__}<{cell.extend_repr()}>"
    return text


def _cells_of(frames, root):
    """For each frame text (innermost first), "self.x (Cell<...>)" or None."""
    from mycel.nn.cell import Cell
    labels = [None] * len(frames)
    obj = root
    for i in reversed(range(len(frames))):  # outermost first: self is the compiled Cell
        m = _SELF_CALL.search(frames[i]) if obj is not None else None
        if m is None:
            obj = None  # not a method call on self: the next frame's self is unknown
            continue
        target = obj
        for name in m.group(1).split(".")[1:]:
            target = getattr(target, name, None)
        if not isinstance(target, Cell):
            obj = None
            continue
        labels[i] = f"self{m.group(1)} ({_short_repr(target)})"
        obj = target
    return labels


def annotate(exc, compiled_obj):
    """Adds to each "called from" line of exc's message (or notes) the Cell it called."""
    root = getattr(compiled_obj, "__self__", compiled_obj)  # a bound method's instance
    args = getattr(exc, "args", ())
    if args and isinstance(args[0], str) and "called from " in args[0]:
        lines = args[0].split("\n")
        idx = [i for i, line in enumerate(lines) if _FRAME.match(line)]
        labels = _cells_of([_FRAME.match(lines[i]).group(1) for i in idx], root)
        for i, label in reversed(list(zip(idx, labels))):
            if label:
                lines.insert(i + 1, "    " + label)
        exc.args = ("\n".join(lines),) + tuple(args[1:])  # a SyntaxError keeps its location
        if isinstance(exc, SyntaxError):
            exc.msg = exc.args[0]
    notes = getattr(exc, "__notes__", None)
    if notes:
        idx = [i for i, n in enumerate(notes) if isinstance(n, str) and _FRAME.match(n)]
        labels = _cells_of([_FRAME.match(notes[i]).group(1) for i in idx], root)
        for i, label in reversed(list(zip(idx, labels))):
            if label and (i + 1 >= len(notes) or notes[i + 1] != "    " + label):
                notes.insert(i + 1, "    " + label)
    return exc

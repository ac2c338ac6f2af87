"""How graph-mode errors name the Cells on the way to them. Compile-time errors carry one
"called from file:line: text" line per call analysis unwound through, and run-time errors one per
call that inlining flattened (the IR's inlined-at chain); after each call that reached a Cell comes
that Cell's label, made here: its attribute path from the compiled Cell and its short repr,
"self.layers[1].fc (Dense<input_channels=9, output_channels=3, has_bias=True>)". The compiler asks
for a label once per Cell it parses, so a Cell reached through a loop over a CellList, a
SequentialCell or a local variable is named as exactly as one reached through `self.<attr>`."""


def _short_repr(cell):
    text = repr(cell)
    if "\n" in text:  # a container: its type and settings, not its children
        text = f"{type(cell).__name__}<{cell.extend_repr()}>"
    return text


def _path(name):
    """"layers.1.fc" -> "self.layers[1].fc" (CellList and SequentialCell items by index)."""
    out = "self"
    for part in name.split(".") if name else ():
        out += f"[{part}]" if part.isdigit() else f".{part}"
    return out


def label_path(label):
    """The attribute path inside a label: "self.layers[1].fc (Dense<...>)" -> "layers.1.fc",
    "self (Net<>)" -> ""; None for a Cell outside the compiled one's tree (a label with no path)."""
    path = label.split(" (", 1)[0]
    if path != "self" and not path.startswith(("self.", "self[")):
        return None
    return path[4:].replace("[", ".").replace("]", "").lstrip(".")


class CellLabels:
    """label(cell) for the Cells of one compilation rooted at `root` (a Cell, or None when a
    plain function is compiled: its Cells are named by their repr alone)."""

    def __init__(self, root):
        self._paths = {}
        if root is not None:
            for name, cell in root.cells_and_names():  # first path wins, as parameters' names do
                self._paths.setdefault(id(cell), _path(name))

    def __call__(self, cell):
        path = self._paths.get(id(cell))
        return f"{path} ({_short_repr(cell)})" if path else _short_repr(cell)

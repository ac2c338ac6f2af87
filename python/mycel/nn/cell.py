"""Cell: a model or layer. `construct` is the forward computation; calling the Cell runs it
(eagerly for now). Parameters and sub-Cells assigned as attributes are registered, so
`parameters_and_names()` walks the tree with hierarchical names, as in MindSpore."""
from collections import OrderedDict

from mycel import context
from mycel.common import api as _api
from mycel.common.parameter import Parameter


class Cell:
    """Base class of layers and models."""

    def __init__(self, auto_prefix=True, flags=None):
        object.__setattr__(self, "_params", OrderedDict())
        object.__setattr__(self, "_cells", OrderedDict())
        object.__setattr__(self, "training", False)
        object.__setattr__(self, "_auto_prefix", auto_prefix)

    def construct(self, *inputs, **kwargs):
        raise NotImplementedError(f"{type(self).__name__}.construct is not defined")

    def __call__(self, *inputs, **kwargs):
        if kwargs or context.get_context("mode") != context.GRAPH_MODE:
            return self.construct(*inputs, **kwargs)
        compiled = self.__dict__.get("_compiled")
        if compiled is None:  # graph mode: parse construct once, compile per input signature
            compiled = _api._Compiled(self, self.__dict__.get("_input_spec"))
            object.__setattr__(self, "_compiled", compiled)
        return compiled(*inputs)

    def forward(self, *inputs, **kwargs):
        """PyTorch-style alias of calling the Cell."""
        return self(*inputs, **kwargs)

    def set_inputs(self, *inputs):
        """Fixes graph mode's input signature; Tensor(shape=[None, ...]) dims accept any size,
        so one compiled Program serves every batch size."""
        object.__setattr__(self, "_input_spec", tuple(inputs))
        object.__setattr__(self, "_compiled", None)

    def compile_cache_clear(self):
        """Drops the compiled graphs (after changing the model's structure)."""
        object.__setattr__(self, "_compiled", None)

    # Attribute registration: Parameters and Cells live in their own tables.
    def __setattr__(self, name, value):
        params = self.__dict__.get("_params")
        cells = self.__dict__.get("_cells")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("call Cell.__init__ before assigning Parameters")
            if value.name is None:
                value.name = name
            cells.pop(name, None)
            self.__dict__.pop(name, None)
            params[name] = value
        elif isinstance(value, Cell):
            if cells is None:
                raise AttributeError("call Cell.__init__ before assigning sub-Cells")
            params.pop(name, None)
            self.__dict__.pop(name, None)
            cells[name] = value
        else:
            if params is not None and name in params:
                if value is not None:
                    raise TypeError(f"cannot assign {type(value).__name__} to Parameter '{name}'")
                del params[name]
            if cells is not None and name in cells:
                del cells[name]
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        d = self.__dict__
        if name in d.get("_params", ()):
            return d["_params"][name]
        if name in d.get("_cells", ()):
            return d["_cells"][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        if name in self._params:
            del self._params[name]
        elif name in self._cells:
            del self._cells[name]
        else:
            object.__delattr__(self, name)

    def insert_param_to_cell(self, param_name, param, check_name=True):
        """Registers `param` under `param_name`."""
        setattr(self, param_name, param)

    def insert_child_to_cell(self, child_name, child_cell):
        """Registers `child_cell` under `child_name`."""
        setattr(self, child_name, child_cell)

    def cells_and_names(self, cells=None, name_prefix=""):
        """(name, cell) for this Cell and every Cell below it, each once."""
        seen = set() if cells is None else cells
        if id(self) in seen:
            return
        seen.add(id(self))
        yield name_prefix, self
        for name, cell in self._cells.items():
            if cell is not None:
                yield from cell.cells_and_names(seen, f"{name_prefix}.{name}" if name_prefix else name)

    def name_cells(self):
        """The direct sub-Cells by attribute name."""
        return OrderedDict((k, v) for k, v in self._cells.items() if v is not None)

    def cells(self):
        """The direct sub-Cells."""
        return list(self.name_cells().values())

    def parameters_and_names(self, name_prefix="", expand=True):
        """(hierarchical name, Parameter) for every Parameter of the tree, each once."""
        seen = set()
        cells = self.cells_and_names(name_prefix=name_prefix) if expand else [(name_prefix, self)]
        for prefix, cell in cells:
            for name, p in cell._params.items():
                if p is None or id(p) in seen:
                    continue
                seen.add(id(p))
                yield (f"{prefix}.{name}" if prefix else name), p

    def get_parameters(self, expand=True):
        """Every Parameter of the tree."""
        for _, p in self.parameters_and_names(expand=expand):
            yield p

    def trainable_params(self, recurse=True):
        """The Parameters with requires_grad=True, in registration order."""
        return [p for p in self.get_parameters(expand=recurse) if p.requires_grad]

    def untrainable_params(self, recurse=True):
        """The Parameters with requires_grad=False."""
        return [p for p in self.get_parameters(expand=recurse) if not p.requires_grad]

    def parameters_dict(self, recurse=True):
        """OrderedDict of hierarchical name -> Parameter."""
        return OrderedDict(self.parameters_and_names(expand=recurse))

    def set_train(self, mode=True):
        """Sets training mode on this Cell and every sub-Cell."""
        for _, cell in self.cells_and_names():
            object.__setattr__(cell, "training", mode)
        return self

    def __repr__(self):
        lines = [f"{type(self).__name__}<"]
        for name, cell in self._cells.items():
            lines.append(f"  ({name}): " + repr(cell).replace("\n", "\n  "))
        return "\n".join(lines) + ">" if len(lines) > 1 else f"{type(self).__name__}<>"


class CellList(Cell):
    """A list of Cells, registered as sub-Cells "0", "1", ...; iterate over it in construct."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        if args:
            self.extend(args[0])

    def _renumber(self, cells):
        self._cells.clear()
        for i, c in enumerate(cells):
            if not isinstance(c, Cell):
                raise TypeError(f"CellList items must be Cells, got {type(c).__name__}")
            self._cells[str(i)] = c

    def __getitem__(self, index):
        items = list(self._cells.values())
        if isinstance(index, slice):
            return CellList(items[index])
        return items[index]

    def __setitem__(self, index, cell):
        items = list(self._cells.values())
        items[index] = cell
        self._renumber(items)

    def __delitem__(self, index):
        items = list(self._cells.values())
        del items[index]
        self._renumber(items)

    def __len__(self):
        return len(self._cells)

    def __iter__(self):
        return iter(list(self._cells.values()))

    def append(self, cell):
        self._renumber(list(self._cells.values()) + [cell])
        return self

    def extend(self, cells):
        self._renumber(list(self._cells.values()) + list(cells))
        return self

    def insert(self, index, cell):
        items = list(self._cells.values())
        items.insert(index, cell)
        self._renumber(items)

    def construct(self, *inputs):
        raise NotImplementedError("CellList is a container; iterate over it in a construct")


class SequentialCell(Cell):
    """Runs its Cells one after another: the output of each is the input of the next."""

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, cell in args[0].items():
                self.insert_child_to_cell(name, cell)
        else:
            cells = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple, CellList)) else args
            for i, cell in enumerate(cells):
                if not isinstance(cell, Cell):
                    raise TypeError(f"SequentialCell items must be Cells, got {type(cell).__name__}")
                self.insert_child_to_cell(str(i), cell)

    @property
    def cell_list(self):
        return list(self._cells.values())

    def __getitem__(self, index):
        items = list(self._cells.values())
        if isinstance(index, slice):
            return SequentialCell(items[index])
        return items[index]

    def __len__(self):
        return len(self._cells)

    def append(self, cell):
        self.insert_child_to_cell(str(len(self._cells)), cell)
        return self

    def construct(self, input_data):
        for cell in self.cell_list:
            input_data = cell(input_data)
        return input_data

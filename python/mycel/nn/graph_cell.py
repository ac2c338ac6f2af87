"""nn.GraphCell: a Cell over a graph loaded with mycel.load (MindSpore's GraphCell). Its program is
already compiled (the lite runtime's), so a call runs it directly in either mode; it has no
trainable parameters."""
from mycel.nn.cell import Cell


class GraphCell(Cell):
    def __init__(self, graph, params_init=None, obf_random_seed=None):
        super().__init__()
        from mycel.lite.graph import MindIRGraph
        if not isinstance(graph, MindIRGraph):
            raise TypeError(f"GraphCell: graph must come from mycel.load, got {type(graph).__name__}")
        if params_init is not None or obf_random_seed is not None:
            raise NotImplementedError("GraphCell: params_init and obf_random_seed are not supported")
        self.graph = graph

    def __call__(self, *inputs):
        return self.construct(*inputs)

    def construct(self, *inputs):
        from mycel.lite.graph import run_graph
        return run_graph(self.graph, inputs)

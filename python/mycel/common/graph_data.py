"""Reading CompiledGraph.graph_data (an optimized graph as plain data: params, nodes over
("param", i) / ("node", id) / ("const", value) references), shared by the exporters (MINDIR,
ONNX): the graph primitives that only route values between ops."""


def route(node, env, value, who):
    """Binds a routing primitive's result (tuple_getitem, depend, make_tuple) in env and
    returns True; returns False for an op node. value(ref) resolves an input reference. Any
    other graph primitive left in the graph is an error naming `who` (the exporter)."""
    if node["kind"] != "prim":
        return False
    op, ins, key = node["op"], node["inputs"], ("node", node["id"])
    if op == "tuple_getitem":
        env[key] = env[tuple(ins[0])][ins[1][1]]
    elif op == "depend":
        env[key] = value(ins[0])
    elif op == "make_tuple":
        env[key] = tuple(value(r) for r in ins)
    else:
        raise NotImplementedError(f"{who}: graph primitive {op} at {node['loc']}")
    return True

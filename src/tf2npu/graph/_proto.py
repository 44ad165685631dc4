"""Conversion between the IR and ``GraphDef``/``FunctionDef`` protos (lossless for TF's output).

Attr values stay the loaded proto messages; fields the IR does not model are kept in a
template proto (graph: versions, gradients, debug info; function: signature, attrs, arg attrs)
or, per node, in ``Node.extra``. Input strings are normalised to TF's canonical spelling
(``"x"`` for output 0 in a GraphDef), which is what TF itself writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tf2npu.errors import GraphError
from tf2npu.gcpause import gc_paused
from tf2npu.graph.ir import ORIGIN_ATTR, FunctionGraph, Graph, Node, TensorRef, _bump


def graph_from_proto(graph_def: Any) -> Graph:
    with gc_paused():  # see tf2npu.gcpause: 2.5x slower on 50k nodes otherwise
        return _graph_from_proto(graph_def)


def _graph_from_proto(graph_def: Any) -> Graph:
    gd = type(graph_def)()
    gd.CopyFrom(graph_def)
    graph = Graph()
    graph.template = _copy_except(gd, type(gd)(), "node")
    functions: Iterable[Any] = ()
    if gd.HasField("library"):
        _copy_except(gd.library, graph.template.library, "function").SetInParent()
        functions = gd.library.function
    _fill(graph, gd.node, function_syntax=False)
    for fd in functions:
        body = function_from_proto(fd, graph)
        if body.name in graph.functions:
            raise GraphError(f"the function library defines {body.name!r} twice")
        graph.functions[body.name] = body
    return graph


def _copy_except(source: Any, target: Any, *skip: str) -> Any:
    """Copies every set field of ``source`` but ``skip`` (and ``library``, done by the caller).

    Cheaper than copying the whole graph and clearing its nodes: the nodes are most of it.
    """
    for field, value in source.ListFields():
        if field.name in skip or field.name == "library":
            continue
        if field.label == field.LABEL_REPEATED or field.message_type is not None:
            getattr(target, field.name).MergeFrom(value)
        else:
            setattr(target, field.name, value)
    return target


def function_from_proto(fd: Any, parent: Graph | None = None) -> FunctionGraph:
    body = FunctionGraph(fd.signature.name, parent)
    body.args = tuple(arg.name for arg in fd.signature.input_arg)
    _fill(body, fd.node_def, function_syntax=True)
    body.ret = {key: _parse(body, key, value) for key, value in fd.ret.items()}
    body.control_ret = dict(fd.control_ret)
    template = type(fd)()
    template.CopyFrom(fd)
    for field in ("node_def", "ret", "control_ret"):
        template.ClearField(field)
    body.template = template
    return body


def _parse(graph: Graph, where: str, text: str) -> TensorRef:
    try:
        return TensorRef.parse(text)
    except GraphError as err:
        raise GraphError(f"{graph.label}, {where!r}: {err}") from None


def _fill(graph: Graph, node_defs: Iterable[Any], *, function_syntax: bool) -> None:
    nodes = graph._nodes
    refs: dict[str, TensorRef] = {}  # one TensorRef per distinct input string
    for nd in node_defs:
        name = nd.name
        if name in nodes or (function_syntax and graph.has_source(name)):
            raise GraphError(f"{graph.label}: node name {name!r} is used twice")
        attrs = dict(nd.attr)
        node = Node(graph, name, nd.op, device=nd.device, attrs=attrs)
        if ORIGIN_ATTR in attrs:
            node.origin = tuple(s.decode() for s in attrs.pop(ORIGIN_ATTR).list.s)
        if nd.HasField("experimental_debug_info") or nd.HasField("experimental_type"):
            node.extra = nd
        nodes[name] = node
        _fill_inputs(graph, node, nd.input, function_syntax, refs)


def _fill_inputs(
    graph: Graph,
    node: Node,
    texts: Iterable[str],
    function_syntax: bool,
    refs: dict[str, TensorRef],
) -> None:
    name = node.name
    data, control = graph._data_users, graph._control_users
    for text in texts:
        if text.startswith("^"):
            node._control.append(text[1:])
            _bump(control, text[1:], name)
            continue
        if node._control:
            raise GraphError(
                f"{graph.label}, node {name!r}: data input {text!r} comes after a control "
                "input; TF requires data inputs first"
            )
        ref = refs.get(text)
        if ref is None:
            ref = refs[text] = _parse(graph, name, text) if ":" in text else TensorRef(text)
            if ref.output_arg is not None and not function_syntax:
                raise GraphError(
                    f"{graph.label}, node {name!r}: input {text!r} uses the function-body "
                    "syntax 'node:output_arg:index' in a GraphDef; expected 'node' or 'node:index'"
                )
        node._inputs.append(ref)
        users = data.get(ref.node)  # _bump, inlined: this loop runs once per edge
        if users is None:
            data[ref.node] = {name: 1}
        else:
            users[name] = users.get(name, 0) + 1


def graph_to_proto(graph: Graph) -> Any:
    if graph.template is not None:
        out = type(graph.template)()
        out.CopyFrom(graph.template)
    else:
        from tensorflow.core.framework import graph_pb2

        out = graph_pb2.GraphDef()
    _emit_nodes(out.node, graph)
    if graph.functions:
        library = out.library.function
        for body in graph.functions.values():
            library.add().CopyFrom(function_to_proto(body))
    return out


def function_to_proto(body: FunctionGraph) -> Any:
    if body.template is not None:
        fd = type(body.template)()
        fd.CopyFrom(body.template)
    else:
        from tensorflow.core.framework import function_pb2

        fd = function_pb2.FunctionDef()
        fd.signature.name = body.name
    _emit_nodes(fd.node_def, body)
    for key, ref in body.ret.items():
        fd.ret[key] = str(ref)
    for key, name in body.control_ret.items():
        fd.control_ret[key] = name
    return fd


def _emit_nodes(target: Any, graph: Graph) -> None:
    for node in graph._nodes.values():
        nd = target.add()
        nd.name = node.name
        nd.op = node.op
        if node._inputs or node._control:
            nd.input.extend([*map(str, node._inputs), *("^" + c for c in node._control)])
        if node.device:
            nd.device = node.device
        attr = nd.attr
        for key, value in node.attrs.items():
            attr[key].CopyFrom(value)
        if node.origin:
            attr[ORIGIN_ATTR].list.s.extend(o.encode() for o in node.origin)
        extra = node.extra
        if extra is not None:
            if extra.HasField("experimental_debug_info"):
                nd.experimental_debug_info.CopyFrom(extra.experimental_debug_info)
            if extra.HasField("experimental_type"):
                nd.experimental_type.CopyFrom(extra.experimental_type)

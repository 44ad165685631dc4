"""The gradient subgraph of a forward match, as TF's autodiff built it, and its replacement.

In a training graph the intermediates of a forward pattern (gelu's ``tanh``, layer norm's
``mean``) are also read by the ops ``tf.gradients`` built for the pattern, so the forward
fusion alone would leave them alive. GE fuses both halves: the forward op and the device's
gradient op (``Gelu``/``GeluGrad``, ``LayerNorm``/``LayerNormGrad``). :func:`find_gradient`
recovers the gradient half of a match without knowing each op's gradient function:

* **its nodes**: every node TF named ``<scope>/<p>_grad/...`` for a pattern node ``p``
  (``scope`` is ``gradients``, ``gradients_1``, ``outer/gradients``...; ``tf.gradients`` builds
  each op's gradient under that name), reached from the readers of the pattern's nodes and
  inputs, plus the ``AddN`` nodes summing the contributions to an intermediate read twice
  (``<scope>/AddN_k``) when everything they read and everything reading them is in the region;
* **what it reads**: besides the pattern's nodes, its inputs and constants, exactly one tensor,
  ``dy``, the gradient of the root's output;
* **what it gives**: each tensor read from outside is the contribution of the pattern node
  ``p`` that computed it to the gradient of the one pattern input ``p`` reads (``x``,
  ``gamma``...). Several contributions to one input are summed by one ``AddN`` outside the
  region: when it sums only them it is replaced as a whole; when it also sums other
  contributions (a residual connection) a new ``AddN`` replaces it, with the one new gradient in
  place of the pattern's contributions.

Nothing here changes the graph: :meth:`GradientRegion.part` returns a :class:`GradientPart`
that :func:`tf2npu.graph.fusion.rewrite.rewrite` applies with the forward half.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tf2npu.graph.decisions import PLACEMENT, SUPERSEDED, Placement, is_fetch_only
from tf2npu.graph.fusion.pattern import Match, dtype_of
from tf2npu.graph.fusion.rewrite import GradientPart, NewNode, Prev
from tf2npu.graph.ir import FunctionGraph, Graph, Node, TensorRef

__all__ = ["GradientRegion", "find_gradient", "owner"]

_SCOPE = re.compile(r"(?:^|/)gradients(?:_\d+)?/")
_INERT = frozenset({"Const", "NoOp"})


def owner(name: str, forward: Iterable[str]) -> tuple[str, str] | None:
    """``(scope, p)`` when ``name`` is ``<scope>p_grad/...`` for ``p`` in ``forward``.

    >>> owner("gradients/ln/mul_grad/Mul_1", {"ln/mul", "ln/add"})
    ('gradients/', 'ln/mul')
    >>> owner("gradients/ln/mul_1_grad/Mul", {"ln/mul"}) is None
    True
    """
    names = forward if isinstance(forward, (set, frozenset, dict)) else set(forward)
    for found in _SCOPE.finditer(name):
        rest = name[found.end() :]
        cut = rest.find("_grad/")
        while cut >= 0:
            if rest[:cut] in names:
                return name[: found.end()], rest[:cut]
            cut = rest.find("_grad/", cut + 1)
    return None


def _client(node: Node) -> str:
    return node.origin[0] if node.origin else node.name


@dataclass(frozen=True)
class _Sum:
    """The ``AddN`` summing several contributions to one pattern input."""

    node: Node
    others: tuple[TensorRef, ...]  # its inputs that are not the pattern's contributions


@dataclass(frozen=True)
class GradientRegion:
    """The gradient half of a match: its nodes, ``dy``, and where each input's gradient goes.

    ``contributions`` maps a pattern input label to the region's tensors that sum to its
    gradient; ``sums`` names the ``AddN`` outside the region that adds several of them.
    """

    nodes: tuple[Node, ...]
    dy: TensorRef
    contributions: Mapping[str, tuple[TensorRef, ...]]
    sums: Mapping[str, _Sum]

    def part(self, steps: Sequence[NewNode], first: int, grads: Mapping[str, Prev]) -> GradientPart:
        """The rewrite: ``steps`` (the gradient op(s), numbered from ``first`` after the forward
        steps) and ``grads`` (input label -> the new tensor carrying its whole gradient)."""
        all_steps = list(steps)
        outputs: dict[TensorRef, Prev] = {}
        superseded = list(self.nodes)
        for label, new in grads.items():
            refs = self.contributions.get(label, ())
            total = self.sums.get(label)
            if total is None:
                for ref in refs:  # one contribution: its readers read the new gradient
                    outputs[ref] = new
                continue
            superseded.append(total.node)
            if not total.others:
                outputs[total.node.output(0)] = new
                continue
            attrs = dict(total.node.attrs)
            attrs["N"] = _int_attr(1 + len(total.others))
            all_steps.append(NewNode("grad_sum", "AddN", (new, *total.others), attrs, ("sum",)))
            outputs[total.node.output(0)] = Prev(first + len(all_steps) - 1)
        return GradientPart(tuple(n.name for n in superseded), tuple(all_steps), outputs)


def _int_attr(value: int) -> Any:
    from tensorflow.core.framework import attr_value_pb2

    return attr_value_pb2.AttrValue(i=value)


def find_gradient(
    graph: Graph, m: Match, inputs: Mapping[str, TensorRef], exported: Iterable[str] = ()
) -> GradientRegion | str | None:
    """The gradient region of ``m``; ``inputs`` are the pattern inputs (by label) whose
    gradients the device op computes (its other inputs may have none, or an unread one).

    ``None`` when no node outside the pattern reads an interior node (a forward graph: the
    forward fusion alone applies); a short reason (``str``) when something does but it is not a
    gradient region this module can replace (the fusion is then refused). Readers of the
    ``exported`` interior nodes (whose values a fused output carries) that are not gradient ops
    read that output and are left alone.
    """
    if isinstance(graph, FunctionGraph):
        return None
    forward = {n.name: n for n in m.nodes.values()}
    clients = {_client(n): n for n in forward.values()}
    carried = set(exported)
    seeds = [
        user
        for node in m.interior()
        for user in graph.consumers(node)
        if user.name not in forward
        and not is_fetch_only(graph, user)
        and (node.name not in carried or owner(_client(user), clients) is not None)
    ]
    if not seeds:
        return None
    scope = owner(_client(seeds[0]), clients)
    if scope is None:
        return f"{seeds[0].name} reads the pattern and is not its gradient"
    # gradient ops reading only the pattern's inputs (Pow's Shape(x)) belong to it too
    for ref in m.tensors.values():
        for user in graph.consumers(ref.node):
            found = owner(_client(user), clients)
            if found is not None and found[0] == scope[0] and user not in seeds:
                seeds.append(user)
    region = _collect(graph, seeds, scope[0], clients, forward)
    if isinstance(region, str):
        return region
    return _check(graph, m, region, scope[0], clients, forward, inputs)


def _collect(
    graph: Graph,
    seeds: list[Node],
    scope: str,
    clients: Mapping[str, Node],
    forward: Mapping[str, Node],
) -> dict[str, Node] | str:
    region: dict[str, Node] = {}
    memo: dict[str, bool] = {}

    def owned(node: Node) -> bool:
        known = memo.get(node.name)
        if known is None:
            found = owner(_client(node), clients)
            known = memo[node.name] = found is not None and found[0] == scope
        return known

    for seed in seeds:
        if not owned(seed):
            return f"{seed.name} reads the pattern and is not its gradient"
    queue = list(seeds)
    sums: dict[str, Node] = {}  # AddN readers of the region: candidates, checked when it stops
    while queue:
        while queue:
            node = queue.pop()
            if node.name in region:
                continue
            region[node.name] = node
            sums.pop(node.name, None)
            for near in _neighbours(graph, node):
                if near.name in region or near.name in forward:
                    continue
                if owned(near):
                    queue.append(near)
                elif near.op == "AddN" and near.name.startswith(scope):
                    sums[near.name] = near
        # AddN summing contributions to an intermediate read twice: all in, all out inside
        for name, user in list(sums.items()):
            inner = all(r.node in region for r in user.inputs)
            readers = graph.consumers(user)
            if inner and readers and all(r.name in region or owned(r) for r in readers):
                del sums[name]
                queue.append(user)
                queue.extend(r for r in readers if r.name not in region)
    return region


def _neighbours(graph: Graph, node: Node) -> list[Node]:
    near = [graph.get(r.node) for r in node.inputs]
    near += [graph.get(name) for name in node.control_inputs]
    found = [n for n in near if n is not None]
    return found + graph.consumers(node) + graph.consumers(node, control=True)


def _check(
    graph: Graph,
    m: Match,
    region: dict[str, Node],
    scope: str,
    clients: Mapping[str, Node],
    forward: Mapping[str, Node],
    inputs: Mapping[str, TensorRef],
) -> GradientRegion | str:
    dtype = dtype_of(m.root)
    known = set(m.tensors.values())
    foreign: dict[TensorRef, Node] = {}
    for node in region.values():
        reason = _usable(node, dtype, region, forward)
        if reason is not None:
            return reason
        for ref in node.inputs:
            producer = graph.get(ref.node)
            if producer is None:
                return f"{node.name} reads a function argument"
            inside = ref.node in region or ref.node in forward or ref in known
            if not inside and producer.op != "Const":
                foreign[ref] = node
    if len(foreign) != 1:
        names = ", ".join(sorted(str(r) for r in foreign)) or "nothing"
        return f"the gradient of {m.root.name} reads {names}, not one incoming gradient"
    # the one gradient entering the region is the root output's (TF's Add gradient passes it
    # on unchanged where the shapes agree, so its reader may be another pattern node's)
    ((dy, _),) = foreign.items()
    contributions = _contributions(graph, region, scope, clients, inputs)
    if isinstance(contributions, str):
        return contributions
    sums: dict[str, _Sum] = {}
    for label, refs in contributions.items():
        if len(refs) > 1:
            total = _sum_of(graph, region, label, refs)
            if isinstance(total, str):
                return total
            sums[label] = total
    return GradientRegion(tuple(region.values()), dy, contributions, sums)


def _usable(
    node: Node, dtype: int | None, region: Mapping[str, Node], forward: Mapping[str, Node]
) -> str | None:
    """Why ``node`` cannot be replaced with the fusion (rewritten, on the host, other dtype)."""
    if SUPERSEDED in node.meta:
        return f"{node.name} was already rewritten"
    if node.op in _INERT:
        return None
    placement = node.meta.get(PLACEMENT)
    if not isinstance(placement, Placement) or not placement.device:
        return f"{node.name} is not placed on the device"
    computes = dtype_of(node)
    float_op = computes in (1, 2, 14, 19)
    if float_op and dtype is not None and computes != dtype and node.op not in ("Shape", "Cast"):
        return f"{node.name} computes in another dtype than the pattern"
    for name in node.control_inputs:
        if name not in region and name not in forward:
            return f"{node.name} has a control input from {name}"
    return None


def _contributions(
    graph: Graph,
    region: Mapping[str, Node],
    scope: str,
    clients: Mapping[str, Node],
    inputs: Mapping[str, TensorRef],
) -> dict[str, tuple[TensorRef, ...]] | str:
    """The region's tensors read from outside, by the pattern input whose gradient each is."""
    found: dict[str, dict[TensorRef, None]] = {}
    for node in region.values():
        for user in graph.consumers(node, control=True):
            if user.name not in region:
                return f"{user.name} waits on {node.name} of the gradient"
        outside = [
            ref
            for user in graph.consumers(node)
            if user.name not in region and not is_fetch_only(graph, user)
            for ref in user.inputs
            if ref.node == node.name
        ]
        if not outside:
            continue
        scoped = owner(_client(node), clients)
        p = clients[scoped[1]] if scoped is not None else None
        labels = {label for label, ref in inputs.items() if p is not None and ref in p.inputs}
        if len(labels) != 1:
            return f"{outside[0]} leaves the gradient of the pattern and is no input's gradient"
        bucket = found.setdefault(next(iter(labels)), {})
        for ref in outside:
            bucket[ref] = None
    return {label: tuple(refs) for label, refs in found.items()}


def _sum_of(
    graph: Graph, region: Mapping[str, Node], label: str, refs: tuple[TensorRef, ...]
) -> _Sum | str:
    readers = {
        u.name: u
        for ref in refs
        for u in graph.consumers(ref.node)
        if u.name not in region and ref in u.inputs and not is_fetch_only(graph, u)
    }
    if len(readers) != 1:
        return f"the contributions to the gradient of {label} are read by {sorted(readers)}"
    (total,) = readers.values()
    mine = [r for r in total.inputs if r in refs]
    if total.op != "AddN" or len(mine) != len(refs):
        return f"{total.name} ({total.op}) does not sum the gradient of {label} once"
    return _Sum(total, tuple(r for r in total.inputs if r not in refs))

"""The fusion-rule registry: one class per rule, one file per rule under ``fusion/rules/``.

A rule has a snake_case ``name`` (what our docs, stats and reports use), the Ascend pass names
it answers to in a ``fusion_switch_file`` (``aliases``), and a ``category`` (``GraphFusion`` or
``UBFusion``, the two sections of that file). ``apply`` tries the rule at one node: it matches
the pattern that ends at ``root`` and, when it matches, rewrites the graph (new nodes named with
``graph.new_name`` and ``origin`` set, the replaced originals marked with
:func:`tf2npu.graph.decisions.supersede`) and returns the new node. Rules implement ``match``,
which returns a :class:`~tf2npu.graph.fusion.rewrite.Fusion` and changes nothing; ``apply``
hands it to :func:`~tf2npu.graph.fusion.rewrite.rewrite`, shared by every rule.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, TypeVar

from tf2npu.config.fusion_switch import CATEGORIES
from tf2npu.errors import InternalError
from tf2npu.graph.fusion.rewrite import Fusion, rewrite
from tf2npu.graph.ir import Graph, Node

__all__ = ["RULES", "FusionRule", "register_rule"]


class FusionRule(ABC):
    """One rewrite rule."""

    name: ClassVar[str]
    category: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    #: Op types a pattern can end at; the fusion pass calls ``apply`` only on those.
    roots: ClassVar[frozenset[str]]

    @abstractmethod
    def match(self, graph: Graph, root: Node) -> Fusion | None:
        """The rewrite of the pattern ending at ``root`` if it matches and may be fused.

        Changes nothing: the fusion pass also calls it for rules the switch file turned off, to
        report what they would have fused.
        """

    def apply(self, graph: Graph, root: Node) -> Node | None:
        """Rewrite the pattern ending at ``root`` if it matches; the new node, else ``None``."""
        fusion = self.match(graph, root)
        return None if fusion is None else rewrite(graph, fusion, self.name)


R = TypeVar("R", bound=type[FusionRule])

RULES: dict[str, type[FusionRule]] = {}
"""Rule classes by name, in registration order (the order the fusion pass tries them)."""


def register_rule(rule: R) -> R:
    """Class decorator adding ``rule`` to :data:`RULES`."""
    if rule.category not in CATEGORIES:
        raise InternalError(f"fusion rule {rule.name!r}: category must be one of {CATEGORIES}")
    if rule.name in RULES:
        raise InternalError(f"fusion rule {rule.name!r} is registered twice")
    RULES[rule.name] = rule
    return rule

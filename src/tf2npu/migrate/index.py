"""One walk over a module that every rule and the API analysis share.

The walk records each resolved API reference (calls, attribute references, decorators, base
classes) under its canonical name, the parent of every node (rules edit statements and need their
blocks), and the method calls on unresolved receivers (``ds.batch(...)``) that type inference
may later prove to be API calls. Rules look things up here instead of walking the tree again.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from dataclasses import dataclass, field

from tf2npu.migrate.names import Resolver, Scope, _dotted, child_nodes, is_tf_api


@dataclass(frozen=True, slots=True)
class Ref:
    """A resolved reference to an API: the dotted-name node and what it means."""

    node: ast.expr
    name: str
    kind: str
    """``call``, ``attribute``, ``decorator`` or ``base``."""
    scope: Scope
    call: ast.Call | None = None


@dataclass(frozen=True, slots=True)
class MethodCall:
    """``<receiver>.<method>(...)`` where the receiver is not a plain resolved name."""

    call: ast.Call
    method: str
    receiver: ast.expr
    scope: Scope


_STATEMENTS = frozenset(ast.stmt.__subclasses__())
"""Every statement type (``isinstance(node, ast.stmt)`` by one set lookup)."""
_SPECIAL = frozenset(
    {ast.Call, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.With}
)
"""The nodes :meth:`ModuleIndex._children` treats apart (calls, scopes, ``with``)."""


@dataclass(slots=True)
class ModuleIndex:
    """What the shared walk found in one module."""

    tree: ast.Module
    resolver: Resolver
    parents: dict[int, ast.AST] = field(default_factory=dict)
    refs: list[Ref] = field(default_factory=list)
    calls: dict[str, list[Ref]] = field(default_factory=lambda: defaultdict(list))
    by_call: dict[int, Ref] = field(default_factory=dict)
    """id(call) -> the resolved reference of its callee."""
    method_calls: dict[str, list[MethodCall]] = field(default_factory=lambda: defaultdict(list))
    scopes: dict[int, Scope] = field(default_factory=dict)
    """id(statement) -> scope it executes in, for every statement."""
    withs: list[ast.With] = field(default_factory=list)
    functions: list[ast.FunctionDef] = field(default_factory=list)
    _nodes: tuple[ast.AST, ...] | None = field(default=None, repr=False)
    _tree_parents: dict[int, ast.AST] | None = field(default=None, repr=False)

    @classmethod
    def build(cls, tree: ast.Module, text: str | None = None) -> ModuleIndex:
        """Index ``tree``; ``text``, its source, lets the scope pass skip expressions.

        Without a ``:=`` in the text no expression binds a name, so the scope pass need not
        walk them (this walk reaches every lambda and has its scope made then). On the
        benchmark corpus the scope pass takes 0.019 s instead of 0.032 s, the index 0.091 s
        instead of 0.102 s.
        """
        expressions = text is None or ":=" in text
        index = cls(tree, Resolver(tree, expressions=expressions))
        index._walk()
        index.refs.sort(key=lambda r: (r.node.lineno, r.node.col_offset))
        return index

    # -- queries ----------------------------------------------------------------------------
    def nodes(self) -> tuple[ast.AST, ...]:
        """Every node of the tree in ``ast.walk`` order, walked once and kept.

        Rules that scan the whole module (the Horovod family, ``entry_point``, project facts)
        share this one walk instead of each running ``ast.walk`` again.
        """
        if self._nodes is None:
            self._walk_tree()
        assert self._nodes is not None
        return self._nodes

    def tree_parents(self) -> dict[int, ast.AST]:
        """id(node) -> its parent in the tree, for every node but the module.

        Unlike :attr:`parents` (the walk's view: it skips the inside of dotted names, and
        gives a function's defaults and annotations the function), this is the syntax
        tree's own. It comes with :meth:`nodes`, from the same walk: the Horovod rules need
        both, and each was a walk over every node.
        """
        if self._tree_parents is None:
            self._walk_tree()
        assert self._tree_parents is not None
        return self._tree_parents

    def _walk_tree(self) -> None:
        nodes: list[ast.AST] = [self.tree]
        parents: dict[int, ast.AST] = {}
        for node in nodes:  # names.walk(), recording each child's parent on the way
            children = child_nodes(node)
            for child in children:
                parents[id(child)] = node
            nodes += children
        self._nodes, self._tree_parents = tuple(nodes), parents

    def calls_to(self, *names: str) -> list[Ref]:
        """Call references whose callee is one of ``names`` (canonical), in source order."""
        found = [ref for name in names for ref in self.calls.get(name, ())]
        found.sort(key=lambda r: (r.node.lineno, r.node.col_offset))
        return found

    def callee(self, call: ast.Call) -> str | None:
        """Canonical name of a call's callee, when it resolves."""
        ref = self.by_call.get(id(call))
        return ref.name if ref is not None else None

    def uses(self, prefix: str) -> bool:
        """True when any resolved reference starts with ``prefix`` (a canonical name)."""
        dotted = prefix + "."
        return any(r.name == prefix or r.name.startswith(dotted) for r in self.refs)

    def parent(self, node: ast.AST) -> ast.AST | None:
        return self.parents.get(id(node))

    def statement_of(self, node: ast.AST) -> ast.stmt:
        """The innermost statement containing ``node``."""
        current: ast.AST | None = node
        while current is not None and not isinstance(current, ast.stmt):
            current = self.parents.get(id(current))
        if current is None:
            raise ValueError("node is not inside a statement")
        return current

    def scope_at(self, stmt: ast.stmt) -> Scope:
        return self.scopes.get(id(stmt), self.resolver.module)

    # -- the walk ---------------------------------------------------------------------------
    def _walk(self) -> None:
        resolver = self.resolver
        stack: list[tuple[ast.AST, ast.AST, Scope, str]] = [
            (stmt, self.tree, resolver.module, "") for stmt in reversed(self.tree.body)
        ]
        parents, scopes = self.parents, self.scopes
        pop, push = stack.pop, stack.append
        while stack:
            node, parent, scope, role = pop()
            parents[id(node)] = parent
            kind = type(node)
            if kind in _STATEMENTS:
                scopes[id(node)] = scope
            elif (kind is ast.Name or kind is ast.Attribute) and type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
                if self._reference(node, scope, role, parent):  # type: ignore[arg-type]
                    continue
            if kind in _SPECIAL:
                for child, child_scope, child_role in reversed(self._children(node, scope)):
                    push((child, node, child_scope, child_role))
            else:  # most nodes: their children, in the same scope, with no role
                for child in reversed(child_nodes(node)):
                    push((child, node, scope, ""))

    def _reference(self, node: ast.expr, scope: Scope, role: str, parent: ast.AST | None) -> bool:
        """Record a maximal dotted name; True when its parts need no further walking."""
        parts = _dotted(node)
        if parts is None:
            return False
        name = self.resolver.qualified_parts(parts, scope)
        if name is None:
            return True
        kind = role or "attribute"
        call = parent if kind == "call" and isinstance(parent, ast.Call) else None
        ref = Ref(node, name, kind, scope, call)
        if call is not None:
            self.calls[name].append(ref)
            self.by_call[id(call)] = ref
        if is_tf_api(name):
            self.refs.append(ref)
        return True

    def _children(self, node: ast.AST, scope: Scope) -> list[tuple[ast.AST, Scope, str]]:
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and _dotted(func) is None:
                self.method_calls[func.attr].append(MethodCall(node, func.attr, func.value, scope))
            elif isinstance(func, ast.Attribute):
                self._maybe_method(node, func, scope)
            rest = [(a, scope, "") for a in child_nodes(node) if a is not func]
            return [(func, scope, "call"), *rest]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return self._scoped_children(node, scope)
        if isinstance(node, ast.With):
            self.withs.append(node)
        return [(child, scope, "") for child in child_nodes(node)]

    def _maybe_method(self, call: ast.Call, func: ast.Attribute, scope: Scope) -> None:
        """A dotted callee whose receiver is a local variable (``ds.batch``): a method call."""
        parts = _dotted(func)
        assert parts is not None
        if self.resolver.resolve_name(parts[0], scope) is None:
            self.method_calls[func.attr].append(MethodCall(call, func.attr, func.value, scope))

    def _scoped_children(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef, scope: Scope
    ) -> list[tuple[ast.AST, Scope, str]]:
        inner = self.resolver.scope_of.get(id(node))
        if inner is None:  # a lambda the scope pass did not visit
            assert isinstance(node, ast.Lambda)
            inner = self.resolver.lambda_scope(node, scope)
        out: list[tuple[ast.AST, Scope, str]] = []
        out += self._decorators(node, scope)
        if isinstance(node, ast.ClassDef):
            out += [(b, scope, "base") for b in node.bases]
            out += [(k, scope, "") for k in node.keywords]
            out += [(s, inner, "") for s in node.body]
            return out
        args = node.args
        out += [(d, scope, "") for d in args.defaults]
        out += [(d, scope, "") for d in args.kw_defaults if d is not None]
        if isinstance(node, ast.Lambda):
            return [*out, (node.body, inner, "")]
        if isinstance(node, ast.FunctionDef):
            self.functions.append(node)
        every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
        out += [(a.annotation, scope, "") for a in every if a is not None and a.annotation]
        if node.returns is not None:
            out.append((node.returns, scope, ""))
        out += [(s, inner, "") for s in node.body]
        return out

    def _decorators(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef, scope: Scope
    ) -> list[tuple[ast.AST, Scope, str]]:
        """Decorators, and the callee of a decorator call (``@tf.function(...)``), as decorators."""
        out: list[tuple[ast.AST, Scope, str]] = []
        for deco in getattr(node, "decorator_list", ()):
            if isinstance(deco, ast.Call):
                out.append((deco.func, scope, "decorator"))
                out += [(a, scope, "") for a in child_nodes(deco) if a is not deco.func]
                self.parents[id(deco)] = node
            else:
                out.append((deco, scope, "decorator"))
        return out

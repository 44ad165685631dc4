"""Alias-aware name resolution: which API does ``tf1.layers.Dense`` or ``Dense`` mean here?

Python's own scoping is followed: a name bound anywhere in a function is local to it, class
bodies are not visible from their methods, ``global`` names belong to the module. A name bound
only by imports and by plain alias assignments (``tf = tf.compat.v1``, ``layers = tf.layers``)
resolves to a module path; a name with any other binding (a parameter, ``tf = make()``, a loop
variable) does not resolve, so a user's own ``model.profile()`` or ``x.batch()`` is never taken for
a TensorFlow API.

Module paths are then canonicalised to the names the Ascend support list uses: ``tensorflow`` and
``tensorflow.compat.v1`` become ``tf``, ``horovod.tensorflow`` becomes ``hvd``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

# Longest prefix first. The TF 1.x API is the same object as tf.compat.v1 in TF 1.15.
_CANONICAL_PREFIXES: tuple[tuple[str, str], ...] = (
    ("tensorflow.compat.v1.compat.v1", "tf"),
    ("tensorflow.compat.v1", "tf"),
    ("tensorflow.compat.v2", "tf.compat.v2"),
    ("tensorflow.python.keras", "tf.keras"),
    ("tensorflow.python.platform.app", "tf.app"),
    ("tensorflow.python.platform.flags", "tf.flags"),
    ("tensorflow_estimator.python.estimator.estimator", "tf.estimator"),
    ("tensorflow_estimator.python.estimator.run_config", "tf.estimator"),
    ("tensorflow_estimator.python.estimator.model_fn", "tf.estimator"),
    ("tensorflow_estimator.estimator", "tf.estimator"),
    ("tensorflow_estimator", "tf.estimator"),
    ("tensorflow", "tf"),
    ("horovod.tensorflow.keras", "hvd.keras"),
    ("horovod.keras", "hvd.keras"),
    ("horovod.tensorflow", "hvd"),
)

TF_ROOTS = ("tf", "hvd")


def canonical(path: str) -> str:
    """Map a full module path to the canonical API name (``tensorflow.nn.x`` -> ``tf.nn.x``)."""
    name = _CANONICAL.get(path)
    if name is None:
        if len(_CANONICAL) >= _CANONICAL_KEPT:
            _CANONICAL.clear()
        name = _CANONICAL[path] = _canonical(path)
    return name


_CANONICAL: dict[str, str] = {}
"""Paths already mapped: a module's API names repeat (the corpus maps 4,947 paths, 1,021
distinct), and each mapping tries up to 15 prefixes."""
_CANONICAL_KEPT = 100_000
"""The most paths kept (a bound for a process that migrates many trees)."""


def _canonical(path: str) -> str:
    for prefix, short in _CANONICAL_PREFIXES:
        if path == prefix or path.startswith(prefix + "."):
            rest = path[len(prefix) :]
            name = short + rest
            if name.startswith("tf.compat.v1."):
                name = "tf." + name[len("tf.compat.v1.") :]
            return name
    return path


def is_tf_api(name: str) -> bool:
    """True for canonical names rooted at ``tf`` or ``hvd`` (the APIs the support list covers)."""
    root = name.split(".", 1)[0]
    return root in TF_ROOTS


_NEVER_NODES = frozenset(
    {"ctx", "op", "ops", "id", "attr", "name", "arg", "module", "level", "type_comment", "kind",
     "conversion", "is_async", "simple", "asname", "rest", "kwd_attrs", "tag"}
)  # fmt: skip
"""Fields that hold no node the migration looks at: strings, numbers, and the shared singleton
nodes of contexts and operators (``Load``, ``Add``, ``Eq``: a third of a module's nodes; every
check reads them through their parent's ``ctx``/``op``/``ops``). The list fields left hold only
nodes and None (the lists of names, ``Global.names`` and ``MatchClass.kwd_attrs``, are out)."""
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(kind: type) -> tuple[str, ...]:
    fields = tuple(f for f in kind._fields if f not in _NEVER_NODES)  # type: ignore[attr-defined]
    if kind is ast.Constant or kind in (
        ast.Global,
        ast.Nonlocal,
    ):  # its value is a Python constant, never a node
        fields = ()
    _CHILD_FIELDS[kind] = fields
    return fields


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The direct children of ``node`` in ``ast.iter_child_nodes`` order, without the context
    and operator singletons (``ctx``, ``op``, ``ops``): a faster loop over the fields that can
    hold nodes.

    The migration walks every module several times (scopes, index, rules); this reads only
    those fields, known per node type, with ``getattr``.
    """
    children: list[ast.AST] = []
    kind = type(node)
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = _child_fields(kind)
    for name in fields:
        value = getattr(node, name, None)
        if value is None:
            continue
        if type(value) is list:  # nodes, and None for a `**d` key or a missing kw default
            children += [item for item in value if item is not None]
        elif isinstance(value, ast.AST):
            children.append(value)
    return children


def walk(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` in ``ast.walk`` order (breadth first), as a list."""
    nodes = [tree]
    for node in nodes:  # the list grows while it is read: a queue without pops
        nodes += child_nodes(node)
    return nodes


_BLOCKS = frozenset({*ast.stmt.__subclasses__(), ast.ExceptHandler, ast.match_case})
"""Statements and the parts of statements that hold statements (``except``, ``case``)."""


def statements(tree: ast.AST) -> list[ast.AST]:
    """``tree`` and every statement in it (with ``except`` handlers and ``case`` blocks), in
    :func:`walk` order, without walking expressions (three nodes in four): no statement is
    inside an expression, and a search for a statement needs no more."""
    nodes = [tree]
    for node in nodes:
        nodes += [child for child in child_nodes(node) if type(child) in _BLOCKS]
    return nodes


@dataclass(slots=True)
class Binding:
    order: int
    target: str | None = None
    """Module path for an import."""
    expr: ast.expr | None = None
    """Right-hand side of an alias assignment, resolved lazily."""
    opaque: bool = False
    value: ast.AST | None = None
    """For other bindings: the assigned value or the ``def`` node (used by type inference)."""
    resolved: str | None = None
    done: bool = False
    fallback: bool = False
    """An import in an ``except ImportError`` handler standing in for the ``try`` body's import."""


@dataclass(slots=True, eq=False)
class Scope:
    """One Python scope: module, class, function or lambda."""

    node: ast.AST
    parent: Scope | None
    is_class: bool = False
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)

    def add(self, name: str, binding: Binding) -> None:
        self.bindings.setdefault(name, []).append(binding)


_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    names = caught.elts if isinstance(caught, ast.Tuple) else [caught]
    return any(
        isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names
    )


def _dotted(expr: ast.expr) -> list[str] | None:
    """``a.b.c`` -> ['a', 'b', 'c']; None for anything that is not a plain dotted name."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    parts.reverse()
    return parts


class Resolver:
    """Resolves names and dotted attribute chains of one module to canonical API names."""

    def __init__(self, tree: ast.Module, *, expressions: bool = True) -> None:
        """Build the scopes and bindings of ``tree``.

        ``expressions=False`` is for a caller that knows no expression of the module binds a
        name (its text has no ``:=``) and walks the whole tree itself afterwards, as
        :class:`~tf2npu.migrate.index.ModuleIndex` does: the scope pass then visits statements
        only (expressions are three nodes in four, and only a ``:=`` or a ``lambda`` in
        them binds), and a lambda's scope is made by :meth:`lambda_scope` when the caller's walk
        reaches it. Every scope gets the same bindings, in the same order within it, as a
        full pass gives them.
        """
        self.module = Scope(tree, None)
        self.scope_of: dict[int, Scope] = {}
        """id(node) -> the scope that node's own body defines (functions, classes, lambdas)."""
        self.star_imports: list[str] = []
        self._order = 0
        self._seen: dict[tuple[str, Scope], str | None] = {}
        """(name, scope) -> :meth:`resolve_name` without ``before``, once looked up."""
        _ScopeBuilder(self, expressions).build(tree)

    # -- building ---------------------------------------------------------------------------
    def _next(self) -> int:
        self._order += 1
        return self._order

    def lambda_scope(self, node: ast.Lambda, parent: Scope) -> Scope:
        """The scope of ``lambda`` ``node``, which runs in ``parent``; made on first request.

        Its bindings are its parameters (no ``:=`` can be in its body when the scope pass
        skipped expressions). Their order numbers come after the scope pass's, which changes
        nothing: order only ever compares bindings of one scope.
        """
        scope = self.scope_of.get(id(node))
        if scope is None:
            builder = _ScopeBuilder(self, expressions=False)
            builder.scope = parent
            builder.visit_Lambda(node)
            scope = self.scope_of[id(node)]
        return scope

    # -- lookup -----------------------------------------------------------------------------
    def _home(self, name: str, scope: Scope) -> Scope | None:
        """The scope whose binding of ``name`` a use in ``scope`` sees."""
        if name in scope.globals:
            return self.module if name in self.module.bindings else None
        current: Scope | None = scope
        first = True
        while current is not None:
            if (first or not current.is_class) and name in current.bindings:
                return current
            first = False
            current = current.parent
        return None

    def resolve_name(self, name: str, scope: Scope, before: int | None = None) -> str | None:
        """Full module path a bare name refers to, or None when it is not (only) an import alias.

        Without ``before`` the answer is kept: the bindings are complete once the resolver is
        built, and a lookup never depends on another in progress (it only moves to earlier
        bindings of its own scope or out to enclosing scopes), so it is the same every time.
        A module looks up the same few names (``tf``, ``hvd``) thousands of times.
        """
        if before is not None:
            return self._resolve_name(name, scope, before)
        key = (name, scope)
        try:
            return self._seen[key]
        except KeyError:
            path = self._seen[key] = self._resolve_name(name, scope, None)
            return path

    def _resolve_name(self, name: str, scope: Scope, before: int | None) -> str | None:
        home = self._home(name, scope)
        if home is None:
            return None
        bindings = home.bindings[name]
        if before is not None and home is scope:
            bindings = [b for b in bindings if b.order < before]
            if not bindings:
                return self.resolve_name(name, scope.parent, None) if scope.parent else None
        # ``try: import a as n / except ImportError: import b as n``: the code is written
        # against ``a``; ``b`` only stands in where ``a`` is missing.
        bindings = [b for b in bindings if not b.fallback] or bindings
        result: str | None = None
        for binding in bindings:
            value = self._resolve_binding(binding, home)
            if value is None:
                return None
            result = value
        return result

    def _resolve_binding(self, binding: Binding, scope: Scope) -> str | None:
        if binding.opaque:
            return None
        if binding.target is not None:
            return binding.target
        if not binding.done:
            binding.done = True  # guards against cycles (a = b; b = a)
            assert binding.expr is not None
            binding.resolved = self._resolve_dotted(binding.expr, scope, binding.order)
        return binding.resolved

    def _resolve_dotted(self, expr: ast.expr, scope: Scope, before: int | None) -> str | None:
        parts = _dotted(expr)
        if parts is None:
            return None
        return self._resolve_parts(parts, scope, before)

    def _resolve_parts(self, parts: list[str], scope: Scope, before: int | None) -> str | None:
        base = self.resolve_name(parts[0], scope, before)
        if base is None:
            return None
        return ".".join([base, *parts[1:]])

    def bindings_of(self, name: str, scope: Scope) -> tuple[Scope, list[Binding]] | None:
        """The scope that binds ``name`` as seen from ``scope``, with its bindings in order."""
        home = self._home(name, scope)
        return (home, home.bindings[name]) if home is not None else None

    def qualified(self, expr: ast.expr, scope: Scope) -> str | None:
        """Canonical API name of a dotted expression (``tf.nn.dropout``), or None."""
        path = self._resolve_dotted(expr, scope, None)
        return canonical(path) if path is not None else None

    def qualified_parts(self, parts: list[str], scope: Scope) -> str | None:
        """:meth:`qualified` of the dotted name ``parts`` (``_dotted(expr)``, already split)."""
        path = self._resolve_parts(parts, scope, None)
        return canonical(path) if path is not None else None


class _ScopeBuilder(ast.NodeVisitor):
    """First pass: record every binding of every scope, in source order."""

    def __init__(self, resolver: Resolver, expressions: bool = True) -> None:
        self.r = resolver
        self.scope = resolver.module
        self.visitors = _VISITORS if expressions else _STATEMENT_VISITORS

    def build(self, tree: ast.Module) -> None:
        for stmt in tree.body:
            self.visit(stmt)

    # ast.NodeVisitor's visit and generic_visit, with the method looked up once per node type
    def visit(self, node: ast.AST) -> None:
        kind = type(node)
        method = self.visitors.get(kind)
        if method is None:
            method = _visitor(self.visitors, kind)
        method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        visitors = self.visitors
        for child in child_nodes(node):  # visit(), inlined: one call less per node
            method = visitors.get(type(child))
            if method is None:
                self.visit(child)
            else:
                method(self, child)

    def visit_Constant(self, node: ast.Constant) -> None:
        pass  # no children (NodeVisitor's own visit_Constant looks for deprecated visitors)

    def _skip(self, node: ast.AST) -> None:
        pass

    def _bind(self, name: str, **kw: object) -> None:
        # After ``global name`` a binding in a function rebinds the module's name.
        scope = self.r.module if name in self.scope.globals else self.scope
        scope.add(name, Binding(order=self.r._next(), **kw))  # type: ignore[arg-type]

    def _bind_target(self, target: ast.expr) -> None:
        for node in walk(target):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self._bind(node.id, opaque=True)
            elif isinstance(node, ast.Starred) and isinstance(node.value, ast.Name):
                self._bind(node.value.id, opaque=True)

    def _enter(self, node: ast.AST, is_class: bool = False) -> Iterator[Scope]:
        scope = Scope(node, self.scope, is_class=is_class)
        self.r.scope_of[id(node)] = scope
        outer, self.scope = self.scope, scope
        yield scope
        self.scope = outer

    # imports ------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self._bind(alias.asname, target=alias.name)
            else:
                root = alias.name.split(".", 1)[0]
                self._bind(root, target=root)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = ("." * node.level) + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                if self.scope is self.r.module:
                    self.r.star_imports.append(module)
                continue
            self._bind(alias.asname or alias.name, target=f"{module}.{alias.name}")

    # assignments --------------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        alias = _dotted(node.value) is not None
        for target in node.targets:
            if alias and isinstance(target, ast.Name):
                self._bind(target.id, expr=node.value)
            elif isinstance(target, ast.Name):
                self._bind(target.id, opaque=True, value=node.value)
            else:
                self.visit(target)
                self._bind_target(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        if isinstance(node.target, ast.Name) and node.value is not None and _dotted(node.value):
            self._bind(node.target.id, expr=node.value)
        elif isinstance(node.target, ast.Name):
            self._bind(node.target.id, opaque=True, value=node.value)
        else:
            self._bind_target(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        self._bind_target(node.target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._bind_target(node.target)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self._bind_target(node.target)
        self.generic_visit(node)

    visit_AsyncFor = visit_For

    def visit_withitem(self, node: ast.withitem) -> None:
        self.visit(node.context_expr)
        if node.optional_vars is not None:
            self._bind_target(node.optional_vars)

    def visit_Try(self, node: ast.Try | ast.TryStar) -> None:
        primary = {
            alias.asname or alias.name.split(".", 1)[0]
            for stmt in node.body
            if isinstance(stmt, (ast.Import, ast.ImportFrom))
            for alias in stmt.names
        }
        for stmt in node.body:
            self.visit(stmt)
        for handler in node.handlers:
            first = self.r._order
            self.visit(handler)
            if primary and _catches_import_error(handler):
                for name in primary:
                    for binding in self.scope.bindings.get(name, ()):
                        if binding.order > first and binding.target is not None:
                            binding.fallback = True
        for stmt in [*node.orelse, *node.finalbody]:
            self.visit(stmt)

    visit_TryStar = visit_Try

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._bind(node.name, opaque=True)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._bind_target(target)

    def visit_Global(self, node: ast.Global) -> None:
        self.scope.globals.update(node.names)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        pass  # the enclosing function's binding is found by the normal chain walk

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self._bind(node.name, opaque=True)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        if node.name:
            self._bind(node.name, opaque=True)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        if node.rest:
            self._bind(node.rest, opaque=True)
        self.generic_visit(node)

    # scopes -------------------------------------------------------------------------------
    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        for default in [*args.defaults, *(d for d in args.kw_defaults if d is not None)]:
            self.visit(default)
        if not isinstance(node, ast.Lambda):
            for deco in node.decorator_list:
                self.visit(deco)
            if node.returns is not None:
                self.visit(node.returns)
            self._bind(node.name, opaque=True, value=node)
        for _scope in self._enter(node):
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
            every += [a for a in (args.vararg, args.kwarg) if a is not None]
            for arg in every:
                self._bind(arg.arg, opaque=True)
            if isinstance(node, ast.Lambda):
                self.visit(node.body)
            else:
                for stmt in node.body:
                    self.visit(stmt)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function
    visit_Lambda = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.bases, *(k.value for k in node.keywords), *node.decorator_list]:
            self.visit(expr)
        self._bind(node.name, opaque=True)
        for _scope in self._enter(node, is_class=True):
            for stmt in node.body:
                self.visit(stmt)

    def visit_comprehension(self, node: ast.comprehension) -> None:
        # Comprehension variables live in their own scope; they never shadow module imports.
        self.visit(node.iter)
        for cond in node.ifs:
            self.visit(cond)


_VISITORS: dict[type[ast.AST], Callable[[_ScopeBuilder, ast.AST], None]] = {}
"""Node type -> the _ScopeBuilder method that visits it (``visit_<Type>`` or generic_visit)."""
_STATEMENT_VISITORS: dict[type[ast.AST], Callable[[_ScopeBuilder, ast.AST], None]] = {}
"""The same for a pass over statements only: every expression type -> ``_skip``."""


def _visitor(
    table: dict[type[ast.AST], Callable[[_ScopeBuilder, ast.AST], None]], kind: type[ast.AST]
) -> Callable[[_ScopeBuilder, ast.AST], None]:
    if table is _STATEMENT_VISITORS and issubclass(kind, ast.expr):
        method = _ScopeBuilder._skip
    else:
        method = getattr(_ScopeBuilder, f"visit_{kind.__name__}", _ScopeBuilder.generic_visit)
    table[kind] = method
    return method

"""Alias-aware name resolution: import styles, re-bindings, Python's scoping, canonical names."""

from __future__ import annotations

import ast

import pytest

from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.names import Resolver, canonical, child_nodes, is_tf_api, statements, walk


def calls(src: str) -> list[tuple[int, str | None]]:
    """Every call in source order with the canonical name of its callee (None: unresolved)."""
    tree = ast.parse(src)
    index = ModuleIndex.build(tree)
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    found.sort(key=lambda c: (c.lineno, c.col_offset))
    return [(c.lineno, index.callee(c)) for c in found]


def module_name(src: str, expr: str) -> str | None:
    """What ``expr`` means at the end of module ``src``."""
    resolver = Resolver(ast.parse(src))
    node = ast.parse(expr, mode="eval").body
    return resolver.qualified(node, resolver.module)


# -- import styles (issue 2) --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("import tensorflow as tf\ntf.nn.relu(x)\n", "tf.nn.relu"),
        ("import tensorflow.compat.v1 as tf\ntf.Session()\n", "tf.Session"),
        ("import tensorflow as tf1\ntf1.layers.dense(x, 3)\n", "tf.layers.dense"),
        ("import tensorflow\ntensorflow.nn.relu(x)\n", "tf.nn.relu"),
        ("import tensorflow.compat.v1\ntensorflow.compat.v1.Session()\n", "tf.Session"),
        ("from tensorflow import keras\nkeras.layers.Dense(3)\n", "tf.keras.layers.Dense"),
        ("from tensorflow.keras.layers import Dense\nDense(3)\n", "tf.keras.layers.Dense"),
        ("from tensorflow.keras.layers import Dense as D\nD(3)\n", "tf.keras.layers.Dense"),
        ("from tensorflow.contrib import slim\nslim.conv2d(x, 8, 3)\n", "tf.contrib.slim.conv2d"),
        (
            "import tensorflow.contrib.slim as slim\nslim.conv2d(x, 8, 3)\n",
            "tf.contrib.slim.conv2d",
        ),
        ("from tensorflow.compat import v1\nv1.Session()\n", "tf.Session"),
        ("from tensorflow.compat import v1 as tf\ntf.Session()\n", "tf.Session"),
        ("import horovod.tensorflow as hvd\nhvd.init()\n", "hvd.init"),
        ("import horovod.keras as hvd\nhvd.init()\n", "hvd.keras.init"),
        ("import horovod.tensorflow.keras as hvd\nhvd.size()\n", "hvd.keras.size"),
        ("from horovod import tensorflow as hvd\nhvd.rank()\n", "hvd.rank"),
        ("import numpy as np\nnp.zeros(3)\n", "numpy.zeros"),
    ],
)
def test_import_styles(src: str, expected: str) -> None:
    assert calls(src) == [(2, expected)]


def test_plain_import_of_a_submodule_binds_the_root() -> None:
    src = (
        "import tensorflow.contrib.slim\ntensorflow.contrib.slim.conv2d(x)\ntensorflow.nn.relu(x)\n"
    )
    assert calls(src) == [(2, "tf.contrib.slim.conv2d"), (3, "tf.nn.relu")]


def test_unimported_names_do_not_resolve() -> None:
    assert calls("tf.Session()\nmodel.profile()\ntrain()\n") == [(1, None), (2, None), (3, None)]


def test_star_import_is_recorded_but_names_stay_unresolved() -> None:
    src = "from tensorflow import *\nSession()\n"
    assert calls(src) == [(2, None)]
    assert Resolver(ast.parse(src)).star_imports == ["tensorflow"]


@pytest.mark.parametrize(
    "src",
    [
        "from . import tensorflow as tf\ntf.Session()\n",
        "from .tensorflow import Session\nSession()\n",
        "from .. import tensorflow\ntensorflow.Session()\n",
    ],
)
def test_relative_import_is_not_tensorflow(src: str) -> None:
    [(_, name)] = calls(src)
    assert name is not None
    assert name.startswith(".")
    assert not is_tf_api(name)


# -- re-bindings and aliases --------------------------------------------------------------------
def test_rebinding_to_compat_v1() -> None:
    src = "import tensorflow as tf\ntf = tf.compat.v1\ntf.Session()\ntf.layers.dense(x, 1)\n"
    assert calls(src) == [(3, "tf.Session"), (4, "tf.layers.dense")]


def test_rebinding_before_and_after_uses() -> None:
    src = "import tensorflow as tf\ntf.a()\ntf = tf.compat.v1\ntf.b()\n"
    assert calls(src) == [(2, "tf.a"), (4, "tf.b")]


def test_alias_assignment_of_a_submodule() -> None:
    src = "import tensorflow as tf\nlayers = tf.layers\nlayers.dense(x, 3)\n"
    assert calls(src) == [(3, "tf.layers.dense")]


def test_alias_chain() -> None:
    src = "import tensorflow as tf\nv1 = tf.compat.v1\nnn = v1.nn\nnn.dropout(x, 0.5)\n"
    assert calls(src) == [(4, "tf.nn.dropout")]


def test_annotated_alias_assignment() -> None:
    src = "import tensorflow as tf\nlayers: object = tf.layers\nlayers.dense(x, 3)\n"
    assert calls(src) == [(3, "tf.layers.dense")]


def test_alias_of_a_function_resolves_calls() -> None:
    src = "import tensorflow as tf\ndropout = tf.nn.dropout\ndropout(x, 0.9)\n"
    assert calls(src) == [(3, "tf.nn.dropout")]


def test_alias_cycle_does_not_resolve_or_loop() -> None:
    assert calls("a = b\nb = a\na.x()\n") == [(3, None)]


def test_a_name_is_looked_up_once_per_scope(monkeypatch: pytest.MonkeyPatch) -> None:
    resolver = Resolver(ast.parse("import tensorflow as tf\ndef f():\n    tf = tf.compat.v1\n"))
    homes: list[str] = []
    real_home = Resolver._home

    def home(self: Resolver, name: str, scope: object) -> object:
        homes.append(name)
        return real_home(self, name, scope)  # type: ignore[arg-type]

    monkeypatch.setattr(Resolver, "_home", home)
    module = resolver.module
    (function,) = (s for s in resolver.scope_of.values())
    assert resolver.resolve_name("tf", module) == "tensorflow"
    assert resolver.resolve_name("tf", module) == "tensorflow"
    assert homes == ["tf"]
    # f's own tf is bound from the module's: its first lookup resolves (and keeps) both.
    assert resolver.resolve_name("tf", function) == "tensorflow.compat.v1"
    assert resolver.resolve_name("tf", function) == "tensorflow.compat.v1"
    assert homes == ["tf", "tf", "tf"]
    # A lookup before a given binding is never kept (it depends on that binding); f has no tf
    # before it, so it goes on to the module's, which is kept.
    assert resolver.resolve_name("tf", function, before=0) == "tensorflow"
    assert resolver.resolve_name("tf", function, before=0) == "tensorflow"
    assert homes == ["tf"] * 5


def test_canonical_keeps_a_bounded_number_of_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    from tf2npu.migrate import names

    monkeypatch.setattr(names, "_CANONICAL", {})
    monkeypatch.setattr(names, "_CANONICAL_KEPT", 2)
    paths = ["tensorflow.nn.relu", "horovod.tensorflow.init", "numpy.zeros", "tensorflow.nn.relu"]
    assert [canonical(p) for p in paths] == ["tf.nn.relu", "hvd.init", "numpy.zeros", "tf.nn.relu"]
    assert len(names._CANONICAL) <= 2


def test_a_statements_only_pass_leaves_lambda_scopes_to_be_made_on_request() -> None:
    src = "import tensorflow as tf\nclass C:\n    f = lambda self, tf=tf: tf\n"
    tree = ast.parse(src)
    resolver = Resolver(tree, expressions=False)
    (cls,) = resolver.scope_of.values()  # the class's scope, and no lambda's
    lam = tree.body[1].body[0].value  # type: ignore[attr-defined]
    scope = resolver.lambda_scope(lam, cls)
    assert resolver.lambda_scope(lam, cls) is scope  # made once
    assert scope.parent is cls and not scope.is_class
    assert sorted(scope.bindings) == ["self", "tf"]
    assert resolver.resolve_name("tf", scope) is None  # the parameter
    assert resolver.resolve_name("tf", cls) == "tensorflow"
    full = Resolver(tree)
    assert sorted(full.scope_of[id(lam)].bindings) == ["self", "tf"]


def test_try_except_import_fallback_resolves() -> None:
    src = (
        "try:\n    import tensorflow.compat.v1 as tf\n"
        "except ImportError:\n    import tensorflow as tf\ntf.Session()\n"
    )
    assert calls(src) == [(5, "tf.Session")]


def test_try_except_fallback_to_a_non_module_does_not_resolve() -> None:
    src = "try:\n    import tensorflow as tf\nexcept ImportError:\n    tf = None\ntf.Session()\n"
    assert calls(src) == [(5, None)]


# -- other bindings make a name opaque ----------------------------------------------------------
@pytest.mark.parametrize(
    "src",
    [
        "import tensorflow as tf\ntf = make()\ntf.Session()\n",
        "import tensorflow as tf\nfor tf in sessions:\n    tf.Session()\n",
        "import tensorflow as tf\nwith open(p) as tf:\n    tf.Session()\n",
        "import tensorflow as tf\ntry:\n    pass\nexcept E as tf:\n    tf.Session()\n",
        "import tensorflow as tf\nif (tf := make()):\n    tf.Session()\n",
        "import tensorflow as tf\ntf += 1\ntf.Session()\n",
        "import tensorflow as tf\ntf, other = pair\ntf.Session()\n",
        "import tensorflow as tf\n[*tf] = items\ntf.Session()\n",
        "import tensorflow as tf\nmatch v:\n    case tf:\n        tf.Session()\n",
        "import tensorflow as tf\nmatch v:\n    case [*tf]:\n        tf.Session()\n",
        "import tensorflow as tf\nmatch v:\n    case {**tf}:\n        tf.Session()\n",
        "import tensorflow as tf\ndef tf():\n    pass\ntf.Session()\n",
        "import tensorflow as tf\nclass tf:\n    pass\ntf.Session()\n",
    ],
)
def test_module_level_rebinding_makes_the_name_opaque(src: str) -> None:
    assert [name for _, name in calls(src) if name is not None and name.startswith("tf")] == []


def test_function_parameter_shadows() -> None:
    src = "import tensorflow as tf\ndef f(tf):\n    tf.Session()\ntf.Session()\n"
    assert calls(src) == [(3, None), (4, "tf.Session")]


@pytest.mark.parametrize(
    "params", ["*, tf", "*tf", "**tf", "tf, /", "a=1, *args, tf=2", "tf: int = 3"]
)
def test_every_kind_of_parameter_shadows(params: str) -> None:
    src = f"import tensorflow as tf\ndef f({params}):\n    tf.Session()\n"
    assert calls(src) == [(3, None)]


def test_lambda_parameter_shadows() -> None:
    src = "import tensorflow as tf\nf = lambda tf: tf.Session()\ng = lambda: tf.Session()\n"
    assert calls(src) == [(2, None), (3, "tf.Session")]


def test_local_assignment_shadows_in_the_whole_function() -> None:
    src = (
        "import tensorflow as tf\n"
        "def f():\n    tf.Session()\n    tf = make()\n    tf.Session()\n"
        "def g():\n    tf.Session()\n"
    )
    assert calls(src) == [(3, None), (4, None), (5, None), (7, "tf.Session")]


def test_for_loop_variable_in_a_function_shadows() -> None:
    src = "import tensorflow as tf\ndef f(xs):\n    for tf in xs:\n        tf.Session()\n"
    assert calls(src) == [(4, None)]


def test_nested_function_sees_the_enclosing_local() -> None:
    src = (
        "import tensorflow as tf\n"
        "def f():\n    tf = make()\n    def g():\n        tf.Session()\n    return g\n"
    )
    assert calls(src) == [(3, None), (5, None)]


def test_nonlocal_refers_to_the_enclosing_binding() -> None:
    src = (
        "import tensorflow as tf\n"
        "def f():\n    tf = make()\n    def g():\n        nonlocal tf\n        tf.Session()\n"
    )
    assert calls(src) == [(3, None), (6, None)]


def test_class_scope_is_not_visible_in_methods() -> None:
    src = (
        "import tensorflow as tf\n"
        "class Model:\n"
        "    tf = make()\n"
        "    tf.Session()\n"
        "    def build(self):\n"
        "        tf.Session()\n"
    )
    assert calls(src) == [(3, None), (4, None), (6, "tf.Session")]


def test_class_level_import_is_not_visible_in_methods() -> None:
    src = (
        "class Model:\n"
        "    import tensorflow as tf\n"
        "    tf.Session()\n"
        "    def build(self):\n"
        "        tf.Session()\n"
    )
    assert calls(src) == [(3, "tf.Session"), (5, None)]


def test_global_statement_makes_a_function_binding_rebind_the_module_name() -> None:
    src = (
        "import tensorflow as tf\n"
        "def reset():\n    global tf\n    tf = make()\n"
        "def run():\n    tf.Session()\n"
        "tf.Session()\n"
    )
    assert calls(src) == [(4, None), (6, None), (7, None)]


def test_import_under_global_binds_the_module_name() -> None:
    src = "def setup():\n    global tf\n    import tensorflow as tf\ndef run():\n    tf.Session()\n"
    assert calls(src) == [(5, "tf.Session")]


def test_global_declared_name_in_a_function_reads_the_module_binding() -> None:
    src = "import tensorflow as tf\ndef f():\n    global tf\n    tf.Session()\n"
    assert calls(src) == [(4, "tf.Session")]


def test_global_name_without_a_module_binding_does_not_resolve() -> None:
    src = "def f():\n    global tf\n    tf.Session()\n"
    assert calls(src) == [(3, None)]


def test_import_inside_a_function_is_local_to_it() -> None:
    src = "def f():\n    import tensorflow as tf\n    tf.Session()\ndef g():\n    tf.Session()\n"
    assert calls(src) == [(3, "tf.Session"), (5, None)]


def test_comprehension_variable_does_not_shadow_the_module_name() -> None:
    src = (
        "import tensorflow as tf\n"
        "names = [tf for tf in items]\n"
        "sets = {x for x in tf.data.range(3)}\n"
        "tf.Session()\n"
    )
    assert calls(src)[-1] == (4, "tf.Session")
    assert (3, "tf.data.range") in calls(src)


def test_default_values_and_annotations_resolve_in_the_enclosing_scope() -> None:
    src = (
        "import tensorflow as tf\n"
        "def f(tf=tf.zeros(1), *, d: tf.ones(1) = tf.ones(2)) -> tf.eye(1):\n"
        "    tf.Session()\n"
    )
    assert calls(src) == [(2, "tf.zeros"), (2, "tf.ones"), (2, "tf.ones"), (2, "tf.eye"), (3, None)]


def test_decorators_resolve_in_the_enclosing_scope() -> None:
    src = (
        "import tensorflow as tf\n"
        "class A:\n    tf = 1\n    @tf.function\n    def f(self):\n        pass\n"
    )
    index = ModuleIndex.build(ast.parse(src))
    assert [(r.name, r.kind) for r in index.refs] == []


def test_subscripted_receivers_are_not_names() -> None:
    assert calls("import tensorflow as tf\ntf.layers[0].dense(x)\n") == [(2, None)]


# -- Resolver API -------------------------------------------------------------------------------
def test_module_level_qualified() -> None:
    assert module_name("import tensorflow as tf\n", "tf.nn.dropout") == "tf.nn.dropout"
    assert module_name("import tensorflow as tf\n", "tf") == "tf"
    assert module_name("import tensorflow as tf\n", "tf.a[0]") is None
    assert module_name("import tensorflow as tf\n", "f().x") is None
    assert module_name("", "tf.x") is None


def test_bindings_of_reports_the_home_scope() -> None:
    tree = ast.parse("import tensorflow as tf\ndef f():\n    x = 1\n    x = g()\n")
    resolver = Resolver(tree)
    func = tree.body[1]
    inner = resolver.scope_of[id(func)]
    home, bindings = resolver.bindings_of("tf", inner) or (None, [])
    assert home is resolver.module
    assert [b.target for b in bindings] == ["tensorflow"]
    home, bindings = resolver.bindings_of("x", inner) or (None, [])
    assert home is inner
    assert [b.opaque for b in bindings] == [True, True]
    assert resolver.bindings_of("nothing", inner) is None


def test_resolve_name_before_an_order_ignores_later_bindings() -> None:
    tree = ast.parse("import tensorflow as tf\ntf = make()\n")
    resolver = Resolver(tree)
    first, second = resolver.module.bindings["tf"]
    assert resolver.resolve_name("tf", resolver.module) is None
    assert resolver.resolve_name("tf", resolver.module, before=second.order) == "tensorflow"
    assert resolver.resolve_name("tf", resolver.module, before=first.order) is None


# -- canonical names ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("tensorflow", "tf"),
        ("tensorflow.nn.relu", "tf.nn.relu"),
        ("tensorflow.compat.v1", "tf"),
        ("tensorflow.compat.v1.Session", "tf.Session"),
        ("tensorflow.compat.v1.compat.v1.Session", "tf.Session"),
        ("tensorflow.compat.v1.nn.dropout", "tf.nn.dropout"),
        ("tensorflow.compat.v2", "tf.compat.v2"),
        ("tensorflow.compat.v2.function", "tf.compat.v2.function"),
        ("tensorflow.compat.v1x", "tf.compat.v1x"),
        ("tensorflow.python.keras.layers.Dense", "tf.keras.layers.Dense"),
        ("tensorflow.python.keras", "tf.keras"),
        ("tensorflow.python.platform.app.run", "tf.app.run"),
        ("tensorflow.python.platform.flags.FLAGS", "tf.flags.FLAGS"),
        ("tensorflow.python.ops.nn", "tf.python.ops.nn"),
        ("tensorflow_estimator.python.estimator.estimator.Estimator", "tf.estimator.Estimator"),
        ("tensorflow_estimator.python.estimator.run_config.RunConfig", "tf.estimator.RunConfig"),
        ("tensorflow_estimator.python.estimator.model_fn.EstimatorSpec",
         "tf.estimator.EstimatorSpec"),
        ("tensorflow_estimator.estimator.Estimator", "tf.estimator.Estimator"),
        ("tensorflow_estimator.estimator", "tf.estimator"),
        ("horovod.tensorflow", "hvd"),
        ("horovod.tensorflow.init", "hvd.init"),
        ("horovod.tensorflow.keras.DistributedOptimizer", "hvd.keras.DistributedOptimizer"),
        ("horovod.keras", "hvd.keras"),
        ("horovod.keras.callbacks.BroadcastGlobalVariablesCallback",
         "hvd.keras.callbacks.BroadcastGlobalVariablesCallback"),
        ("horovod.torch.init", "horovod.torch.init"),
        ("tensorflowx.y", "tensorflowx.y"),
        ("numpy.zeros", "numpy.zeros"),
        ("keras.layers.Dense", "keras.layers.Dense"),
    ],
)  # fmt: skip
def test_canonical(path: str, expected: str) -> None:
    assert canonical(path) == expected


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("tf", True),
        ("tf.nn.relu", True),
        ("hvd", True),
        ("hvd.keras.init", True),
        ("tfx.y", False),
        ("hvdx", False),
        ("numpy.zeros", False),
        ("horovod.torch.init", False),
        ("", False),
    ],
)
def test_is_tf_api(name: str, expected: bool) -> None:
    assert is_tf_api(name) is expected


CHILDREN_CASES = [
    "x = f(a, *b, k=1, **c)[0].y",
    "def g(a, b=1, *c, d, e=2, **f) -> int:\n    '''doc'''\n    return lambda q: q\n",
    "class C(B, metaclass=M):\n    @dec(1)\n    def m(self): pass\n",
    "with a as b, c:\n    try:\n        pass\n    except E as e:\n        raise\n    finally:\n        del x\n",
    "match p:\n    case [1, *rest] if rest:\n        pass\n    case {'k': v, **kw}:\n        pass\n",
    "y = [i for i in range(3) if i] + {k: v for k, v in d}.get(1, f'{z!r:>4}')",
]


_SINGLETONS = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


@pytest.mark.parametrize("source", CHILDREN_CASES)
def test_child_nodes_and_walk_are_the_ast_module_s_without_context_and_operator_nodes(
    source: str,
) -> None:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        expected = [c for c in ast.iter_child_nodes(node) if not isinstance(c, _SINGLETONS)]
        assert child_nodes(node) == expected
    assert walk(tree) == [n for n in ast.walk(tree) if not isinstance(n, _SINGLETONS)]


def test_child_nodes_of_a_leaf_is_empty() -> None:
    name = ast.parse("x").body[0].value  # type: ignore[attr-defined]
    assert child_nodes(name) == []
    assert child_nodes(ast.parse("1").body[0].value) == []  # type: ignore[attr-defined]


def test_child_nodes_skips_operators_and_contexts_but_keeps_operands() -> None:
    expr = ast.parse("a + -b < c and not d").body[0].value  # type: ignore[attr-defined]
    assert [type(n).__name__ for n in walk(expr)] == [
        "BoolOp", "Compare", "UnaryOp", "BinOp", "Name", "Name", "Name", "UnaryOp", "Name",
    ]  # fmt: skip


def test_statements_are_the_walk_without_expressions() -> None:
    src = (
        "x = f(lambda: 1)\n"
        "try:\n"
        "    def g():\n"
        "        return 2\n"
        "except E:\n"
        "    pass\n"
        "match y:\n"
        "    case 1:\n"
        "        z = 3\n"
    )
    tree = ast.parse(src)
    found = [type(n).__name__ for n in statements(tree)]
    assert found == [
        "Module", "Assign", "Try", "Match", "FunctionDef", "ExceptHandler", "match_case",
        "Return", "Pass", "Assign",
    ]  # fmt: skip
    kinds = (ast.stmt, ast.ExceptHandler, ast.match_case, ast.Module)
    assert statements(tree) == [n for n in walk(tree) if isinstance(n, kinds)]

"""The shared module walk: references, calls, method calls, parents, statements and scopes."""

from __future__ import annotations

import ast

import pytest

from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.names import Resolver


def build(src: str) -> ModuleIndex:
    return ModuleIndex.build(ast.parse(src))


def refs(src: str) -> list[tuple[int, int, str, str]]:
    return [(r.node.lineno, r.node.col_offset, r.name, r.kind) for r in build(src).refs]


SAMPLE = """\
import tensorflow as tf
import numpy as np

@tf.function(autograph=False)
def step(x):
    return tf.nn.relu(x)

@tf.custom_gradient
def grad(x):
    return np.abs(x)

class Model(tf.keras.Model, metaclass=tf.Meta):
    def call(self, x):
        self.profile()
        return tf.layers.dense(x, 3)

ds = tf.data.TFRecordDataset(files)
ds.batch(3)
make().batch(4)
a.b.batch(5)
tf.data.Dataset.range(3).batch(2)
dtype = tf.float32
print(tf)
"""


# -- refs ---------------------------------------------------------------------------------------
def test_refs_kinds_and_order() -> None:
    assert refs(SAMPLE) == [
        (4, 1, "tf.function", "decorator"),
        (6, 11, "tf.nn.relu", "call"),
        (8, 1, "tf.custom_gradient", "decorator"),
        (12, 12, "tf.keras.Model", "base"),
        (12, 38, "tf.Meta", "attribute"),
        (15, 15, "tf.layers.dense", "call"),
        (17, 5, "tf.data.TFRecordDataset", "call"),
        (21, 0, "tf.data.Dataset.range", "call"),
        (22, 8, "tf.float32", "attribute"),
        (23, 6, "tf", "attribute"),
    ]


def test_refs_keep_only_tf_and_hvd_but_calls_keep_every_resolved_name() -> None:
    index = build(SAMPLE)
    assert all(r.name.split(".")[0] in ("tf", "hvd") for r in index.refs)
    assert [r.name for r in index.calls_to("numpy.abs")] == ["numpy.abs"]


def test_call_refs_carry_the_call_and_scope() -> None:
    index = build(SAMPLE)
    [relu] = index.calls_to("tf.nn.relu")
    assert isinstance(relu.call, ast.Call)
    assert relu.call.func is relu.node
    assert isinstance(relu.scope.node, ast.FunctionDef)
    assert relu.scope.node.name == "step"
    [dataset] = index.calls_to("tf.data.TFRecordDataset")
    assert dataset.scope is index.resolver.module


def test_attribute_refs_have_no_call() -> None:
    index = build(SAMPLE)
    attr = next(r for r in index.refs if r.name == "tf.float32")
    assert attr.call is None


def test_decorator_call_is_a_decorator_ref_not_a_call() -> None:
    index = build(SAMPLE)
    deco = next(r for r in index.refs if r.name == "tf.function")
    assert deco.call is None
    assert index.calls_to("tf.function") == []


def test_class_decorators_are_decorators_like_function_ones() -> None:
    src = (
        "import tensorflow as tf\n"
        "@tf.keras.utils.register_keras_serializable(package='m')\n"
        "@tf.plain\n"
        "class Layer(tf.keras.layers.Layer):\n"
        "    pass\n"
    )
    assert refs(src) == [
        (2, 1, "tf.keras.utils.register_keras_serializable", "decorator"),
        (3, 1, "tf.plain", "decorator"),
        (4, 12, "tf.keras.layers.Layer", "base"),
    ]


def test_arguments_of_decorator_calls_are_walked() -> None:
    src = (
        "import tensorflow as tf\n"
        "@tf.function(input_signature=[tf.TensorSpec(None)])\n"
        "def f(x):\n    pass\n"
    )
    assert refs(src) == [
        (2, 1, "tf.function", "decorator"),
        (2, 30, "tf.TensorSpec", "call"),
    ]


def test_maximal_dotted_name_only() -> None:
    # ``tf.a.b.c`` is one reference, not four.
    assert refs("import tensorflow as tf\nx = tf.a.b.c\n") == [(2, 4, "tf.a.b.c", "attribute")]


def test_attribute_of_a_call_result_is_walked_inside() -> None:
    src = "import tensorflow as tf\ntf.get_default_graph().finalize()\n"
    assert refs(src) == [(2, 0, "tf.get_default_graph", "call")]


def test_assigning_an_attribute_references_only_its_receiver() -> None:
    assert refs("import tensorflow as tf\ntf.x = 1\n") == [(2, 0, "tf", "attribute")]


def test_horovod_refs() -> None:
    src = "import horovod.tensorflow as hvd\nhvd.init()\nn = hvd.size\n"
    assert refs(src) == [(2, 0, "hvd.init", "call"), (3, 4, "hvd.size", "attribute")]


def test_lambda_bodies_and_defaults_are_walked_in_their_scopes() -> None:
    src = (
        "import tensorflow as tf\n"
        "f = lambda x, d=tf.ones(1): tf.zeros(x)\n"
        "g = lambda tf: tf.zeros(1)\n"
    )
    assert [(line, name) for line, _, name, _ in refs(src)] == [(2, "tf.ones"), (2, "tf.zeros")]


# -- calls_to -----------------------------------------------------------------------------------
def test_calls_to_merges_names_in_source_order() -> None:
    src = (
        "import tensorflow as tf\n"
        "b = tf.Session()\n"
        "a = tf.InteractiveSession()\n"
        "c = tf.Session(); d = tf.InteractiveSession()\n"
    )
    found = build(src).calls_to("tf.Session", "tf.InteractiveSession")
    assert [(r.node.lineno, r.node.col_offset, r.name) for r in found] == [
        (2, 4, "tf.Session"),
        (3, 4, "tf.InteractiveSession"),
        (4, 4, "tf.Session"),
        (4, 22, "tf.InteractiveSession"),
    ]


def test_calls_to_unknown_name_is_empty() -> None:
    assert build(SAMPLE).calls_to("tf.nothing") == []
    assert build(SAMPLE).calls_to() == []


def test_calls_to_follows_aliases() -> None:
    src = "import tensorflow.compat.v1 as v1\nS = v1.Session\nS()\nv1.Session()\n"
    found = build(src).calls_to("tf.Session")
    assert [(r.node.lineno, ast.unparse(r.node)) for r in found] == [(3, "S"), (4, "v1.Session")]


def test_nested_calls_are_both_found() -> None:
    src = "import tensorflow as tf\ntf.Session(config=tf.ConfigProto())\n"
    index = build(src)
    [outer] = index.calls_to("tf.Session")
    [inner] = index.calls_to("tf.ConfigProto")
    assert outer.call is not None and inner.call is not None
    assert outer.call.keywords[0].value is inner.call


# -- method calls -------------------------------------------------------------------------------
def test_method_calls_on_unresolved_receivers() -> None:
    index = build(SAMPLE)
    batch = [(m.call.lineno, ast.unparse(m.receiver)) for m in index.method_calls["batch"]]
    assert batch == [
        (18, "ds"),
        (19, "make()"),
        (20, "a.b"),
        (21, "tf.data.Dataset.range(3)"),
    ]
    assert all(m.method == "batch" for m in index.method_calls["batch"])


def test_a_users_own_method_is_a_method_call_not_a_ref() -> None:
    index = build(SAMPLE)
    [profile] = index.method_calls["profile"]
    assert ast.unparse(profile.receiver) == "self"
    assert isinstance(profile.scope.node, ast.FunctionDef)
    assert profile.scope.node.name == "call"
    assert index.callee(profile.call) is None
    assert not any(r.name.endswith("profile") for r in index.refs)


def test_resolved_dotted_callee_is_not_a_method_call() -> None:
    index = build("import tensorflow as tf\ntf.data.batch(3)\n")
    assert "batch" not in index.method_calls
    assert [r.name for r in index.calls_to("tf.data.batch")] == ["tf.data.batch"]


def test_method_call_receiver_shadowing_a_module() -> None:
    index = build("import tensorflow as tf\ndef f(tf):\n    tf.batch(2)\n")
    [call] = index.method_calls["batch"]
    assert ast.unparse(call.receiver) == "tf"


def test_plain_function_calls_are_not_method_calls() -> None:
    assert dict(build("batch(3)\n").method_calls) == {}


# -- callee / uses ------------------------------------------------------------------------------
def test_callee() -> None:
    src = "import tensorflow as tf\nx = tf.nn.relu(y)\nz = relu(y)\nw = f()(y)\n"
    tree = ast.parse(src)
    index = ModuleIndex.build(tree)
    values = [stmt.value for stmt in tree.body[1:]]  # type: ignore[attr-defined]
    assert [index.callee(v) for v in values] == ["tf.nn.relu", None, None]


def test_uses_matches_whole_components() -> None:
    index = build(SAMPLE)
    assert index.uses("tf")
    assert index.uses("tf.data")
    assert index.uses("tf.data.Dataset.range")
    assert not index.uses("tf.dat")
    assert not index.uses("hvd")
    assert not index.uses("numpy")  # refs hold only tf/hvd names


# -- parents, statements, scopes ----------------------------------------------------------------
def test_parents_and_statement_of() -> None:
    src = "import tensorflow as tf\nif c:\n    y = f(tf.nn.relu(x))\n"
    tree = ast.parse(src)
    index = ModuleIndex.build(tree)
    [ref] = index.calls_to("tf.nn.relu")
    assert ref.call is not None
    outer = index.parent(ref.call)
    assert isinstance(outer, ast.Call)
    assert ast.unparse(outer) == "f(tf.nn.relu(x))"
    stmt = index.statement_of(ref.node)
    assert isinstance(stmt, ast.Assign)
    assert index.parent(stmt) is tree.body[1]
    assert index.parent(tree.body[1]) is tree
    assert index.parent(tree) is None


def test_statement_of_a_statement_is_itself() -> None:
    tree = ast.parse("x = 1\n")
    index = ModuleIndex.build(tree)
    assert index.statement_of(tree.body[0]) is tree.body[0]


def test_statement_of_a_detached_node_raises() -> None:
    index = build("x = 1\n")
    with pytest.raises(ValueError, match="not inside a statement"):
        index.statement_of(ast.Name("y", ast.Load()))


def test_parent_of_a_decorator_call_is_the_function() -> None:
    src = "import tensorflow as tf\n@tf.function(jit=True)\ndef f():\n    pass\n"
    tree = ast.parse(src)
    index = ModuleIndex.build(tree)
    func = tree.body[1]
    assert isinstance(func, ast.FunctionDef)
    deco = func.decorator_list[0]
    assert index.parent(deco) is func
    assert index.statement_of(deco) is func


def test_scope_at() -> None:
    src = (
        "x = 1\n"
        "def f():\n    y = 2\n"
        "    class C:\n        z = 3\n"
        "        def m(self):\n            w = 4\n"
    )
    tree = ast.parse(src)
    index = ModuleIndex.build(tree)
    f = tree.body[1]
    assert isinstance(f, ast.FunctionDef)
    c = f.body[1]
    assert isinstance(c, ast.ClassDef)
    m = c.body[1]
    assert isinstance(m, ast.FunctionDef)
    assert index.scope_at(tree.body[0]) is index.resolver.module
    assert index.scope_at(f) is index.resolver.module
    assert index.scope_at(f.body[0]).node is f
    assert index.scope_at(c).node is f
    assert index.scope_at(c.body[0]).node is c
    assert index.scope_at(c.body[0]).is_class
    assert index.scope_at(m.body[0]).node is m
    detached = ast.parse("q = 1\n").body[0]
    assert index.scope_at(detached) is index.resolver.module


def test_functions_and_withs() -> None:
    src = (
        "def a():\n    def b():\n        pass\n"
        "async def c():\n    pass\n"
        "f = lambda: 0\n"
        "with x:\n    with y, z:\n        pass\n"
        "async def d():\n    async with w:\n        pass\n"
    )
    index = build(src)
    assert [f.name for f in index.functions] == ["a", "b"]
    assert [ast.unparse(w.items[0].context_expr) for w in index.withs] == ["x", "y"]


def test_empty_module() -> None:
    index = build("")
    assert index.refs == []
    assert dict(index.method_calls) == {}
    assert index.functions == []


def test_nodes_is_every_node_in_ast_walk_order_walked_once() -> None:
    tree = ast.parse("import tensorflow as tf\nx = tf.add(1, y)\n")
    index = ModuleIndex.build(tree)
    nodes = index.nodes()
    # ast.walk's order, without the Load and Store singletons
    walked = "Module Import Assign alias Name Call Attribute Constant Name Name"
    assert [type(n).__name__ for n in nodes] == walked.split()
    assert index.nodes() is nodes


LAMBDAS = """\
import tensorflow as tf
f = lambda tf: tf.nn.relu(1)
g = lambda x, y=lambda: tf.nn.tanh(2): (lambda tf=tf: tf.nn.gelu(x))()
class C:
    h = lambda self: tf.nn.elu(self)
"""


def _call_names(index: ModuleIndex) -> list[tuple[int, str]]:
    return sorted((r.node.lineno, r.name) for refs in index.calls.values() for r in refs)


def test_given_the_text_the_index_makes_lambda_scopes_as_its_walk_reaches_them() -> None:
    # A lambda's `tf` parameter is not the import; the default and the class's lambda see it.
    tree = ast.parse(LAMBDAS)
    index = ModuleIndex.build(tree, LAMBDAS)
    assert _call_names(index) == [(3, "tf.nn.tanh"), (5, "tf.nn.elu")]
    assert _call_names(ModuleIndex.build(tree)) == _call_names(index)  # the full scope pass
    lambdas = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)]
    found = [
        (n.lineno, n.col_offset, sorted(index.resolver.scope_of[id(n)].bindings)) for n in lambdas
    ]
    assert found == [
        (2, 4, ["tf"]),
        (3, 4, ["x", "y"]),
        (5, 8, ["self"]),
        (3, 16, []),
        (3, 40, ["tf"]),
    ]


def test_a_walrus_in_the_text_makes_the_scope_pass_walk_expressions() -> None:
    src = "import tensorflow as tf\nif (tf := make()):\n    tf.nn.relu(1)\n"
    tree = ast.parse(src)
    index = ModuleIndex.build(tree, src)
    assert index.resolver.resolve_name("tf", index.resolver.module) is None  # also `make()`
    assert _call_names(index) == []
    statements_only = Resolver(tree, expressions=False)  # what that pass would have missed
    assert statements_only.resolve_name("tf", statements_only.module) == "tensorflow"


def test_tree_parents_are_the_syntax_tree_s_own_and_come_with_the_nodes() -> None:
    src = "import tensorflow as tf\ndef f(x=tf.a.b):\n    pass\n"
    index = build(src)
    func = index.tree.body[1]
    assert isinstance(func, ast.FunctionDef)
    default = func.args.defaults[0]
    assert isinstance(default, ast.Attribute) and isinstance(default.value, ast.Attribute)
    inner = default.value.value  # `tf`, inside the dotted name
    parents = index.tree_parents()
    assert parents[id(default)] is func.args  # the index's walk says `func`
    assert index.parent(default) is func
    assert parents[id(inner)] is default.value and index.parent(inner) is None
    assert len(parents) == len(index.nodes()) - 1  # every node but the module
    assert index.tree_parents() is parents  # kept
    again = build(src)
    assert [type(n) for n in again.nodes()] == [type(n) for n in index.nodes()]
    later = again.tree_parents()  # the other way round: nodes first
    assert [type(later[id(n)]) for n in again.nodes()[1:]] == [
        type(parents[id(n)]) for n in index.nodes()[1:]
    ]

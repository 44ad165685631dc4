"""A small, conservative type inference: which expressions are provably a ``tf.data.Dataset``?

An expression has a kind when it is a call to a known factory (``tf.data.TFRecordDataset(...)``),
a known method on a value of that kind (``ds.map(f)``), a call to a local function whose every
``return`` has that kind, or a variable whose every binding in its scope has that kind. Anything
else has no kind, so rules that need proof (``drop_remainder`` on ``.batch``) leave it alone.
"""

from __future__ import annotations

import ast

from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.names import Binding, Scope, _dotted

DATASET = "dataset"
SUPERVISOR = "supervisor"
RUN_CONFIG = "run_config"
"""A ``tf.estimator.RunConfig`` or ``NPURunConfig``."""
NPU_CONFIG = "npu_config"
"""A ConfigProto that already carries the NPU settings (built by ``npu_config_proto``)."""
KERAS_MODEL = "keras_model"
"""A Keras model (``tf.keras`` or standalone ``keras``) that the script builds, loads or clones."""

_DATASET_FACTORIES = frozenset(
    {
        "tf.data.Dataset.from_tensor_slices",
        "tf.data.Dataset.from_tensors",
        "tf.data.Dataset.from_generator",
        "tf.data.Dataset.from_sparse_tensor_slices",
        "tf.data.Dataset.range",
        "tf.data.Dataset.zip",
        "tf.data.Dataset.list_files",
        "tf.data.TFRecordDataset",
        "tf.data.TextLineDataset",
        "tf.data.FixedLengthRecordDataset",
        "tf.data.experimental.CsvDataset",
        "tf.data.experimental.SqlDataset",
        "tf.data.experimental.RandomDataset",
        "tf.data.experimental.Counter",
        "tf.data.experimental.make_csv_dataset",
        "tf.data.experimental.make_batched_features_dataset",
        "tf.data.experimental.sample_from_datasets",
        "tf.data.experimental.choose_from_datasets",
        "tf.contrib.data.TFRecordDataset",
        "tf.contrib.data.TextLineDataset",
        "tf.contrib.data.make_csv_dataset",
        "tf.contrib.data.make_batched_features_dataset",
        "tf.contrib.data.sample_from_datasets",
    }
)

# Run config constructors. The TPU ones count because the tpu_estimator rule turns every one it
# can into an NPURunConfig (and reports the ones it cannot).
_RUN_CONFIG_CLASSES = frozenset(
    {
        "tf.estimator.RunConfig",
        "tf.contrib.tpu.RunConfig",
        "tf.estimator.tpu.RunConfig",
        "tf.contrib.tpu.python.tpu.tpu_config.RunConfig",
        "tf.python.tpu.tpu_config.RunConfig",
        "tf.estimator.python.estimator.tpu.tpu_config.RunConfig",
    }
)

_KERAS_MODEL_FACTORIES = frozenset(
    f"{root}.{name}"
    for root in ("tf.keras", "keras")
    for name in (
        "Model", "Sequential", "models.Model", "models.Sequential", "models.load_model",
        "models.model_from_json", "models.model_from_yaml", "models.clone_model",
    )
)  # fmt: skip


def is_keras_model_factory(name: str) -> bool:
    """True for a canonical name whose call returns a Keras model (``keras.applications.X`` too)."""
    if name in _KERAS_MODEL_FACTORIES:
        return True
    if name.startswith(("tf.keras.applications.", "keras.applications.")):
        return name.rsplit(".", 1)[1][:1].isupper()  # ResNet50, not preprocess_input
    return False


# npu_init helpers (star-imported, so they appear as bare names) that return an NPU config.
_NPU_CONFIG_BUILDERS = frozenset({"npu_config_proto", "npu_session_config"})

# Dataset methods that return a Dataset (``apply`` does too, by the transformation contract).
_DATASET_METHODS = frozenset(
    {
        "map", "flat_map", "interleave", "parallel_interleave", "filter", "shuffle", "repeat",
        "batch", "padded_batch", "prefetch", "cache", "take", "skip", "shard", "concatenate",
        "apply", "unbatch", "with_options", "map_with_legacy_function",
        "filter_with_legacy_function", "enumerate", "shuffle_and_repeat", "rebatch",
    }
)  # fmt: skip


# Kinds with methods returning the same kind, so a variable may be rebound from itself.
_SELF_PRESERVING = (DATASET, RUN_CONFIG)


class Kinds:
    """Kind inference over one module (results are memoised)."""

    def __init__(self, index: ModuleIndex) -> None:
        self.index = index
        self._names: dict[tuple[int, str], str | None] = {}
        self._functions: dict[int, str | None] = {}
        self._pending: set[tuple[int, str]] = set()
        """Names being inferred (their entry in ``_names`` is a guess)."""
        self._guessed: set[tuple[int, str]] = set()
        """Pending names whose guess was read (results computed meanwhile depend on it)."""

    def of(self, expr: ast.expr, scope: Scope) -> str | None:
        """The kind of ``expr`` evaluated in ``scope``, or None when it is not proven."""
        if isinstance(expr, ast.Call):
            return self._call(expr, scope)
        if isinstance(expr, ast.Name):
            return self._name(expr.id, scope)
        return None

    def is_dataset(self, expr: ast.expr, scope: Scope) -> bool:
        return self.of(expr, scope) == DATASET

    def _call(self, call: ast.Call, scope: Scope) -> str | None:
        func = call.func
        name = self.index.resolver.qualified(func, scope) if _dotted(func) else None
        if isinstance(func, ast.Name) and func.id in _NPU_CONFIG_BUILDERS:
            return NPU_CONFIG
        if isinstance(func, ast.Name) and func.id == "NPURunConfig":
            return RUN_CONFIG
        if name is not None:
            if name in _DATASET_FACTORIES:
                return DATASET
            if is_keras_model_factory(name):
                return KERAS_MODEL
            if name == "tf.train.Supervisor":
                return SUPERVISOR
            if name in _RUN_CONFIG_CLASSES:
                return RUN_CONFIG
            if _dataset_factory(name):
                return DATASET
        if isinstance(func, ast.Attribute) and func.attr in _DATASET_METHODS:
            if self.of(func.value, scope) == DATASET:
                return DATASET
        if isinstance(func, ast.Attribute) and func.attr == "replace":
            if self.of(func.value, scope) == RUN_CONFIG:
                return RUN_CONFIG
        if isinstance(func, ast.Name):
            return self._local_function(func.id, scope)
        return None

    def _name(self, name: str, scope: Scope) -> str | None:
        found = self.index.resolver.bindings_of(name, scope)
        if found is None:
            return None
        home, bindings = found
        key = (id(home), name)
        if key in self._names:
            if key in self._pending:
                self._guessed.add(key)
            return self._names[key]
        result: str | None = None
        self._pending.add(key)
        for guess in _SELF_PRESERVING:
            # Optimistic while in progress: ``ds = ds.map(f)``, ``cfg = cfg.replace(...)``.
            self._names[key] = guess
            marks = len(self._names), len(self._functions)
            result = self._agree(bindings, home)
            if result == guess or key not in self._guessed:
                break  # proven, or the guess was never used
            # The guess was wrong: forget what was inferred from it meanwhile.
            self._guessed.discard(key)
            while len(self._names) > marks[0]:
                self._names.popitem()
            while len(self._functions) > marks[1]:
                self._functions.popitem()
        self._pending.discard(key)
        self._guessed.discard(key)
        self._names[key] = result
        return result

    def _agree(self, bindings: list[Binding], home: Scope) -> str | None:
        kinds: set[str | None] = set()
        for binding in bindings:
            value = binding.value if binding.expr is None else binding.expr
            if not isinstance(value, ast.expr):
                return None
            kinds.add(self.of(value, home))
        return kinds.pop() if len(kinds) == 1 else None

    def _local_function(self, name: str, scope: Scope) -> str | None:
        found = self.index.resolver.bindings_of(name, scope)
        if found is None or len(found[1]) != 1:
            return None
        node = found[1][0].value
        if not isinstance(node, ast.FunctionDef):
            return None
        key = id(node)
        if key not in self._functions:
            self._functions[key] = None  # recursion guard
            inner = self.index.resolver.scope_of[key]
            returns = [r.value for r in _own_returns(node)]
            kinds = {self.of(v, inner) if v is not None else None for v in returns}
            self._functions[key] = kinds.pop() if len(kinds) == 1 else None
        return self._functions[key]


# Static constructors of tf.data.Dataset, also reached through a subclass
# (``tf.data.TFRecordDataset.list_files``) or TF 1.3's ``tf.contrib.data.Dataset``.
_STATIC_FACTORIES = frozenset(
    {"from_tensor_slices", "from_tensors", "from_generator", "from_sparse_tensor_slices", "range",
     "zip", "list_files"}
)  # fmt: skip


def _dataset_factory(name: str) -> bool:
    module, _, rest = name.partition(".data.")
    if module not in ("tf", "tf.contrib") or rest.count(".") != 1:
        return False
    cls, method = rest.split(".")
    return method in _STATIC_FACTORIES and cls.endswith("Dataset")


def _own_returns(func: ast.FunctionDef) -> list[ast.Return]:
    """``return`` statements of ``func`` itself, not of functions nested in it."""
    found: list[ast.Return] = []
    stack: list[ast.AST] = list(func.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        ):
            stack.extend(ast.iter_child_nodes(node))
    return found

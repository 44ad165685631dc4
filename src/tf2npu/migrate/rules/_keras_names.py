"""Which names a rewrite may use for TensorFlow and Keras in a file, for Keras Horovod code."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.names import Scope

TF_IMPORT = "import tensorflow as tf"


@dataclass(frozen=True, slots=True)
class KerasNames:
    """``tf`` and Keras expressions valid where a rewrite goes, and whether ``tf`` is imported."""

    tf: str
    keras: str
    """``keras`` (standalone Keras, which has its own session) or ``<tf>.keras``."""
    missing_tf: bool

    @property
    def backend(self) -> str:
        return f"{self.keras}.backend"

    def import_tf(self, ctx: FileContext) -> None:
        """Ask for ``import tensorflow as tf`` when the file has no name for TensorFlow."""
        if self.missing_tf:
            ctx.need_import(TF_IMPORT)


def bound_to(ctx: FileContext, module: str, scope: Scope) -> str | None:
    """A module-level name that, seen from ``scope``, refers to ``module``."""
    resolver = ctx.index.resolver
    for name in sorted(resolver.module.bindings):
        if resolver.resolve_name(name, scope) == module:
            return name
    return None


def standalone_keras(imports: list[ast.Import | ast.ImportFrom]) -> bool:
    """True when Horovod is imported as ``horovod.keras`` (standalone Keras, not tf.keras)."""
    for stmt in imports:
        if isinstance(stmt, ast.Import):
            if any(a.name == "horovod.keras" for a in stmt.names):
                return True
        elif stmt.module == "horovod.keras" or (
            stmt.module == "horovod" and any(a.name == "keras" for a in stmt.names)
        ):
            return True
    return False


def keras_names(ctx: FileContext, scope: Scope, standalone: bool) -> KerasNames | None:
    """Names for ``tf`` and Keras at ``scope``; None when ``tf`` is taken by something else."""
    tf = bound_to(ctx, "tensorflow", scope) or bound_to(ctx, "tensorflow.compat.v1", scope)
    missing = tf is None
    if tf is None:
        if ctx.index.resolver.bindings_of("tf", scope) is not None:
            return None
        tf = "tf"
    keras = bound_to(ctx, "keras", scope) if standalone else None
    return KerasNames(tf, keras or f"{tf}.keras", missing)

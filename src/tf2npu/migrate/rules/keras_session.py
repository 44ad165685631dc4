"""Keras in TF1 graph mode runs in an NPU session, opened before the model is built."""

from __future__ import annotations

import ast
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.kinds import KERAS_MODEL, is_keras_model_factory
from tf2npu.migrate.model import Severity
from tf2npu.migrate.names import Scope
from tf2npu.migrate.options import Distributed
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules._main_block import main_block, wrap_main_block
from tf2npu.migrate.rules._npu_config import HELPER_NAME, mix_compile, session_config_builder
from tf2npu.migrate.rules._patches import clash

SESSION_VAR = "npu_keras_sess"
_SET_KERAS_SESSION = "set_keras_session_npu_config"
_SET_SESSION = ("tf.keras.backend.set_session", "keras.backend.set_session")
_SESSIONS = frozenset({"tf.Session", "tf.InteractiveSession"})
_TRAINING_METHODS = ("compile", "fit", "fit_generator", "train_on_batch")
_MODEL_BASES = frozenset({"tf.keras.Model", "tf.keras.models.Model"})
# Calls that leave the script through SystemExit: statements after them never run.
_EXITS = frozenset({"tf.app.run", "absl.app.run", "sys.exit"})
# npu_init names (bare, star-imported) and Horovod wrappers that already distribute an optimizer.
_DISTRIBUTING = frozenset(
    {"npu_distributed_optimizer_wrapper", "npu_keras_optimizer", "KerasDistributeOptimizer",
     "NPUDistributedOptimizer", "npu_tf_optimizer"}
)  # fmt: skip
# Keras Model.fit / fit_generator: position of ``callbacks``.
_FIT_CALLBACKS = {"fit": 5, "fit_generator": 4}


@register
class KerasSession(Rule):
    """Keras in TF1 graph mode gets an NPU session, set before the model is built.

    In a file that builds or trains a Keras model (``Model(...)``, ``Sequential(...)``,
    ``.compile(...)``, ``.fit(...)``), the ``if __name__ == "__main__":`` block starts with
    ``npu_keras_sess = set_keras_session_npu_config()`` and closes the session in a ``finally:``
    (``tf.app.run`` leaves through ``sys.exit``, so a statement after it would never run). A file
    without that block gets the session before its first statement that runs (after its imports
    and definitions) and the close at its end when it is the ``--entry`` script, and otherwise a
    finding: the session belongs in the entry script. With standalone ``keras`` the session is
    also handed to ``keras.backend.set_session``.

    A script that already hands Keras its own session (``K.set_session(tf.Session(...))``) keeps
    it: the ``session_config`` rule gives that session the NPU config. ``clear_session()`` becomes
    ``npu_clear_session()``, which installs a fresh NPU session. With ``--distributed
    tf_strategy`` the optimizer given to ``compile`` is wrapped in
    ``npu_distributed_optimizer_wrapper`` and ``fit`` gets the NPU broadcast callback
    (``npu_callbacks_append``); Horovod scripts are distributed by the ``horovod`` rule instead.
    """

    name: ClassVar[str] = "keras_session"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\n\n\ndef main():\n"
            "    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
            "    model.compile(optimizer='sgd', loss='mse')\n\n\n"
            'if __name__ == "__main__":\n    main()\n',
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n\n\ndef main():\n"
            "    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])\n"
            "    model.compile(optimizer='sgd', loss='mse')\n\n\n"
            'if __name__ == "__main__":\n'
            "    npu_keras_sess = set_keras_session_npu_config()\n"
            "    try:\n        main()\n    finally:\n        close_session(npu_keras_sess)\n",
            "the Keras session is opened first and always closed",
        ),
        Example(
            "import tensorflow as tf\nfrom tensorflow.keras import backend as K\n"
            "K.clear_session()\nK.set_session(tf.Session(config=tf.ConfigProto()))\n",
            "from npu_bridge.npu_init import *\n"
            "import tensorflow as tf\nfrom tensorflow.keras import backend as K\n"
            "npu_clear_session()\n"
            "K.set_session(tf.Session(config=npu_config_proto(config_proto=tf.ConfigProto())))\n",
            "the script's own Keras session gets the NPU config",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        tf_keras, standalone = _keras_flavours(ctx)
        if not (tf_keras or standalone):
            return
        self._clear_sessions(ctx)
        if ctx.options.distributed is Distributed.TF_STRATEGY:
            self._distribute(ctx, standalone and not tf_keras)
        set_sessions = ctx.index.calls_to(*_SET_SESSION)
        if set_sessions:
            for ref in set_sessions:
                assert ref.call is not None
                self._check_own_session(ctx, ref.call, ref.scope)
            return
        anchor = _model_anchor(ctx)
        if anchor is None or _calls_bare(ctx.tree, _SET_KERAS_SESSION):
            return
        block = main_block(ctx)
        if block is not None:
            setup = self._setup_lines(ctx, anchor, standalone)
            if wrap_main_block(ctx, self.name, block, setup, [f"close_session({SESSION_VAR})"]):
                _configured(ctx)
            else:
                ctx.finding(self.name, block, Severity.WARNING,
                            "the Keras model needs an NPU session, but this __main__ block "
                            "cannot be wrapped automatically (one-line block or overlapping "
                            "rewrite)", _manual_fix())  # fmt: skip
        elif ctx.is_entry:
            self._module_session(ctx, self._setup_lines(ctx, anchor, standalone), anchor)
        else:
            entry = ctx.options.entry
            ctx.finding(self.name, anchor, Severity.INFO,
                        "a Keras model is built here, but this file has no "
                        '`if __name__ == "__main__":` block: the Keras NPU session must be set '
                        "up in the entry script",
                        (f"check that the entry script {entry} sets it up (tf2npu does when that "
                         "script uses Keras itself)" if entry else
                         "name the entry script with --entry FILE so tf2npu sets it up there")
                        + f"; by hand: {_manual_fix()[0].lower()}{_manual_fix()[1:]}")  # fmt: skip

    # -- sessions -----------------------------------------------------------------------------
    def _setup_lines(self, ctx: FileContext, anchor: ast.AST, standalone: bool) -> list[str]:
        config = f"config={HELPER_NAME}()" if _needs_helper(ctx) else ""
        lines = [f"{SESSION_VAR} = {_SET_KERAS_SESSION}({config})"]
        if standalone:
            backend = _standalone_backend(ctx)
            if backend is not None:
                # set_keras_session_npu_config installs the session in tf.keras only.
                lines.append(f"{backend}.set_session({SESSION_VAR})")
            else:
                ctx.finding(self.name, anchor, Severity.WARNING,
                            "standalone Keras keeps its own session: set_keras_session_npu_config "
                            "installs the NPU session in tf.keras only",
                            f"after the session is set up, call "
                            f"keras.backend.set_session({SESSION_VAR})")  # fmt: skip
        return lines

    def _module_session(self, ctx: FileContext, setup: list[str], anchor: ast.AST) -> None:
        """The entry script without a __main__ block: the module body itself is wrapped."""
        body = ctx.tree.body
        runs = [s for s in body if not _is_declaration(s)]
        if not runs or not all(ctx.owns_lines(s) for s in (runs[0], body[-1])):
            ctx.finding(self.name, anchor, Severity.WARNING,
                        "the Keras model needs an NPU session, but the script's body cannot be "
                        "wrapped automatically", _manual_fix())  # fmt: skip
            return
        source, nl = ctx.source, ctx.source.newline
        top = source.line_start(runs[0].lineno)
        edits: list[Edit | None] = [Edit(top, top, "".join(f"{line}{nl}" for line in setup))]
        last = body[-1]
        cleanup = f"close_session({SESSION_VAR})"
        if _exits(ctx, last):
            unit = _indent_unit(ctx)
            assert last.end_lineno is not None
            start = source.line_start(last.lineno)
            edits.append(Edit(start, start, f"try:{nl}"))
            edits += [
                Edit(source.line_start(n), source.line_start(n), unit)
                for n in range(last.lineno, last.end_lineno + 1)
                if n not in ctx.string_lines and source.line_text(n).strip()
            ]
            edits.append(ctx.insert_lines_after(last, ["finally:", f"{unit}{cleanup}"]))
        else:
            edits.append(ctx.insert_lines_after(last, [cleanup]))
        if clash(ctx, edits) is None and ctx.patch(self.name, runs[0], edits):
            _configured(ctx)
        else:
            ctx.finding(self.name, anchor, Severity.WARNING,
                        "the Keras NPU session was not added: another rewrite edits the same "
                        "lines", _manual_fix())  # fmt: skip

    def _check_own_session(self, ctx: FileContext, call: ast.Call, scope: Scope) -> None:
        """``K.set_session(s)``: fine when ``s`` is a session the session_config rule configures."""
        value = ctx.argument(call, 0, "session")
        if value is None or _is_tf_session(ctx, value, scope):
            return
        ctx.finding(self.name, call, Severity.INFO,
                    "Keras is given a session created elsewhere: it needs the NPU config",
                    "create it with tf.Session(config=npu_config_proto(config_proto=...)), or "
                    f"use {_SET_KERAS_SESSION}() instead of set_session")  # fmt: skip

    def _clear_sessions(self, ctx: FileContext) -> None:
        for ref in ctx.index.calls_to("tf.keras.backend.clear_session"):
            assert ref.call is not None
            if ctx.patch(self.name, ref.call, [ctx.replace(ref.node, "npu_clear_session")]):
                ctx.need_import()
        for ref in ctx.index.calls_to("keras.backend.clear_session"):
            ctx.finding(self.name, ref.node, Severity.INFO,
                        "standalone Keras clear_session(): the next session Keras creates has no "
                        "NPU config", f"after it, call keras.backend.set_session("
                        f"{_SET_KERAS_SESSION}())")  # fmt: skip

    # -- distributed (--distributed tf_strategy) ------------------------------------------------
    def _distribute(self, ctx: FileContext, standalone: bool) -> None:
        for method in ("compile", *_FIT_CALLBACKS):
            for mc in ctx.index.method_calls.get(method, ()):
                if ctx.kinds.of(mc.receiver, mc.scope) != KERAS_MODEL:
                    severity = Severity.WARNING if method == "compile" else Severity.INFO
                    ctx.finding(self.name, mc.call, severity,
                                f".{method}(...) not distributed: cannot tell that "
                                f"{ctx.segment(mc.receiver)} is a Keras model",
                                _distribute_fix(method))  # fmt: skip
                elif method == "compile":
                    self._wrap_optimizer(ctx, mc.call, mc.scope, standalone)
                else:
                    self._broadcast_callback(ctx, mc.call, _FIT_CALLBACKS[method])

    def _wrap_optimizer(
        self, ctx: FileContext, call: ast.Call, scope: Scope, standalone: bool
    ) -> None:
        wrapper = "npu_distributed_optimizer_wrapper"
        value = ctx.argument(call, 0, "optimizer")
        if value is None and not _has_unpacking(call):
            # compile()'s default optimizer is the string "rmsprop".
            edits = [ctx.add_keyword(call, "optimizer", f'{wrapper}("rmsprop")')]
        elif value is None or _distributed_already(ctx, value, scope):
            return
        elif isinstance(value, ast.Constant) and standalone:
            # The wrapper turns a string into a tf.keras optimizer, which standalone Keras rejects.
            ctx.finding(
                self.name,
                value,
                Severity.WARNING,
                "optimizer not distributed: the wrapper would make a tf.keras optimizer",
                f"pass keras.optimizers.get({ctx.segment(value)}) to {wrapper}(...)",
            )
            return  # fmt: skip
        else:
            edits = ctx.wrap(value, f"{wrapper}(", ")")
        if ctx.patch(self.name, call, edits):
            ctx.need_import()

    def _broadcast_callback(self, ctx: FileContext, call: ast.Call, position: int) -> None:
        """Every worker starts from rank 0's weights (as Horovod's broadcast callback does)."""
        value = ctx.argument(call, position, "callbacks")
        if value is None and not _has_unpacking(call):
            edits = [ctx.add_keyword(call, "callbacks", "npu_callbacks_append()")]
        elif isinstance(value, ast.List):
            edits = ctx.wrap(value, "npu_callbacks_append(callbacks_list=", ")")
        elif value is not None and _bare_callee(value) == "npu_callbacks_append":
            return
        else:
            # npu_callbacks_append replaces anything but a list by [] (it would drop a tuple).
            ctx.finding(
                self.name,
                call,
                Severity.WARNING,
                "fit(...) callbacks not extended with the NPU broadcast callback",
                "pass callbacks=npu_callbacks_append(callbacks_list=[...]) with a list",
            )
            return  # fmt: skip
        if ctx.patch(self.name, call, edits):
            ctx.need_import()


def _needs_helper(ctx: FileContext) -> bool:
    """Whether the session config comes from the helper (known before asking for it)."""
    return ctx.options.precision_mode is not None or mix_compile(ctx)


def _configured(ctx: FileContext) -> None:
    """The session was added: ask for the import, and the config helper if it uses one."""
    ctx.need_import()
    builder = session_config_builder(ctx)
    assert (builder == HELPER_NAME) == _needs_helper(ctx)


# -- what the file does ---------------------------------------------------------------------------
def _keras_flavours(ctx: FileContext) -> tuple[bool, bool]:
    """Whether the file uses ``tf.keras`` and whether it uses standalone ``keras``."""
    tf_keras = ctx.index.uses("tf.keras")
    standalone = any(_is_standalone(name) for name in ctx.index.calls) or any(
        b.target is not None and _is_standalone(b.target)
        for bindings in ctx.index.resolver.module.bindings.values()
        for b in bindings
    )
    return tf_keras, standalone


def _is_standalone(name: str) -> bool:
    return name == "keras" or name.startswith("keras.")


def _model_anchor(ctx: FileContext) -> ast.AST | None:
    """The first place the file builds or trains a Keras model (None when it does not)."""
    found: list[ast.AST] = [
        ref.node for name, refs in ctx.index.calls.items() if is_keras_model_factory(name)
        for ref in refs
    ]  # fmt: skip
    found += [r.node for r in ctx.index.refs if r.kind == "base" and r.name in _MODEL_BASES]
    found += [mc.call for m in _TRAINING_METHODS for mc in ctx.index.method_calls.get(m, ())]
    return min(found, key=lambda n: (n.lineno, n.col_offset), default=None)  # type: ignore[attr-defined]


def _standalone_backend(ctx: FileContext) -> str | None:
    """A module-level name through which ``keras.backend`` can be reached, as text."""
    module = ctx.index.resolver.module
    candidates: list[str] = []
    for name in module.bindings:
        target = ctx.index.resolver.resolve_name(name, module)
        if target == "keras.backend":
            return name
        if target == "keras":
            candidates.append(f"{name}.backend")
    return candidates[0] if candidates else None


def _calls_bare(tree: ast.AST, name: str) -> bool:
    return any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name
        for n in ast.walk(tree)
    )


def _bare_callee(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id
    return None


def _has_unpacking(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    )


def _is_tf_session(ctx: FileContext, value: ast.expr, scope: Scope) -> bool:
    """A ``tf.Session(...)`` call, or a name bound only to such calls (``with ... as s`` too)."""
    if isinstance(value, ast.Call):
        return ctx.index.callee(value) in _SESSIONS
    if not isinstance(value, ast.Name):
        return False
    found = ctx.index.resolver.bindings_of(value.id, scope)
    if found is None:
        return False
    withs = [
        item.context_expr for w in ctx.index.withs for item in w.items
        if isinstance(item.optional_vars, ast.Name) and item.optional_vars.id == value.id
    ]  # fmt: skip
    for binding in found[1]:
        if isinstance(binding.value, ast.expr):
            if not _is_tf_session(ctx, binding.value, found[0]):
                return False
        elif not withs or not all(_is_tf_session(ctx, w, found[0]) for w in withs):
            return False
    return True


def _distributed_already(ctx: FileContext, value: ast.expr, scope: Scope) -> bool:
    """The optimizer is already distributed: an NPU wrapper, Horovod's, or a name bound to one."""

    def distributing(node: ast.expr) -> bool:
        name = _bare_callee(node)
        if name is None and isinstance(node, ast.Call):
            name = ctx.index.callee(node)
        return name is not None and (name in _DISTRIBUTING or name.startswith("hvd."))

    if isinstance(value, ast.Name):
        found = ctx.index.resolver.bindings_of(value.id, scope)
        bindings = found[1] if found is not None else []
        return any(isinstance(b.value, ast.expr) and distributing(b.value) for b in bindings)
    return distributing(value)


def _is_declaration(stmt: ast.stmt) -> bool:
    """Statements that only define names: docstring, imports, functions, classes."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return isinstance(stmt.value.value, str)
    return isinstance(
        stmt, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    )


def _exits(ctx: FileContext, stmt: ast.stmt) -> bool:
    """``tf.app.run(main)``, ``absl.app.run(main)``, ``sys.exit(...)`` as a statement."""
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    return ctx.index.callee(stmt.value) in _EXITS


def _indent_unit(ctx: FileContext) -> str:
    """The file's indentation step, from its first indented block (four spaces if none)."""
    for stmt in ast.walk(ctx.tree):
        body = getattr(stmt, "body", None)
        if isinstance(stmt, ast.stmt) and isinstance(body, list) and body:
            outer = ctx.source.indent_of(stmt.lineno)
            inner = ctx.source.indent_of(body[0].lineno)
            if body[0].lineno != stmt.lineno and inner.startswith(outer) and inner != outer:
                return inner[len(outer) :]
    return "    "


def _manual_fix() -> str:
    return (
        f"Add {SESSION_VAR} = {_SET_KERAS_SESSION}() before the model is built and "
        f"close_session({SESSION_VAR}) when training is done (in a finally: block)"
    )


def _distribute_fix(method: str) -> str:
    if method == "compile":
        return "wrap its optimizer: optimizer=npu_distributed_optimizer_wrapper(...)"
    return "pass callbacks=npu_callbacks_append(callbacks_list=[...])"

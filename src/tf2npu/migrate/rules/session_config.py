"""Every session the script creates gets an NPU session config."""

from __future__ import annotations

import ast
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.kinds import NPU_CONFIG, SUPERVISOR
from tf2npu.migrate.model import Severity
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules._npu_config import session_config_builder

# Session-creating API -> position of its ``config`` parameter (None: keyword only here).
_SESSION_APIS: dict[str, int] = {
    "tf.Session": 2,
    "tf.InteractiveSession": 2,
    "tf.train.MonitoredTrainingSession": 9,
    "tf.train.SingularMonitoredSession": 3,
    "tf.train.ChiefSessionCreator": 2,
    "tf.train.WorkerSessionCreator": 2,
}
_SUPERVISOR_METHODS: dict[str, int] = {"managed_session": 1, "prepare_or_wait_for_session": 1}


@register
class SessionConfig(Rule):
    """Every session creation ends up with an NPU-configured ``config``.

    ``tf.Session``, ``InteractiveSession``, ``MonitoredTrainingSession``,
    ``SingularMonitoredSession``, the monitored-session creators and a ``Supervisor``'s
    ``managed_session`` / ``prepare_or_wait_for_session`` get
    ``config=npu_config_proto(config_proto=<original>)``: the user's settings are kept, the
    ``NpuOptimizer`` is added and ``remapping`` is switched off. A config built earlier and passed
    by variable is wrapped where it is passed. ``MonitoredSession`` without a session creator gets
    a ``ChiefSessionCreator`` with the NPU config.
    """

    name: ClassVar[str] = "session_config"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\nconfig = tf.ConfigProto()\n"
            "sess = tf.Session(config=config)\n",
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
            "config = tf.ConfigProto()\n"
            "sess = tf.Session(config=npu_config_proto(config_proto=config))\n",
            "a config passed by variable",
        ),
        Example(
            "import tensorflow as tf\nwith tf.Session() as sess:\n    pass\n",
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
            "with tf.Session(config=npu_config_proto()) as sess:\n    pass\n",
            "a session without a config",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        for ref in ctx.index.calls_to(*_SESSION_APIS):
            assert ref.call is not None
            self._configure(ctx, ref.call, _SESSION_APIS[ref.name], ref.scope)
        for method, position in _SUPERVISOR_METHODS.items():
            for mc in ctx.index.method_calls.get(method, ()):
                if ctx.kinds.of(mc.receiver, mc.scope) == SUPERVISOR:
                    self._configure(ctx, mc.call, position, mc.scope)
        for ref in ctx.index.calls_to("tf.train.MonitoredSession"):
            assert ref.call is not None
            self._monitored_session(ctx, ref.call, ref.node)

    def _configure(self, ctx: FileContext, call: ast.Call, position: int, scope: object) -> None:
        value = ctx.argument(call, position, "config")
        builder = session_config_builder(ctx)
        if value is None:
            if any(isinstance(a, ast.Starred) for a in call.args) or any(
                k.arg is None for k in call.keywords
            ):
                ctx.finding(self.name, call, Severity.WARNING,
                            "session created with *args/**kwargs: cannot tell if it has a config",
                            f"pass config={builder}(config_proto=...) explicitly")  # fmt: skip
                return
            if ctx.patch(self.name, call, [ctx.add_keyword(call, "config", f"{builder}()")]):
                ctx.need_import()
            return
        if self._already_npu(ctx, value, scope):
            return
        if ctx.patch(self.name, call, ctx.wrap(value, f"{builder}(config_proto=", ")")):
            ctx.need_import()

    @staticmethod
    def _already_npu(ctx: FileContext, value: ast.expr, scope: object) -> bool:
        return ctx.kinds.of(value, scope) == NPU_CONFIG  # type: ignore[arg-type]

    def _monitored_session(self, ctx: FileContext, call: ast.Call, callee: ast.expr) -> None:
        if ctx.argument(call, 0, "session_creator") is not None:
            return  # the creator itself is configured where it is built
        if not isinstance(callee, ast.Attribute):
            ctx.finding(self.name, call, Severity.WARNING,
                        "MonitoredSession without a session_creator runs without the NPU config",
                        "pass session_creator=tf.train.ChiefSessionCreator("
                        "config=npu_config_proto())")  # fmt: skip
            return
        prefix = ctx.segment(callee.value)
        builder = session_config_builder(ctx)
        creator = f"{prefix}.ChiefSessionCreator(config={builder}())"
        if ctx.patch(self.name, call, [ctx.add_keyword(call, "session_creator", creator)]):
            ctx.need_import()

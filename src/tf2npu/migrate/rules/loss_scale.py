"""TF loss scaling becomes the NPU's, and ``--loss-scale`` adds it to the training optimizers."""

from __future__ import annotations

import ast
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.edits import Edit
from tf2npu.migrate.model import Severity
from tf2npu.migrate.names import Scope
from tf2npu.migrate.options import Distributed
from tf2npu.migrate.rule import Example, Rule, register
from tf2npu.migrate.rules._renames import apply_renames
from tf2npu.migrate.rules._text import as_operand

_MIXED_PRECISION_OPTIMIZER = "tf.train.experimental.MixedPrecisionLossScaleOptimizer"
_AMP_REWRITES = (
    "tf.train.experimental.enable_mixed_precision_graph_rewrite",
    "tf.mixed_precision.enable_mixed_precision_graph_rewrite",
)
_FIXED = ("tf.train.experimental.FixedLossScale", "tf.mixed_precision.experimental.FixedLossScale")
_DYNAMIC = (
    "tf.train.experimental.DynamicLossScale",
    "tf.mixed_precision.experimental.DynamicLossScale",
)
_CUSTOM_LOSS_SCALE = (
    "tf.train.experimental.LossScale",
    "tf.mixed_precision.experimental.LossScale",
)
# Values that already are (or become, through this rule) an NPU loss-scale manager.
_MANAGER_NAMES = frozenset({"FixedLossScaleManager", "ExponentialUpdateLossScaleManager"})
# Optimizers that already scale the loss: the tool must not wrap their inner optimizer again.
_SCALING_BARE = frozenset({"NPULossScaleOptimizer", "NPUOptimizer"})
_SCALING = frozenset(
    {_MIXED_PRECISION_OPTIMIZER, *_AMP_REWRITES, "tf.contrib.mixed_precision.LossScaleOptimizer"}
)
_TRAIN_METHODS = ("minimize", "compute_gradients", "apply_gradients")
_NOT_TRAINING_OPTIMIZERS = frozenset({"Optimizer", "SyncReplicasOptimizer"})
_CONTRIB_OPTIMIZERS = frozenset(
    f"tf.contrib.opt.{name}"
    for name in ("AdamWOptimizer", "LazyAdamOptimizer", "MomentumWOptimizer", "NadamOptimizer",
                 "AdaMaxOptimizer", "AddSignOptimizer", "PowerSignOptimizer")
)  # fmt: skip

TF_DYNAMIC_MANAGER = (
    "ExponentialUpdateLossScaleManager(init_loss_scale=2**15, incr_every_n_steps=2000, "
    "decr_every_n_nan_or_inf=1, incr_ratio=2.0, decr_ratio=0.5)"
)
"""TF's ``loss_scale="dynamic"`` (``DynamicLossScale()`` defaults), in NPU terms."""
DYNAMIC_MANAGER = TF_DYNAMIC_MANAGER
"""``--loss-scale dynamic``: the vendor's documented default, see :class:`LossScale`."""
_MANUAL = "FixedLossScaleManager(loss_scale=N) or ExponentialUpdateLossScaleManager(...)"


@register
class LossScale(Rule):
    """TF's loss scaling becomes ``NPULossScaleOptimizer`` with an NPU loss-scale manager.

    The NPU reports overflow through its float-status register (in saturation mode, the only
    one of the Atlas training series, fp16 overflow gives the largest value instead of inf), which
    only ``NPULossScaleOptimizer`` reads: TF's finiteness checks can miss it.
    ``tf.train.experimental.MixedPrecisionLossScaleOptimizer(opt, loss_scale)`` and
    ``enable_mixed_precision_graph_rewrite(opt, loss_scale)`` become
    ``NPULossScaleOptimizer(opt, loss_scale_manager=...)``; the rewrite's fp16 graph pass is the
    ``precision_mode="allow_mix_precision"`` session option on Ascend, which a finding recommends.
    ``FixedLossScale(v)`` becomes ``FixedLossScaleManager(loss_scale=v)``, a number
    ``loss_scale`` too. ``DynamicLossScale(initial_loss_scale, increment_period, multiplier)``
    becomes ``ExponentialUpdateLossScaleManager(init_loss_scale=..., incr_every_n_steps=...,
    decr_every_n_nan_or_inf=1, incr_ratio=multiplier, decr_ratio=1 / multiplier)``: TF divides
    the scale by the multiplier (down to 1) on *every* non-finite step and multiplies it after
    ``increment_period`` finite ones, which is exactly what those manager arguments do (the
    manager's own defaults, 2 bad steps and a ratio of 0.8, would differ). ``"dynamic"`` is
    ``DynamicLossScale()``: 2**15, 2000, 2. In a Horovod script ``is_distributed=True`` is added:
    every worker must see every worker's overflow status, or one would skip a step the others
    apply and the replicas would drift apart.

    ``--loss-scale fixed:N`` / ``dynamic`` wraps each optimizer that trains the model (one whose
    ``minimize`` / ``compute_gradients`` / ``apply_gradients`` is called, assigned to a name or
    chained as in ``tf.train.AdamOptimizer(lr).minimize(loss)``, which keeps its
    ``.minimize(loss)``) in ``NPULossScaleOptimizer(opt, <manager>)``, unless it is already
    loss-scaled. ``dynamic`` writes
    ``ExponentialUpdateLossScaleManager(init_loss_scale=2**15, incr_every_n_steps=2000,
    decr_every_n_nan_or_inf=1, incr_ratio=2.0, decr_ratio=0.5)``.

    Source of those values: the Ascend API reference gives ``init_loss_scale`` and
    ``incr_every_n_steps`` no default ("ExponentialUpdateLossScaleManager constructor",
    hiascend.com TensorFlowCommercial tfadapter1x tfmigr1_tfadapi_0067). The vendor's own
    migration tool, converting TF's dynamic loss scale, fills in 2**15, 2000 and 2
    (reference/ascend-adapter.md, migration rule L14), TF 1.15's ``DynamicLossScale()``
    defaults ("2 ** 15, which is approximately half the maximum float16 value"), and the TF 2
    adapter's ``NpuLossScaleOptimizer(dynamic=True)`` keeps them too. The decrease follows TF's
    rule (halve on each overflowing step), not the manager's defaults (2 steps, x0.8), which
    would skip about 31 steps before a scale of 2**15 came down to 2**10. The
    ``init_loss_scale=2**32, incr_every_n_steps=1000, decr_every_n_nan_or_inf=2,
    decr_ratio=0.5`` of the NPULossScaleOptimizer page (tfmigr1_tfadapi_0063) is the BERT
    example's setting, not a default: from 2**32 a small fp16 model skips dozens of steps (34 of
    40 measured) while the scale comes down.
    """

    name: ClassVar[str] = "loss_scale"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\nopt = tf.train.AdamOptimizer(1e-3)\n"
            "opt = tf.train.experimental.MixedPrecisionLossScaleOptimizer(\n"
            "    opt, tf.train.experimental.DynamicLossScale(initial_loss_scale=1024))\n",
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
            "opt = tf.train.AdamOptimizer(1e-3)\nopt = NPULossScaleOptimizer(\n"
            "    opt, loss_scale_manager=ExponentialUpdateLossScaleManager(init_loss_scale=1024, "
            "incr_every_n_steps=2000, decr_every_n_nan_or_inf=1, incr_ratio=2.0, "
            "decr_ratio=0.5))\n",
            "TF's dynamic loss scale keeps its update rule",
        ),
        Example(
            "import tensorflow as tf\n"
            "opt = tf.train.experimental.MixedPrecisionLossScaleOptimizer(opt, 128)\n",
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
            "opt = NPULossScaleOptimizer(opt, "
            "loss_scale_manager=FixedLossScaleManager(loss_scale=128))\n",
            "a fixed loss scale",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        for ref in ctx.index.calls_to(*_FIXED):
            assert ref.call is not None
            self._fixed(ctx, ref.call, ref.node)
        for ref in ctx.index.calls_to(*_DYNAMIC):
            assert ref.call is not None
            self._dynamic(ctx, ref.call)
        for ref in ctx.index.calls_to(_MIXED_PRECISION_OPTIMIZER, *_AMP_REWRITES):
            assert ref.call is not None
            self._optimizer(ctx, ref.call, ref.node, ref.scope, amp=ref.name in _AMP_REWRITES)
        for ref in ctx.index.refs:
            if ref.kind == "base" and ref.name in _CUSTOM_LOSS_SCALE:
                ctx.finding(self.name, ref.node, Severity.WARNING,
                            "a custom TF LossScale is not migrated: the NPU detects overflow "
                            "through NPULossScaleOptimizer and its managers",
                            f"use {_MANUAL} with NPULossScaleOptimizer")  # fmt: skip
        apply_renames(ctx, self.name, ctx.index.refs)
        if ctx.options.loss_scale.mode != "none":
            _TrainingOptimizers(self.name, ctx).wrap_all()

    # -- TF loss-scale objects -----------------------------------------------------------------
    def _fixed(self, ctx: FileContext, call: ast.Call, callee: ast.expr) -> None:
        value = ctx.argument(call, 0, "loss_scale_value")
        if value is None or _has_unpacking(call):
            ctx.finding(
                self.name,
                call,
                Severity.WARNING,
                "FixedLossScale(...) not rewritten: its value is not visible here",
                "use FixedLossScaleManager(loss_scale=N)",
            )
            return  # fmt: skip
        edits = [
            ctx.replace(callee, "FixedLossScaleManager"),
            _name_argument(ctx, call, value, "loss_scale"),
        ]
        if ctx.patch(self.name, call, edits):
            ctx.need_import()

    def _dynamic(self, ctx: FileContext, call: ast.Call) -> None:
        init = ctx.argument(call, 0, "initial_loss_scale")
        period = ctx.argument(call, 1, "increment_period")
        multiplier = ctx.argument(call, 2, "multiplier")
        if _has_unpacking(call) or (multiplier is not None and _calls_inside(multiplier)):
            # The multiplier appears twice in the manager; a call in it would run twice.
            ctx.finding(
                self.name,
                call,
                Severity.WARNING,
                "DynamicLossScale(...) not rewritten: its arguments cannot be mapped safely",
                "use ExponentialUpdateLossScaleManager(init_loss_scale=..., "
                "incr_every_n_steps=..., decr_every_n_nan_or_inf=1, incr_ratio=m, "
                "decr_ratio=1 / m)",
            )
            return  # fmt: skip
        text = _dynamic_manager(
            ctx.segment(init) if init is not None else "2**15",
            ctx.segment(period) if period is not None else "2000",
            None if multiplier is None else (multiplier, ctx.segment(multiplier)),
        )
        if ctx.patch(self.name, call, [ctx.replace(call, text)]):
            ctx.need_import()

    # -- TF loss-scaling optimizers ------------------------------------------------------------
    def _optimizer(
        self, ctx: FileContext, call: ast.Call, callee: ast.expr, scope: Scope, amp: bool
    ) -> None:
        short = ctx.index.callee(call) or ""
        short = short.rsplit(".", 1)[-1]
        opt = ctx.argument(call, 0, "opt")
        loss = ctx.argument(call, 1, "loss_scale")
        if opt is None or _has_unpacking(call) or (loss is None and not amp):
            ctx.finding(
                self.name,
                call,
                Severity.WARNING,
                f"{short}(...) not rewritten: its arguments are not visible here",
                f"use NPULossScaleOptimizer(opt, loss_scale_manager={_MANUAL})",
            )
            return  # fmt: skip
        if _is_keras_optimizer(ctx, opt, scope):
            ctx.finding(
                self.name,
                call,
                Severity.WARNING,
                f"{short}(...) given a Keras optimizer: NPULossScaleOptimizer wraps "
                "tf.train optimizers only",
                "use a tf.train optimizer",
            )
            return  # fmt: skip
        edits: list[Edit | None] = [ctx.replace(callee, "NPULossScaleOptimizer")]
        if loss is None:
            edits.append(ctx.add_keyword(call, "loss_scale_manager", TF_DYNAMIC_MANAGER))
        else:
            manager = _manager_for(ctx, loss, scope)
            if manager is None:
                ctx.finding(
                    self.name,
                    loss,
                    Severity.WARNING,
                    f"{short}(...) not rewritten: cannot tell what loss scale "
                    f"{ctx.segment(loss)} is",
                    f"pass loss_scale_manager={_MANUAL}",
                )
                return  # fmt: skip
            edits.append(_name_argument(ctx, call, loss, "loss_scale_manager"))
            if manager:
                edits.append(ctx.replace(loss, manager))
        if _horovod_migrated(ctx):
            edits.append(ctx.add_keyword(call, "is_distributed", "True"))
        if not ctx.patch(self.name, call, edits):
            return
        ctx.need_import()
        _distributed_note(self.name, ctx, call)
        if amp and not (ctx.options.precision_mode or "").startswith("allow_mix_precision"):
            ctx.finding(self.name, call, Severity.INFO,
                        "the mixed-precision graph rewrite is a session option on Ascend: only "
                        "the loss scaling was migrated here",
                        "migrate with --precision-mode allow_mix_precision to compute in fp16 "
                        "where it is safe")  # fmt: skip


class _TrainingOptimizers:
    """``--loss-scale``: the optimizers that train the model, wrapped in NPULossScaleOptimizer."""

    def __init__(self, rule: str, ctx: FileContext) -> None:
        self.rule = rule
        self.ctx = ctx
        mode = ctx.options.loss_scale
        if mode.mode == "fixed":
            value = mode.value
            number = str(int(value)) if value.is_integer() else repr(value)
            manager = f"FixedLossScaleManager(loss_scale={number})"
        else:
            manager = DYNAMIC_MANAGER
        self.suffix = f", {manager}" + (", is_distributed=True" if _horovod_migrated(ctx) else "")
        # (id(scope), name) -> the training methods called on that name there.
        self.trained: dict[tuple[int, str], set[str]] = {}
        for method in _TRAIN_METHODS:
            for mc in ctx.index.method_calls.get(method, ()):
                if isinstance(mc.receiver, ast.Name):
                    found = ctx.index.resolver.bindings_of(mc.receiver.id, mc.scope)
                    if found is not None:
                        key = (id(found[0]), mc.receiver.id)
                        self.trained.setdefault(key, set()).add(method)

    def wrap_all(self) -> None:
        for call, scope in self._constructions():
            methods = self._training_methods(call, scope)
            if methods is None:
                continue  # already loss-scaled
            if not methods:
                self.ctx.finding(self.rule, call, Severity.INFO,
                                 "--loss-scale: optimizer not wrapped: tf2npu cannot tell that it "
                                 "trains the model here",
                                 f"if it does, wrap it: NPULossScaleOptimizer(<optimizer>"
                                 f"{self.suffix})")  # fmt: skip
                continue
            edits = self.ctx.wrap(call, "NPULossScaleOptimizer(", self.suffix + ")")
            if not self.ctx.patch(self.rule, call, edits):
                continue
            self.ctx.need_import()
            _distributed_note(self.rule, self.ctx, call)
            if methods == {"apply_gradients"}:
                self.ctx.finding(self.rule, call, Severity.INFO,
                                 "this optimizer only applies gradients computed elsewhere (e.g. "
                                 "tf.gradients): the loss is not scaled, only overflowing steps "
                                 "are skipped",
                                 "compute the gradients with <optimizer>.compute_gradients(loss) "
                                 "so that the loss is scaled")  # fmt: skip

    def _constructions(self) -> list[tuple[ast.Call, Scope]]:
        """Calls that construct a TF optimizer: tf.train ones and the file's own subclasses."""
        index = self.ctx.index
        names = [n for n in index.calls if _is_tf_optimizer(n)]
        found = [(r.call, r.scope) for r in index.calls_to(*names) if r.call is not None]
        classes = {
            parent.name
            for r in index.refs
            if r.kind == "base" and (_is_tf_optimizer(r.name) or r.name == "tf.train.Optimizer")
            and isinstance(parent := index.parent(r.node), ast.ClassDef)
        }  # fmt: skip
        if classes:
            for node in ast.walk(self.ctx.tree):
                func = node.func if isinstance(node, ast.Call) else None
                if isinstance(func, ast.Name) and func.id in classes:
                    assert isinstance(node, ast.Call)
                    found.append((node, index.scope_at(index.statement_of(node))))
        found.sort(key=lambda p: (p[0].lineno, p[0].col_offset))
        return found

    def _training_methods(self, call: ast.Call, scope: Scope) -> set[str] | None:
        """How the optimizer built by ``call`` trains; empty if unknown, None if loss-scaled."""
        index = self.ctx.index
        parent = index.parent(call)
        if isinstance(parent, ast.Attribute) and parent.attr in _TRAIN_METHODS:
            outer = index.parent(parent)
            if isinstance(outer, ast.Call) and outer.func is parent:
                return {parent.attr}  # tf.train.AdamOptimizer(lr).minimize(loss)
        if isinstance(parent, ast.keyword):
            parent = index.parent(parent)
        if isinstance(parent, ast.Call) and self._scaling(parent):
            return None
        stmt = index.statement_of(call)
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
            return set()
        target = stmt.targets[0]
        inner = stmt.value is not call and isinstance(parent, ast.Call) and parent is stmt.value
        if not isinstance(target, ast.Name) or not (stmt.value is call or inner):
            return set()
        return self._name_methods(target.id, scope)

    def _name_methods(self, name: str, scope: Scope) -> set[str] | None:
        """Training methods called on ``name``, or on a name bound to a wrapper of it."""
        found = self.ctx.index.resolver.bindings_of(name, scope)
        if found is None:
            return set()
        home, bindings = found
        if any(isinstance(b.value, ast.Call) and self._scaling(b.value) for b in bindings):
            return None
        methods = set(self.trained.get((id(home), name), ()))
        for other, other_bindings in home.bindings.items():
            for b in other_bindings:
                value = b.value
                if isinstance(value, ast.Call) and _passes(value, name):
                    if self._scaling(value):
                        return None  # ``scaled = NPULossScaleOptimizer(opt, ...)``
                    methods |= self.trained.get((id(home), other), set())
        return methods

    def _scaling(self, call: ast.Call) -> bool:
        if isinstance(call.func, ast.Name) and call.func.id in _SCALING_BARE:
            return True
        return self.ctx.index.callee(call) in _SCALING


# -- helpers --------------------------------------------------------------------------------------
def _is_tf_optimizer(name: str) -> bool:
    """``tf.train.AdamOptimizer`` and friends (not the base class or wrappers)."""
    parts = name.split(".")
    if len(parts) == 3 and parts[:2] == ["tf", "train"] and parts[2].endswith("Optimizer"):
        return parts[2] not in _NOT_TRAINING_OPTIMIZERS
    return name in _CONTRIB_OPTIMIZERS


def _passes(call: ast.Call, name: str) -> bool:
    """``call`` gets the bare name ``name`` as an argument."""
    values = [*call.args, *(k.value for k in call.keywords)]
    return any(isinstance(v, ast.Name) and v.id == name for v in values)


def _has_unpacking(call: ast.Call) -> bool:
    return any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    )


def _calls_inside(node: ast.expr) -> bool:
    return any(isinstance(n, ast.Call) for n in ast.walk(node))


def _horovod_migrated(ctx: FileContext) -> bool:
    """The horovod rule migrates this file's Horovod code (its collectives become HCCL's)."""
    distributed = ctx.options.distributed
    return ctx.index.uses("hvd") and distributed in (Distributed.AUTO, Distributed.HOROVOD)


def _distributed_note(rule: str, ctx: FileContext, call: ast.Call) -> None:
    if ctx.options.distributed is Distributed.TF_STRATEGY and not _horovod_migrated(ctx):
        ctx.finding(rule, call, Severity.INFO,
                    "NPULossScaleOptimizer checks overflow on this device only",
                    "when training on several devices, pass is_distributed=True so that every "
                    "device skips the same steps")  # fmt: skip


def _name_argument(ctx: FileContext, call: ast.Call, value: ast.expr, name: str) -> Edit:
    """Pass ``value`` as keyword ``name``: name a positional argument, or rename its keyword."""
    for kw in call.keywords:
        if kw.value is value:
            start, _ = ctx.span(kw)
            value_start, _ = ctx.span(value)
            return Edit(start, value_start, f"{name}=")
    return ctx.insert_before(value, f"{name}=")


def _dynamic_manager(init: str, period: str, multiplier: tuple[ast.expr, str] | None) -> str:
    """The manager that updates the scale exactly as TF's DynamicLossScale does."""
    incr, decr = "2.0", "0.5"
    if multiplier is not None:
        node, incr = multiplier
        value = node.value if isinstance(node, ast.Constant) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value:
            decr = repr(1 / value)
        else:
            decr = f"1 / {as_operand(node, incr)}"
    return (
        f"ExponentialUpdateLossScaleManager(init_loss_scale={init}, incr_every_n_steps={period}, "
        f"decr_every_n_nan_or_inf=1, incr_ratio={incr}, decr_ratio={decr})"
    )


def _manager_for(ctx: FileContext, loss: ast.expr, scope: Scope) -> str | None:
    """The manager replacing a ``loss_scale`` value: text, "" to keep it, None if unknown."""
    if isinstance(loss, ast.Constant):
        if loss.value == "dynamic":
            return TF_DYNAMIC_MANAGER
        if isinstance(loss.value, (int, float)) and not isinstance(loss.value, bool):
            return f"FixedLossScaleManager(loss_scale={ctx.segment(loss)})"
        return None
    if isinstance(loss, ast.Call):
        bare = loss.func.id if isinstance(loss.func, ast.Name) else None
        known = bare in _MANAGER_NAMES or ctx.index.callee(loss) in (*_FIXED, *_DYNAMIC)
        return "" if known else None
    if not isinstance(loss, ast.Name):
        return None
    found = ctx.index.resolver.bindings_of(loss.id, scope)
    if found is None or not all(isinstance(b.value, ast.expr) for b in found[1]):
        return None
    kinds = {_manager_for(ctx, b.value, found[0]) for b in found[1]}  # type: ignore[arg-type]
    if len(kinds) != 1 or None in kinds:
        return None
    kind = kinds.pop()
    if kind and kind.startswith("FixedLossScaleManager("):
        return f"FixedLossScaleManager(loss_scale={loss.id})"
    return kind


def _is_keras_optimizer(ctx: FileContext, opt: ast.expr, scope: Scope) -> bool:
    if isinstance(opt, ast.Name):
        found = ctx.index.resolver.bindings_of(opt.id, scope)
        values = [b.value for b in found[1]] if found is not None else []
        return any(isinstance(v, ast.expr) and _is_keras_optimizer(ctx, v, scope) for v in values)
    name = ctx.index.callee(opt) if isinstance(opt, ast.Call) else None
    return name is not None and name.startswith(("tf.keras.optimizers.", "keras.optimizers."))

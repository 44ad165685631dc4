"""``tf.distribute`` strategies and GPU device setup: rewritten where meaningful, else reported."""

from __future__ import annotations

import ast
from typing import ClassVar

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.index import Ref
from tf2npu.migrate.model import Severity
from tf2npu.migrate.options import Distributed
from tf2npu.migrate.rule import Example, Rule, register

# Strategies that replicate one model over local or worker devices: one NPU per process does that.
_REPLICATING = frozenset(
    {"tf.distribute.MirroredStrategy", "tf.contrib.distribute.MirroredStrategy",
     "tf.distribute.experimental.MultiWorkerMirroredStrategy",
     "tf.contrib.distribute.CollectiveAllReduceStrategy",
     "tf.distribute.OneDeviceStrategy", "tf.contrib.distribute.OneDeviceStrategy"}
)  # fmt: skip
_UNSUPPORTED = frozenset(
    {"tf.distribute.experimental.TPUStrategy", "tf.contrib.distribute.TPUStrategy",
     "tf.distribute.experimental.ParameterServerStrategy",
     "tf.contrib.distribute.ParameterServerStrategy"}
)  # fmt: skip
# Strategy APIs that have no NPU counterpart to rewrite to.
_OTHER = frozenset({"tf.distribute.Strategy", "tf.distribute.experimental.CentralStorageStrategy"})
NPU_STRATEGY = "npu_strategy.NPUStrategy()"
_STRATEGY_FIX = (
    "migrate with --distributed tf_strategy (the strategy becomes npu_strategy.NPUStrategy(), one "
    "NPU per process), or write the training Horovod-style (hvd.DistributedOptimizer), which "
    "tf2npu migrates to the NPU collectives"
)
_DATA_PARALLEL = (
    "train data-parallel instead: one process per NPU, with npu_strategy.NPUStrategy() "
    "(--distributed tf_strategy) or Horovod-style code"
)

_MEMORY = (
    "GPU memory setting: it has no effect on Ascend, where the adapter manages device memory",
    "remove it; to limit NPU memory set graph_memory_max_size / variable_memory_max_size in the "
    "NPU config",
)
_NO_GPU = (
    "finds no GPU on Ascend, so code that depends on it takes its no-GPU path",
    "check that path suits the NPU (e.g. data_format, batch size per device); the NPU count of the "
    "job is get_rank_size() after migration (RANK_SIZE)",
)
# GPU device-management APIs -> (message, fix); kept as they are, reported.
_GPU_APIS: dict[str, tuple[str, str]] = {
    "tf.config.experimental.set_memory_growth": _MEMORY,
    "tf.config.experimental.get_memory_growth": _MEMORY,
    "tf.config.experimental.set_virtual_device_configuration": _MEMORY,
    "tf.config.experimental.VirtualDeviceConfiguration": _MEMORY,
    "tf.GPUOptions": _MEMORY,
    "tf.config.set_soft_device_placement": (
        "soft device placement: the NPU session config always enables it",
        "remove it",
    ),
    "tf.config.experimental.set_visible_devices": (
        "GPU visibility: it has no effect on Ascend, where each process uses one NPU",
        "remove it; the NPU is chosen by the ASCEND_DEVICE_ID environment variable (or the rank "
        "table in a distributed job)",
    ),
    "tf.test.is_gpu_available": _NO_GPU,
    "tf.test.is_built_with_cuda": _NO_GPU,
}
# Device listings: reported only when they ask for GPUs.
_DEVICE_LISTS = (
    "tf.config.experimental.list_physical_devices",
    "tf.config.experimental.list_logical_devices",
    "tf.config.list_physical_devices",
    "tf.config.list_logical_devices",
)


@register
class Distribute(Rule):
    """``tf.distribute`` strategies and GPU device setup: rewritten where meaningful, else reported.

    Ascend runs data-parallel training as one process per NPU. With ``--distributed
    tf_strategy``, ``MirroredStrategy``, ``MultiWorkerMirroredStrategy`` (and contrib's
    ``CollectiveAllReduceStrategy``) and ``OneDeviceStrategy`` become
    ``npu_strategy.NPUStrategy()``, a one-device strategy that shards datasets by rank; their
    arguments (devices, cross-device ops) mean nothing there and are removed, and reported.
    NPUStrategy does not average gradients itself: the training optimizer needs
    ``npu_distributed_optimizer_wrapper`` (a finding says so; ``keras_session`` wraps Keras
    ``compile`` optimizers).
    ``ParameterServerStrategy`` and ``TPUStrategy`` are errors: there is no NPU equivalent. With
    the other ``--distributed`` modes every strategy is reported with the two ways forward.
    ``RunConfig(train_distribute=...)`` keeps its argument: ``NPURunConfig`` accepts it.

    GPU device management (``set_memory_growth``, virtual device configurations,
    ``set_soft_device_placement``, ``set_visible_devices``, ``tf.GPUOptions``,
    ``is_gpu_available``, GPU device listings) is kept as it is, since rewriting it to ``None``
    (as the vendor's tool does) breaks the code around it, and each use is reported: it has no
    effect on Ascend, or finds no GPU.
    """

    name: ClassVar[str] = "distribute"
    examples: ClassVar[tuple[Example, ...]] = (
        Example(
            "import tensorflow as tf\nstrategy = tf.distribute.MirroredStrategy()\n"
            "config = tf.estimator.RunConfig(train_distribute=strategy)\n",
            "from npu_bridge.npu_init import *\nimport tensorflow as tf\n"
            "strategy = tf.distribute.MirroredStrategy()\n"
            "config = NPURunConfig(train_distribute=strategy)\n",
            "by default the strategy is reported; --distributed tf_strategy makes it "
            "npu_strategy.NPUStrategy()",
        ),
    )

    def apply(self, ctx: FileContext) -> None:
        rewrite = ctx.options.distributed is Distributed.TF_STRATEGY
        for ref in ctx.index.refs:
            if ref.name in _REPLICATING or ref.name in _UNSUPPORTED or ref.name in _OTHER:
                if rewrite:
                    self._tf_strategy(ctx, ref)
                else:
                    self._report(ctx, ref)
        for ref in ctx.index.calls_to(*_GPU_APIS):
            message, fix = _GPU_APIS[ref.name]
            ctx.finding(self.name, ref.call, Severity.INFO, f"{_short(ref.name)}: {message}", fix)
        for ref in ctx.index.calls_to(*_DEVICE_LISTS):
            assert ref.call is not None
            kind = ctx.argument(ref.call, 0, "device_type")
            if isinstance(kind, ast.Constant) and kind.value == "GPU":
                message, fix = _NO_GPU
                ctx.finding(self.name, ref.call, Severity.INFO,
                            f"{_short(ref.name)}('GPU') {message}", fix)  # fmt: skip

    def _report(self, ctx: FileContext, ref: Ref) -> None:
        mode = ctx.options.distributed.value
        if ref.name in _UNSUPPORTED:
            ctx.finding(
                self.name,
                ref.node,
                Severity.WARNING,
                f"{ref.name} is not supported on Ascend",
                _DATA_PARALLEL,
            )
            return  # fmt: skip
        ctx.finding(self.name, ref.node, Severity.WARNING,
                    f"{ref.name} is not migrated (--distributed {mode}): it would not place "
                    "work on the NPU", _STRATEGY_FIX)  # fmt: skip

    def _tf_strategy(self, ctx: FileContext, ref: Ref) -> None:
        if ref.name in _UNSUPPORTED:
            ctx.finding(
                self.name,
                ref.node,
                Severity.ERROR,
                f"{ref.name} is not supported on Ascend",
                _DATA_PARALLEL,
            )
            return  # fmt: skip
        call = ref.call if ref.kind == "call" else None
        if ref.name in _OTHER or call is None:
            what = "a strategy subclass" if ref.kind == "base" else "this use"
            ctx.finding(
                self.name,
                ref.node,
                Severity.WARNING,
                f"{ref.name}: {what} is not rewritten to NPUStrategy",
                "use npu_strategy.NPUStrategy() (one NPU per process)",
            )
            return  # fmt: skip
        if not ctx.patch(self.name, call, [ctx.replace(call, NPU_STRATEGY)]):
            return
        ctx.need_import()
        removed = ", ".join(ctx.segment(a) for a in ctx.arguments(call))
        if removed:
            ctx.finding(self.name, call, Severity.INFO,
                        f"{_short(ref.name)} arguments removed ({removed}): NPUStrategy uses the "
                        "one NPU of its process",
                        "launch one training process per NPU (RANK_SIZE / RANK_ID and a rank "
                        "table) instead of listing devices")  # fmt: skip
        ctx.finding(self.name, call, Severity.INFO,
                    "NPUStrategy shards datasets by rank but does not average gradients",
                    "wrap the training optimizer: npu_distributed_optimizer_wrapper(opt) (tf2npu "
                    "does so for Keras compile() with --distributed tf_strategy)")  # fmt: skip
        if "MultiWorker" in ref.name or "Collective" in ref.name:
            ctx.finding(
                self.name,
                call,
                Severity.INFO,
                "the cluster comes from the rank table on Ascend, not TF_CONFIG",
                "start every worker with RANK_TABLE_FILE, RANK_SIZE and RANK_ID set",
            )


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]

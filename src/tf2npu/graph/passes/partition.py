"""The ``partition`` pass: group device nodes into GeOps and report what that costs.

The decisions come from :mod:`tf2npu.graph.partition`; this module checks the option that
mixed compute forbids, runs the partition on the top-level graph (function bodies are not
partitioned again, as the vendor's ``MarkNoNeedOptimizePass`` ensures: a call, ``While`` or
``If`` node is one node) and turns the plan into diagnostics a user reads:

* ``fallback_to_host`` (warning, full offload): a device-capable group that cannot join the one
  GeOp without a cycle runs on the host.
* ``runs_on_host`` (info, full offload): an op the device does not support (placement code 1)
  runs on the host.
* ``host_feeds`` (info, full offload): one note for the graph's fed Placeholders, which are
  inputs copied to the device every step, not ops to replace. Consts, _Args, dataset ops and
  unread nodes (the other code-4 reasons) get no note: nothing of theirs runs per step on the
  host in a way the user should change here.
* ``fused_batch_norm_v3_mixed`` (warning, mixed compute): FusedBatchNormV3 on the device.
* ``ref_variable_to_host`` (error, mixed compute): ref variables in a GeOp that host nodes take
  through a ref input; one error listing them. A host node *reading* a variable's value (a
  ``Saver``'s ``SaveV2``) is an ordinary memcpy edge.
"""

from __future__ import annotations

from tf2npu.config.options import NpuOptions
from tf2npu.errors import ConfigError
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import PLACEMENT, SUPERSEDED, Diagnostics
from tf2npu.graph.ir import Graph
from tf2npu.graph.partition import PartitionPlan, partition_graph
from tf2npu.graph.passes.infra import PassContext, PassInfo, PassResult, register_pass
from tf2npu.graph.passes.pipeline import STAGES

__all__ = ["Partition", "check_options"]

_FUSED_BN_V3 = frozenset({"FusedBatchNormV3", "FusedBatchNormGradV3"})
_NOT_IN_LIBRARY_CODE = 1
_FEED = "feed"
_SHOWN = 3  # node names quoted in a message about many nodes
_LISTED = 20  # lines listed in a message that lists its cases


@register_pass
class Partition:
    """Cycle-safe GeOp clustering; full offload keeps one GeOp, mixed compute several."""

    info = PassInfo("partition", requires=("placement",), description=STAGES["partition"])

    def run(self, graph: Graph, ctx: PassContext[EngineConfig]) -> PassResult[Graph]:
        cfg = ctx.config
        check_options(cfg.options)
        plan = partition_graph(graph, mixed=cfg.options.mix_compile_mode)
        report(graph, plan, cfg.diagnostics)
        return PassResult(graph, changed=False, stats=plan.stats())


def check_options(options: NpuOptions) -> None:
    """Mixed compute runs one step per ``sess.run``: ``iterations_per_loop`` must be 1.

    ``NpuOptions`` validation rejects this already; options built another way get here.

    Raises:
        ConfigError: naming the option, its value and the fix.
    """
    if options.mix_compile_mode and options.iterations_per_loop != 1:
        raise ConfigError(
            f"option 'iterations_per_loop' = {options.iterations_per_loop} cannot be used with "
            "mix_compile_mode=True (mixed compute cannot offload the training loop); set "
            "iterations_per_loop=1 or mix_compile_mode=False"
        )


def report(graph: Graph, plan: PartitionPlan, diagnostics: Diagnostics) -> None:
    """Turn ``plan`` into the diagnostics listed in the module docstring."""
    if plan.mixed:
        _fused_batch_norm(graph, plan, diagnostics)
        _ref_to_host(plan.ref_to_host, diagnostics)
        return
    kept = plan.clusters[0].name if plan.clusters else "none"
    for names in plan.fallback:
        diagnostics.warning(
            "fallback_to_host",
            f"{len(names)} device-capable node(s) ({_first(names)}) fall back to host "
            f"execution: full offload keeps one GeOp ({kept}) and they cannot join it "
            "without a cycle through host ops",
            node=names[0],
            fix="set mix_compile_mode=True to run them in a GeOp of their own, or replace "
            "the host-only ops between them and the GeOp",
        )
    feeds: list[str] = []
    for node in graph:
        placement = node.meta.get(PLACEMENT)
        if SUPERSEDED in node.meta or placement is None or placement.device:
            continue
        if placement.reason == _FEED:
            feeds.append(node.name)
        elif placement.code == _NOT_IN_LIBRARY_CODE:
            diagnostics.info(
                "runs_on_host",
                f"{node.op} runs on the host: {placement.message or placement.reason}; its "
                "inputs and outputs are copied between host and device every step",
                node=node.name,
                fix="replace it with an op the device supports if it sits on the step's path",
            )
    if feeds:
        diagnostics.info(
            "host_feeds",
            f"{len(feeds)} Placeholder(s) ({_first(feeds)}) are fed from the host: each "
            "sess.run copies their values to the device; that is how feed_dict works and "
            "needs no change",
            node=feeds[0],
            fix="for the training input, a tf.data pipeline read through an iterator lets the "
            "adapter keep input on the device (enable_data_pre_proc) and run iterations_per_loop "
            "steps per sess.run",
        )


def _ref_to_host(pairs: list[tuple[str, str]], diagnostics: Diagnostics) -> None:
    """One error for every ref variable a host node takes through a ref input: a sentence and
    a list (one line per pair, at most :data:`_LISTED`), not one sentence per pair."""
    if not pairs:
        return
    lines = [f"\n  - {variable!r} -> {reader!r}" for variable, reader in pairs[:_LISTED]]
    if len(pairs) > _LISTED:
        lines.append(f"\n  - ... and {len(pairs) - _LISTED} more")
    diagnostics.error(
        "ref_variable_to_host",
        f"{len(pairs)} ref variable(s) in a GeOp are taken by host nodes through a ref input "
        "(the host would update a device variable in place), which the vendor rejects with "
        "'Ref Tensors (e.g., Variables) output ... is not in white list' (variable -> host "
        "node):" + "".join(lines),
        node=pairs[0][0],
        fix="use resource variables (tf.compat.v1.enable_resource_variables()), or let the "
        "ops that update these variables run on the device",
    )


def _fused_batch_norm(graph: Graph, plan: PartitionPlan, diagnostics: Diagnostics) -> None:
    names = [n for c in plan.clusters for n in c.nodes if graph[n].op in _FUSED_BN_V3]
    if not names:
        return
    diagnostics.warning(
        "fused_batch_norm_v3_mixed",
        f"{len(names)} FusedBatchNormV3/FusedBatchNormGradV3 node(s) ({_first(names)}) run "
        "on the device in mixed compute mode, where the op's fifth output (a CUDA-specific "
        "reserve space) is not supported",
        node=names[0],
        fix="build the model under 'with tf.compat.forward_compatibility_horizon(2019, 5, 1):' "
        "so tf.layers.batch_normalization emits FusedBatchNorm instead of FusedBatchNormV3",
    )


def _first(names: tuple[str, ...] | list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_SHOWN])
    return shown + (", ..." if len(names) > _SHOWN else "")

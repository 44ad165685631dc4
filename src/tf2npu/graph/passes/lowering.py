"""The ``lowering`` pass: make the decided graph executable by stock TensorFlow on the CPU.

Everything before it only decides (placement, precision, fusion, partition); lowering writes
the decisions down in a form TensorFlow runs and reports read from the exported ``GraphDef``:

* every NPU-op node becomes a call of a CPU function (:func:`tf2npu.graph.npu_ops.materialize`);
* every live node TensorFlow's CPU has no kernel for in its decided dtype (a float16
  ``_FusedMatMul``, a float16 ``Mod``) gets a CPU-runnable form under its own name
  (:func:`tf2npu.graph.passes.cpu_runnable.make_cpu_runnable`): fused ops are expanded back into
  their op chain, other ops computed in float32 between casts;
* every float16 op whose float32 kernel plus a rounding gives the float16 kernel's result
  bit for bit (``Relu``, ``MaxPool``, ``Add``, ``Mul``, ...) runs that way, faster, and a
  ``MaxPoolGrad`` with overlapping windows finds its maxima in float32
  (:func:`tf2npu.graph.passes.half_via_fp32.compute_half_in_fp32`); when the runtime loaded
  the native rounding op (``EngineConfig.half_round``), each float32 value rounded to float16
  precision is that one op instead of a ``Cast`` pair;
* every live node the partition pass put in a GeOp gets the string attr :data:`GEOP_ATTR`
  naming the GeOp, so the exported graph still says which nodes the device would run;
* a top-level live node without a device, or pinned to an NPU (``/device:NPU:0``, which no
  TensorFlow here can place), gets :data:`CPU_DEVICE` (execution here is on the CPU); any other
  device string, host or not, is kept. In a multi-rank job the CPU is this rank's task's
  (``/job:worker/replica:0/task:<RANK_ID>/device:CPU:0``), and ``/job:localhost`` strings move
  to that task: the session runs on the rank's server, which has no ``localhost`` job.

Superseded nodes are only materialised (an unknown op type would make the whole GraphDef fail
to import), never annotated: no executor runs them.
"""

from __future__ import annotations

import re

from tf2npu.config.cluster import cpu_device
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import CLUSTER, SUPERSEDED
from tf2npu.graph.ir import Graph
from tf2npu.graph.npu_ops import materialize
from tf2npu.graph.passes.cpu_runnable import make_cpu_runnable
from tf2npu.graph.passes.half_via_fp32 import compute_half_in_fp32
from tf2npu.graph.passes.infra import PassContext, PassInfo, PassResult, register_pass

__all__ = ["CPU_DEVICE", "GEOP_ATTR", "Lowering"]

_NPU_DEVICE = re.compile(r"(?i)(^|/)(device:)?npu(:|$)")

#: Node attr naming the GeOp a node belongs to (a private attr: TF ignores ``_``-prefixed ones).
GEOP_ATTR = "_tf2npu_geop"
#: The device nodes without one get; the engine executes the decided graph on the CPU.
CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
_LOCAL_JOB = "/job:localhost"


@register_pass
class Lowering:
    """Materialise NPU ops, give CPU forms to nodes without a CPU kernel, tag GeOp members,
    give device-less nodes the CPU."""

    info = PassInfo(
        "lowering",
        requires=("partition",),
        description="Make the partitioned graph runnable on the CPU and record GeOp membership.",
    )

    def run(self, graph: Graph, ctx: PassContext[EngineConfig]) -> PassResult[Graph]:
        materialized = materialize(graph)
        # Before tagging: the nodes of a CPU form carry the replaced node's meta, cluster too.
        runnable = make_cpu_runnable(graph, ctx.config.diagnostics)
        # After the CPU forms, whose float32 reads of float16 tensors it can short-circuit.
        runnable.update(compute_half_in_fp32(graph, half_round=ctx.config.half_round))
        annotated = devices = 0
        cpu = _cpu_device(ctx.config)
        for body in graph.walk():
            top = body is graph
            for node in body:
                if SUPERSEDED in node.meta:
                    continue
                cluster = node.meta.get(CLUSTER)
                if cluster:
                    node.attrs[GEOP_ATTR] = _string_attr(cluster)
                    annotated += 1
                if top and (not node.device or _NPU_DEVICE.search(node.device)):
                    node.device = cpu
                    devices += 1
                elif top and cpu != CPU_DEVICE and node.device.startswith(_LOCAL_JOB):
                    node.device = _on_task(node.device, cpu)
                    devices += 1
        stats = {
            "npu_ops_materialized": materialized,
            **runnable,
            "nodes_annotated": annotated,
            "devices_set": devices,
        }
        return PassResult(graph, changed=any(stats.values()), stats=stats)


def _cpu_device(config: EngineConfig) -> str:
    """Where host nodes run: this process's CPU, or in a multi-rank job this rank's task's
    (a session on the rank's server cannot place on ``/job:localhost``)."""
    env = config.options.env
    return CPU_DEVICE if env.rank_size == 1 else cpu_device(env.rank_id)


def _on_task(device: str, cpu: str) -> str:
    """``/job:localhost/replica:0/task:0/<rest>`` moved to the task of ``cpu``."""
    task = cpu[: cpu.index("/device:")]
    rest = device[len(_LOCAL_JOB) :].split("/", 3)
    return task + ("/" + rest[3] if len(rest) > 3 else "")


def _string_attr(text: str) -> object:
    from tensorflow.core.framework import attr_value_pb2

    return attr_value_pb2.AttrValue(s=text.encode())

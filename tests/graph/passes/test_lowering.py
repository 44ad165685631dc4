"""The lowering pass: NPU ops materialised, GeOp members tagged, device-less nodes on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

from tf2npu.config.options import NpuOptions
from tf2npu.dtypes import DT_HALF
from tf2npu.errors import ConfigError
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.decisions import CLUSTER, supersede
from tf2npu.graph.ir import Graph, TensorRef
from tf2npu.graph.lint import Signature
from tf2npu.graph.npu_ops import NPU_OP_META, add_npu_node
from tf2npu.graph.npu_ops.opdef import DT_FLOAT
from tf2npu.graph.passes import PASSES, PassContext, PassInfo, PassManager, PassResult
from tf2npu.graph.passes.half_via_fp32 import HALF_ROUND_OP
from tf2npu.graph.passes.lowering import CPU_DEVICE, GEOP_ATTR, Lowering

pytestmark = pytest.mark.tf
tf = pytest.importorskip("tensorflow")

GELU = "old/_tf2npu_gelu"
#: The CPU-form stats of a graph whose every node has a CPU kernel (test_cpu_kernels.py).
NO_CPU_FORMS = {
    "fused_ops_expanded": 0,
    "ops_computed_in_fp32": 0,
    "matmuls_accumulated_in_fp32": 0,
    "ops_without_cpu_kernel": 0,
    "half_ops_via_fp32": 0,
    "half_casts_elided": 0,
    "half_roundings_in_one_op": 0,
}


class HandSetPartition:
    """Stands in for the partition pass: writes the CLUSTER meta given to it."""

    info = PassInfo("partition")

    def __init__(self, clusters: dict[str, str]) -> None:
        self.clusters = clusters

    def run(self, graph: Graph, ctx: PassContext) -> PassResult[Graph]:
        for name, geop in self.clusters.items():
            graph[name].meta[CLUSTER] = geop
        return PassResult(graph, changed=True)


def _ctx(
    *, verify: bool = False, disabled: frozenset[str] = frozenset()
) -> PassContext[EngineConfig]:
    config = EngineConfig.build(NpuOptions.from_values({}))
    return PassContext(config=config, disabled=disabled, verify=verify)


def _graph() -> Graph:
    """x → gelu (NPU op) → relu (host, with a device) → out; ``old`` superseded by ``gelu``."""
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    t = AttrValue(type=DT_FLOAT)
    graph = Graph()
    x = graph.add_node("x", "Placeholder", attrs={"dtype": t})
    old = graph.add_node("old", "Relu", [x.output()], attrs={"T": t})
    graph.add_node("relu", "Relu", [old.output()], attrs={"T": t}, device="/device:CPU:0")
    gelu = add_npu_node(
        graph, graph.new_name("old", "gelu"), "Gelu", [x.output()], dtype=DT_FLOAT, origin=["old"]
    )
    assert gelu.name == GELU
    supersede(graph, old, {0: gelu.output()}, by="fusion", rule="test")
    graph.add_node("out", "Identity", [graph["relu"].output()], attrs={"T": t})
    return graph


def _run(graph: Graph, clusters: dict[str, str]) -> PassResult[Graph]:
    baseline = Signature.of(graph)
    result = PassManager([HandSetPartition(clusters), Lowering()]).run(
        graph, _ctx(verify=True), baseline
    )
    return result.results[-1][1]


def test_lowering_materialises_tags_and_sets_devices() -> None:
    graph = _graph()
    gelu = GELU
    clusters = {gelu: "GeOp1_0", "old": "GeOp1_0", "out": "GeOp1_0"}
    result = _run(graph, clusters)
    assert result.changed
    assert dict(result.stats) == {
        "npu_ops_materialized": 1,
        "nodes_annotated": 2,
        "devices_set": 3,
        **NO_CPU_FORMS,
    }
    assert graph[gelu].meta[NPU_OP_META] == "Gelu"
    assert graph[gelu].attrs[GEOP_ATTR].s == b"GeOp1_0"
    assert graph["out"].attrs[GEOP_ATTR].s == b"GeOp1_0"
    assert GEOP_ATTR not in graph["old"].attrs  # superseded: dead code, not tagged
    assert GEOP_ATTR not in graph["relu"].attrs and GEOP_ATTR not in graph["x"].attrs
    assert graph["relu"].device == "/device:CPU:0"  # a host node keeps its device
    assert graph["x"].device == graph["out"].device == graph[gelu].device == CPU_DEVICE
    assert graph["old"].device == ""


def test_lowered_graph_imports_and_runs_in_a_session() -> None:
    graph = _graph()
    _run(graph, {"out": "GeOp1_0"})
    tf_graph = tf.Graph()
    with tf_graph.as_default():
        tf.graph_util.import_graph_def(graph.to_graph_def(), name="")
    assert tf_graph.get_operation_by_name("out").get_attr(GEOP_ATTR) == b"GeOp1_0"
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    with tf.compat.v1.Session(graph=tf_graph) as session:
        out = session.run("out:0", {"x:0": x})
    gelu = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(out, np.maximum(gelu, 0), rtol=1e-6)


def test_function_body_members_are_tagged_but_keep_no_device() -> None:
    from tensorflow.core.framework.function_pb2 import FunctionDef

    from tf2npu.graph._proto import function_from_proto

    graph = Graph()
    fd = FunctionDef()
    fd.signature.name = "f"
    graph.functions["f"] = body = function_from_proto(fd, graph)
    inner = body.add_node("c", "NoOp")
    inner.meta[CLUSTER] = "GeOp2_0"
    graph.add_node("call", "f")
    result = Lowering().run(graph, _ctx())
    assert inner.attrs[GEOP_ATTR].s == b"GeOp2_0" and inner.device == ""
    assert graph["call"].device == CPU_DEVICE
    assert dict(result.stats) == {
        "npu_ops_materialized": 0,
        "nodes_annotated": 1,
        "devices_set": 1,
        **NO_CPU_FORMS,
    }


def test_a_second_run_changes_nothing_but_re_tags() -> None:
    graph = _graph()
    _run(graph, {"out": "GeOp1_0"})
    before = graph.to_graph_def().SerializeToString(deterministic=True)
    result = Lowering().run(graph, _ctx())
    assert dict(result.stats) == {
        "npu_ops_materialized": 0,
        "nodes_annotated": 1,
        "devices_set": 0,
        **NO_CPU_FORMS,
    }
    assert graph.to_graph_def().SerializeToString(deterministic=True) == before


def test_the_runtimes_half_round_flag_reaches_the_rewrite() -> None:
    """``EngineConfig.half_round`` (the runtime loaded the op): a Cast pair becomes the op;
    without it (the default, e.g. ``tf2npu graph``) the pair stays."""
    from tensorflow.core.framework.attr_value_pb2 import AttrValue

    def pair() -> Graph:
        graph = Graph()
        graph.add_node("x", "Placeholder", attrs={"dtype": AttrValue(type=DT_FLOAT)})
        for name, source, src, dst in (
            ("x16", "x", DT_FLOAT, DT_HALF),
            ("back", "x16", DT_HALF, DT_FLOAT),
        ):
            graph.add_node(name, "Cast", [TensorRef(source)], attrs={
                "SrcT": AttrValue(type=src), "DstT": AttrValue(type=dst)})  # fmt: skip
        return graph

    for flag, op in ((True, HALF_ROUND_OP), (False, "Cast")):
        graph, ctx = pair(), _ctx()
        ctx.config.half_round = flag
        result = PassManager([HandSetPartition({}), Lowering()]).run(graph, ctx)
        assert graph["back"].op == op
        assert result.results[-1][1].stats["half_roundings_in_one_op"] == int(flag)


def test_lowering_requires_partition_and_is_registered() -> None:
    assert PASSES["lowering"] is Lowering
    assert Lowering.info.requires == ("partition",)
    manager = PassManager([HandSetPartition({}), Lowering()])
    with pytest.raises(ConfigError, match="requires pass 'partition', which is disabled"):
        manager.run(_graph(), _ctx(disabled=frozenset({"partition"})))


def test_nodes_pinned_to_the_npu_run_on_the_cpu() -> None:
    graph = _graph()
    for spelling in ("/device:NPU:0", "/job:localhost/replica:0/task:0/device:NPU:0", "/npu:0"):
        graph["out"].device = spelling
        _run(graph, {})
        assert graph["out"].device == CPU_DEVICE, spelling
    graph["out"].device = "/device:CPU:1"
    _run(graph, {})
    assert graph["out"].device == "/device:CPU:1"


def test_a_rank_of_a_multi_rank_job_runs_on_its_task() -> None:
    from tf2npu.config.options import EnvSettings

    options = NpuOptions.from_values({}, EnvSettings(rank_size=2, rank_id=1))
    ctx = PassContext(config=EngineConfig.build(options), disabled=frozenset(), verify=True)
    graph = _graph()
    graph["out"].device = "/job:localhost/replica:0/task:0/device:CPU:0"
    graph["relu"].device = "/device:CPU:0"
    PassManager([HandSetPartition({}), Lowering()]).run(graph, ctx, Signature.of(graph))
    task = "/job:worker/replica:0/task:1/device:CPU:0"
    # A session on the rank's server has no /job:localhost: those strings move to its task.
    assert (graph["x"].device, graph["out"].device) == (task, task)
    assert graph["relu"].device == "/device:CPU:0"

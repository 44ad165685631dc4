"""Times the graph engine (every pass) on synthetic TF1-style training graphs of 1k, 10k, 50k nodes.

Usage: ``.venv/bin/python benchmarks/graph_passes.py [NODES ...]`` (default 1000 10000 50000;
needs TensorFlow for the attr protos). Each graph is built with the IR directly: stacked dense
layers (VariableV2 + Identity reads, MatMul/BiasAdd/Relu forward, ReluGrad/BiasAddGrad/MatMul
gradients, ApplyAdam on odd layers and ApplyGradientDescent on even ones), a squared-error loss,
and an input path with a py_func, a lookup table (HashTableV2, InitializeTableV2,
LookupTableFindV2) and string ops (StringJoin, AsString). Two modes run on fresh copies:
full offload with the default precision, and mixed compute with ``allow_mix_precision``. Prints
the best of three runs per pass and in total, and the seconds per 1k nodes (flat when linear).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from tf2npu.config.options import NpuOptions
from tf2npu.graph.decisions import live_nodes
from tf2npu.graph.engine import run_engine
from tf2npu.graph.ir import Graph, TensorRef

WIDTH = 16
MODES = {
    "default": {},
    "mixed": {"mix_compile_mode": True, "precision_mode": "allow_mix_precision"},
}


class Builder:
    """Adds nodes with the attrs TF would give them (AttrValue protos)."""

    def __init__(self) -> None:
        from tensorflow.core.framework import attr_value_pb2, tensor_shape_pb2, types_pb2

        self.g = Graph()
        self.attr = attr_value_pb2.AttrValue
        self.shape_proto = tensor_shape_pb2.TensorShapeProto
        self.types = types_pb2

    def shape(self, *dims: int) -> Any:
        return self.attr(shape=self.shape_proto(dim=[self.shape_proto.Dim(size=d) for d in dims]))

    def add(self, name: str, op: str, inputs: list[TensorRef], **attrs: Any) -> TensorRef:
        return self.g.add_node(name, op, inputs, attrs=attrs).output()

    def f32(self) -> Any:
        return self.attr(type=self.types.DT_FLOAT)

    def const(self, name: str, value: float) -> TensorRef:
        from tensorflow.core.framework import tensor_pb2

        tensor = tensor_pb2.TensorProto(dtype=self.types.DT_FLOAT, float_val=[value])
        return self.add(name, "Const", [], dtype=self.f32(), value=self.attr(tensor=tensor))

    def variable(self, name: str, *dims: int) -> tuple[TensorRef, TensorRef]:
        var = self.add(name, "VariableV2", [], dtype=self.f32(), shape=self.shape(*dims),
                       container=self.attr(s=b""), shared_name=self.attr(s=b""))  # fmt: skip
        read = self.add(f"{name}/read", "Identity", [var], T=self.f32())
        return var, read


def input_path(b: Builder) -> TensorRef:
    """Features from a py_func, plus a lookup-table id from string keys, as float."""
    t = b.types
    s = b.attr(type=t.DT_STRING)
    names = b.add("filenames", "Placeholder", [], dtype=s, shape=b.shape())
    feats = b.add("load", "PyFunc", [names], Tin=b.attr(list=b.attr.ListValue(type=[t.DT_STRING])),
                  Tout=b.attr(list=b.attr.ListValue(type=[t.DT_FLOAT])),
                  token=b.attr(s=b"pyfunc_0"))  # fmt: skip
    keys = b.add("keys", "Placeholder", [], dtype=s, shape=b.shape(WIDTH))
    joined = b.add("keys/join", "StringJoin", [keys, keys], N=b.attr(i=2),
                   separator=b.attr(s=b"_"))  # fmt: skip
    table = b.add("table", "HashTableV2", [], key_dtype=s, value_dtype=b.attr(type=t.DT_INT64),
                  container=b.attr(s=b""), shared_name=b.attr(s=b""))  # fmt: skip
    tkeys = b.add("table/keys", "Placeholder", [], dtype=s, shape=b.shape(4))
    tvals = b.add("table/values", "Placeholder", [], dtype=b.attr(type=t.DT_INT64),
                  shape=b.shape(4))  # fmt: skip
    b.add("table/init", "InitializeTableV2", [table, tkeys, tvals], Tkey=s,
          Tval=b.attr(type=t.DT_INT64))  # fmt: skip
    default = b.add("table/default", "Placeholder", [], dtype=b.attr(type=t.DT_INT64),
                    shape=b.shape())  # fmt: skip
    ids = b.add("lookup", "LookupTableFindV2", [table, joined, default], Tin=s,
                Tout=b.attr(type=t.DT_INT64))  # fmt: skip
    fids = b.add("lookup/cast", "Cast", [ids], SrcT=b.attr(type=t.DT_INT64), DstT=b.f32(),
                 Truncate=b.attr(b=False))  # fmt: skip
    return b.add("features", "AddV2", [feats, fids], T=b.f32())


def training_graph(target: int) -> Graph:
    """About ``target`` nodes: the input path, then as many dense layers as fit."""
    b = Builder()
    f = b.f32()
    no = b.attr(b=False)
    x = input_path(b)
    layers = max(1, (target - 40) // 17)
    acts, reads = [x], []
    for i in range(layers):
        p = f"layer{i}"
        w, w_read = b.variable(f"{p}/kernel", WIDTH, WIDTH)
        bias, b_read = b.variable(f"{p}/bias", WIDTH)
        mm = b.add(f"{p}/MatMul", "MatMul", [acts[-1], w_read], T=f, transpose_a=no,
                   transpose_b=no)  # fmt: skip
        ba = b.add(f"{p}/BiasAdd", "BiasAdd", [mm, b_read], T=f, data_format=b.attr(s=b"NHWC"))
        acts.append(b.add(f"{p}/Relu", "Relu", [ba], T=f))
        reads.append((w, bias))
    labels = b.add("labels", "Placeholder", [], dtype=f, shape=b.shape(WIDTH, WIDTH))
    diff = b.add("loss/sub", "Sub", [acts[-1], labels], T=f)
    sq = b.add("loss/square", "Square", [diff], T=f)
    axes = b.add("loss/axes", "Const", [], dtype=b.attr(type=b.types.DT_INT32),
                 value=b.attr(tensor=_int_tensor([0, 1])))  # fmt: skip
    loss = b.add("loss", "Mean", [sq, axes], T=f, Tidx=b.attr(type=b.types.DT_INT32),
                 keep_dims=no)  # fmt: skip
    b.add("loss/text", "AsString", [loss], T=f)
    grad = b.add("grad/seed", "Mul", [diff, b.const("grad/two", 2.0)], T=f)
    lr, beta1 = b.const("opt/lr", 0.01), b.const("opt/beta1", 0.9)
    beta2, eps = b.const("opt/beta2", 0.999), b.const("opt/eps", 1e-8)
    for i in reversed(range(layers)):
        p = f"grad/layer{i}"
        g_relu = b.add(f"{p}/ReluGrad", "ReluGrad", [grad, acts[i + 1]], T=f)
        g_bias = b.add(f"{p}/BiasAddGrad", "BiasAddGrad", [g_relu], T=f,
                       data_format=b.attr(s=b"NHWC"))  # fmt: skip
        g_w = b.add(f"{p}/MatMul_1", "MatMul", [acts[i], g_relu], T=f,
                    transpose_a=b.attr(b=True), transpose_b=no)  # fmt: skip
        w_read = TensorRef(f"layer{i}/kernel/read")
        grad = b.add(f"{p}/MatMul", "MatMul", [g_relu, w_read], T=f, transpose_a=no,
                     transpose_b=b.attr(b=True))  # fmt: skip
        w, bias = reads[i]
        if i % 2:
            for var, g in ((w, g_w), (bias, g_bias)):
                m, _ = b.variable(f"{var.node}/Adam", WIDTH)
                v, _ = b.variable(f"{var.node}/Adam_1", WIDTH)
                b.add(f"{p}/{var.node.rsplit('/', 1)[1]}/ApplyAdam", "ApplyAdam",
                      [var, m, v, beta1, beta2, lr, beta1, beta2, eps, g], T=f,
                      use_locking=no, use_nesterov=no)  # fmt: skip
        else:
            for var, g in ((w, g_w), (bias, g_bias)):
                b.add(f"{p}/{var.node.rsplit('/', 1)[1]}/ApplyGradientDescent",
                      "ApplyGradientDescent", [var, lr, g], T=f, use_locking=no)  # fmt: skip
    return b.g


def _int_tensor(values: list[int]) -> Any:
    from tensorflow.core.framework import tensor_pb2, tensor_shape_pb2, types_pb2

    shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=2)])
    return tensor_pb2.TensorProto(dtype=types_pb2.DT_INT32, int_val=values, tensor_shape=shape)


def measure(target: int, mode: str) -> tuple[int, dict[str, float], float]:
    """Best of three (by total) on fresh graphs: node count, seconds per pass, total."""
    best: tuple[int, dict[str, float], float] | None = None
    for _ in range(3):
        graph = training_graph(target)
        nodes = len(graph)
        options = NpuOptions.from_values(MODES[mode])  # type: ignore[arg-type]
        start = time.perf_counter()
        run = run_engine(graph, options)
        total = time.perf_counter() - start
        if best is None or total < best[2]:
            best = (nodes, dict(run.pass_seconds), total)
        assert len(live_nodes(run.graph)) > 0
    assert best is not None
    return best


def main(sizes: list[int]) -> None:
    run_engine(training_graph(200), NpuOptions.from_values({}))  # warm: registries, op library
    for mode in MODES:
        print(f"mode {mode}: {MODES[mode] or 'defaults'}")
        for target in sizes:
            nodes, passes, total = measure(target, mode)
            per_pass = ", ".join(f"{name} {s:.3f}" for name, s in passes.items())
            per_k = total / nodes * 1000
            print(f"  {nodes:>6} nodes: total {total:.3f} s ({per_k * 1000:.1f} ms / 1k nodes)"
                  f"; {per_pass}")  # fmt: skip


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [1000, 10_000, 50_000])

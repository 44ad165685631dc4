"""Give nodes the CPU cannot run in their decided dtype an equivalent it can (lowering's helper).

The passes decide for the device: float16 (or bfloat16) where the Ascend kernel has it, TF's
fused ops where GE fuses. TensorFlow 2.15's CPU lacks some of those kernels — ``_FusedMatMul``
and ``_FusedConv2D`` have no float16 kernel, and a handful of plain ops (``Mod``, ``Rint``,
``AvgPool3D``, ... see ``tools/cpu_half_kernels.py``) have none either. Such a node gets a
CPU-runnable form that keeps its name, its outputs (count, order, dtypes), its device and its
decisions (``node.meta`` is copied to every node of the form, so GeOp tags and reports still
see the device's choices), and records what the device runs under that name (its op type and
inputs, :class:`~tf2npu.graph.decisions.DeviceForm`) for the graph JSON of dumps:

* a ``_FusedMatMul`` / ``_FusedConv2D`` is expanded back into its op chain in its own dtype —
  MatMul or Conv2D, then BiasAdd or an inference batch norm, then the activation — and the
  last op of the chain takes the fused node's name. Each op of the chain gets the precision
  decision of the original node of its op type (the fused node, made after precision, has
  none). The arithmetic is the device's: each op runs in float16, only the rounding of the
  intermediate results between the ops differs from a fused kernel.
* any other node is computed in float32: its low-float inputs are cast up, a float32 copy runs,
  its low-float outputs are cast back, and the final cast (or, for several outputs, an
  ``IdentityN`` gathering them) takes the node's name. Its value then differs from the
  device's float16 kernel by the rounding float16 arithmetic would have added.

A node neither form fits is left as it is and counted (``ops_without_cpu_kernel``); running it
fails with TensorFlow's own "No OpKernel" error naming it. Each node costs O(its edges).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from tf2npu.dtypes import DT_FLOAT, REF_OFFSET
from tf2npu.graph._opdef import flat_dtypes, input_layout, output_layout
from tf2npu.graph.decisions import DEVICE_FORM, PRECISION, DeviceForm, Diagnostics
from tf2npu.graph.fusion.attrs import CONV2D_ATTRS, fused_ops
from tf2npu.graph.ir import FunctionGraph, Graph, Node, TensorRef
from tf2npu.graph.passes.cpu_kernels import LOW_FLOATS, CpuKernels, has_low_float

__all__ = ["CPU_FORM", "STAT_KEYS", "make_cpu_runnable"]

#: ``node.meta`` key on every node of a CPU form: ``"expanded <op>"`` or ``"fp32 <op>"``.
CPU_FORM = "cpu_form"
#: The stats :func:`make_cpu_runnable` returns, in order.
STAT_KEYS = (
    "fused_ops_expanded",
    "ops_computed_in_fp32",
    "matmuls_accumulated_in_fp32",
    "ops_without_cpu_kernel",
)

#: Ops the device runs on float16 inputs with float32 accumulation (Ascend's Cube unit), while
#: TensorFlow's CPU float16 kernels accumulate in float16: a 3,001-long dot product of ones
#: gives 2048. Here they compute in float32 between casts, which is the device's arithmetic.
ACCUMULATING = frozenset(
    {
        "MatMul",
        "BatchMatMul",
        "BatchMatMulV2",
        "BatchMatMulV3",
        "Conv2D",
        "Conv2DBackpropInput",
        "Conv2DBackpropFilter",
        "Conv3D",
        "Conv3DBackpropInputV2",
        "Conv3DBackpropFilterV2",
        "DepthwiseConv2dNative",
        "DepthwiseConv2dNativeBackpropInput",
        "DepthwiseConv2dNativeBackpropFilter",
    }
)

#: Activations TF's fused kernels apply after the bias or batch norm (each is also a TF op).
_ACTIVATIONS = frozenset({"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"})


def make_cpu_runnable(graph: Graph, diagnostics: Diagnostics | None = None) -> dict[str, int]:
    """Rewrite every node without a CPU kernel for its dtypes, and every float16 op of
    :data:`ACCUMULATING` (all bodies); returns stats.

    Superseded nodes are rewritten too: a session places the whole graph when it is created
    (``place_pruned_graph`` is off by default), so a dead node without a kernel fails the run
    as surely as a live one. Their forms copy their meta, so they are superseded as well.

    ``diagnostics`` (the engine's) gets one info per op type computed in float32 and one
    warning per op type left without a kernel.
    """
    kernels = CpuKernels()
    stats = dict.fromkeys(STAT_KEYS, 0)
    fp32_ops: dict[str, str] = {}
    stuck_ops: dict[str, str] = {}
    _rewrite_all(graph, kernels, stats, fp32_ops, stuck_ops, only_accumulating=False)
    # Expanding a fused op created float16 MatMuls/Conv2Ds that must accumulate in fp32 too.
    if stats["fused_ops_expanded"]:
        _rewrite_all(graph, kernels, stats, fp32_ops, stuck_ops, only_accumulating=True)
    if diagnostics is not None:
        _report(diagnostics, fp32_ops, stuck_ops)
    return stats


def _rewrite_all(
    graph: Graph,
    kernels: CpuKernels,
    stats: dict[str, int],
    fp32_ops: dict[str, str],
    stuck_ops: dict[str, str],
    *,
    only_accumulating: bool,
) -> None:
    for body in list(graph.walk()):
        for node in list(body):
            accumulates = node.op in ACCUMULATING
            if (only_accumulating and not accumulates) or not has_low_float(node.attrs.values()):
                continue
            if not accumulates and kernels.runs(node):
                continue
            op, name = node.op, node.name
            if not accumulates and _expand_fused(body, node):
                stats["fused_ops_expanded"] += 1
            elif _compute_in_fp32(body, node, kernels):
                if accumulates:
                    stats["matmuls_accumulated_in_fp32"] += 1
                else:
                    stats["ops_computed_in_fp32"] += 1
                    fp32_ops.setdefault(op, name)
            elif not accumulates:
                stats["ops_without_cpu_kernel"] += 1
                stuck_ops.setdefault(op, name)


def _report(diagnostics: Diagnostics, fp32_ops: dict[str, str], stuck: dict[str, str]) -> None:
    for op, name in fp32_ops.items():
        diagnostics.info(
            "cpu_fp32_fallback",
            f"{op} has no CPU kernel in the decided low-precision dtype; here it runs in float32 "
            "between casts, so its values differ from the device kernel's by float16 rounding",
            node=name,
        )
    for op, name in stuck.items():
        diagnostics.warning(
            "no_cpu_kernel",
            f"{op} has no CPU kernel for its decided dtypes, nor in float32; running it here "
            "fails with TensorFlow's 'No OpKernel' error",
            node=name,
            fix="keep the op in float32 (npu_scope.keep_dtype_scope or modify_mixlist deny list)",
        )


class _Form:
    """Replaces one node by new nodes; the node's name goes to the one added without a tag.

    The old node is erased first (its readers keep pointing at its name, which the final node
    takes over); every new node copies its device and meta, intermediates are named
    ``<name>/_tf2npu_<tag>`` with the node's origin.
    """

    def __init__(self, body: Graph, node: Node, form: str) -> None:
        self.body = body
        self.name = node.name
        self.device = node.device
        self.meta = {**node.meta, CPU_FORM: form}
        # a form of a form's node keeps the first record: the node the passes decided
        self.meta.setdefault(DEVICE_FORM, DeviceForm(node.op, node.inputs, node.control_inputs))
        self.origin = node.origin or (node.name,)
        self.final_origin = node.origin
        self.extra = node.extra
        self.control: Sequence[str] = node.control_inputs
        self.inputs = node.inputs
        self.attrs = node.attrs
        self.old_layout = output_layout(node)
        self.function = isinstance(body, FunctionGraph)
        # A fused node has no precision decision of its own (fusion runs after precision);
        # each op of its chain gets the decision of the original node of that op type.
        self.decisions = {
            found.op: found.meta[PRECISION]
            for found in map(body.get, node.origin)
            if found is not None and PRECISION in found.meta
        }
        body.erase_node(node, force=True)

    def add(
        self,
        op: str,
        inputs: Iterable[TensorRef],
        attrs: dict[str, Any],
        *,
        tag: str = "",
        control: bool = False,
    ) -> Node:
        """A new node; ``tag=""`` makes it the final one, named like the replaced node."""
        final = not tag
        name = self.name if final else self.body.new_name(self.name, tag)
        node = self.body.add_node(
            name,
            op,
            inputs,
            control_inputs=self.control if control else (),
            attrs=attrs,
            device=self.device,
            origin=self.final_origin if final else self.origin,
        )
        node.meta.update(self.meta)
        if PRECISION not in node.meta and op in self.decisions:
            node.meta[PRECISION] = self.decisions[op]
        if final:
            node.extra = self.extra
        return node

    def out(self, node: Node, flat: int = 0) -> TensorRef:
        """Output ``flat`` of ``node`` as readers in this body name it."""
        if not self.function:
            return TensorRef(node.name, flat)
        layout = output_layout(node) or ()
        for arg, dtypes in layout:
            if flat < len(dtypes):
                return TensorRef(node.name, flat, arg)
            flat -= len(dtypes)
        raise ValueError(f"{node.op} {node.name!r} has no output {flat}")

    def rewire(self, final: Node) -> None:
        """In a function body readers name outputs by arg: point them at the final node's."""
        if not self.function or not self.old_layout:
            return
        flat = 0
        for arg, dtypes in self.old_layout:
            for index in range(len(dtypes)):
                self.body.replace_all_uses(TensorRef(self.name, index, arg), self.out(final, flat))
                flat += 1


# -- fused ops expanded into their chain -----------------------------------------------------


def _expand_fused(body: Graph, node: Node) -> bool:
    """Expand a low-float ``_FusedMatMul`` / ``_FusedConv2D`` whose fused_ops we know."""
    if node.op not in ("_FusedMatMul", "_FusedConv2D"):
        return False
    dtype = _type(node.attrs.get("T"))
    ops = fused_ops(node)
    if dtype not in LOW_FLOATS or not ops or ops[0] not in ("BiasAdd", "FusedBatchNorm"):
        return False
    activation = ops[1:]
    if len(activation) > 1 or (activation and activation[0] not in _ACTIVATIONS):
        return False
    args = node.inputs[2:]
    if len(args) != (1 if ops[0] == "BiasAdd" else 4):
        return False
    if ops[0] == "FusedBatchNorm" and node.op != "_FusedConv2D":
        return False
    op = node.op
    form = _Form(body, node, f"expanded {op}")
    make = _Attrs()
    t = make.dtype(dtype)
    # Without an activation the bias / batch-norm step is the last one and takes the name.
    middle = "bias_add" if activation else ""
    if op == "_FusedMatMul":
        names = ("transpose_a", "transpose_b")
        keep: dict[str, Any] = {k: form.attrs[k] for k in names if k in form.attrs}
        main = form.add("MatMul", form.inputs[:2], {"T": t, **keep}, tag="matmul", control=True)
        data_format = make.string("NHWC")
    else:
        keep = {k: form.attrs[k] for k in CONV2D_ATTRS if k in form.attrs}
        main = form.add("Conv2D", form.inputs[:2], keep, tag="conv2d", control=True)
        data_format = form.attrs.get("data_format") or make.string("NHWC")
    if ops[0] == "BiasAdd":
        attrs = {"T": t, "data_format": data_format}
        inputs = [form.out(main), args[0]]
        step = form.add("BiasAdd", inputs, attrs, tag=middle)
    else:
        step = _batch_norm(form, make, main, args, dtype, data_format)
        if not activation:  # the batch norm has six outputs; the name holds only ``y``
            step = form.add("Identity", [form.out(step)], {"T": t})
    if activation:
        attrs = {"T": t}
        if activation[0] == "LeakyRelu":
            alpha = form.attrs.get("leakyrelu_alpha")
            attrs["alpha"] = alpha if alpha is not None else make.real(0.2)
        step = form.add(activation[0], [form.out(step)], attrs)
    form.rewire(step)
    return True


def _batch_norm(
    form: _Form, make: _Attrs, x: Node, args: Sequence[TensorRef], dtype: int, data_format: Any
) -> Node:
    """An inference ``FusedBatchNormV3`` (the CPU's low-float batch norm wants float32 params)."""
    params = [
        form.out(form.add("Cast", [ref], make.cast(dtype, DT_FLOAT), tag="bn_param_f32"))
        for ref in args
    ]
    epsilon = form.attrs.get("epsilon")
    attrs = {
        "T": make.dtype(dtype),
        "U": make.dtype(DT_FLOAT),
        "epsilon": epsilon if epsilon is not None else make.real(0.0001),
        "data_format": data_format,
        "is_training": make.boolean(False),
    }
    return form.add("FusedBatchNormV3", [form.out(x), *params], attrs, tag="batch_norm")


# -- any other op computed in float32 ----------------------------------------------------------


def _compute_in_fp32(body: Graph, node: Node, kernels: CpuKernels) -> bool:
    """Run ``node`` in float32 between casts, if a CPU kernel takes its float32 form."""
    make = _Attrs()
    up = {key: make.widened(value) for key, value in node.attrs.items()}
    ins, outs = _input_dtypes(node), output_layout(node)
    if ins is None or outs is None or len(ins) != len(node.inputs):
        return False
    if any(d is None or d > REF_OFFSET for d in ins):
        return False
    out_dtypes: list[int] = [d for _, ds in outs for d in ds if d is not None and d < REF_OFFSET]
    if len(out_dtypes) != sum(len(dtypes) for _, dtypes in outs):
        return False
    if not out_dtypes or not kernels.runs(node, up):
        return False
    op = node.op
    form = _Form(body, node, f"fp32 {op}")
    inputs = [
        form.out(form.add("Cast", [ref], make.cast(d, DT_FLOAT), tag="in_f32"))
        if d in LOW_FLOATS
        else ref
        for ref, d in zip(form.inputs, ins, strict=True)
    ]
    narrowed = [d in LOW_FLOATS for d in out_dtypes]
    if not any(narrowed):  # e.g. ApproximateEqual: low-float inputs, a bool output
        final = form.add(op, inputs, up, control=True)
        form.rewire(final)
        return True
    wide = form.add(op, inputs, up, tag="f32", control=True)
    single = len(out_dtypes) == 1
    results: list[TensorRef] = []
    for flat, d in enumerate(out_dtypes):
        ref = form.out(wide, flat)
        if narrowed[flat]:
            cast = form.add("Cast", [ref], make.cast(DT_FLOAT, d), tag="" if single else "out")
            ref = form.out(cast)
        results.append(ref)
    if single:
        final = form.body[form.name]
    else:
        final = form.add("IdentityN", results, {"T": make.types(out_dtypes)})
    form.rewire(final)
    return True


def _input_dtypes(node: Node) -> list[int | None] | None:
    """One dtype per data input, from the op definition and the node's attrs."""
    layout = input_layout(node)
    return None if layout is None else list(flat_dtypes(layout))


class _Attrs:
    """``AttrValue`` builders (TensorFlow's proto module, imported on first use)."""

    def __init__(self) -> None:
        from tensorflow.core.framework import attr_value_pb2

        self.value: Any = attr_value_pb2.AttrValue

    def dtype(self, dtype: int) -> Any:
        return self.value(type=dtype)

    def types(self, dtypes: Sequence[int]) -> Any:
        return self.value(list=self.value.ListValue(type=list(dtypes)))

    def string(self, text: str) -> Any:
        return self.value(s=text.encode())

    def real(self, number: float) -> Any:
        return self.value(f=number)

    def boolean(self, flag: bool) -> Any:
        return self.value(b=flag)

    def cast(self, src: int, dst: int) -> dict[str, Any]:
        return {"SrcT": self.dtype(src), "DstT": self.dtype(dst), "Truncate": self.boolean(False)}

    def widened(self, value: Any) -> Any:
        """``value`` with every low float dtype (scalar or list) replaced by float32."""
        if value.HasField("type") and value.type in LOW_FLOATS:
            return self.dtype(DT_FLOAT)
        if value.HasField("list") and any(d in LOW_FLOATS for d in value.list.type):
            return self.types([DT_FLOAT if d in LOW_FLOATS else d for d in value.list.type])
        return value


def _type(value: Any) -> int:
    return int(value.type) if value is not None else 0

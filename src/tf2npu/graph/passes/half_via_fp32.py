"""Run float16 ops as float32 ops plus a rounding: the same values, faster (lowering's helper).

TensorFlow's CPU float16 kernels convert every element to float, compute, and convert back,
one element at a time: a float16 ``Relu`` takes ~5× the time of the float32 one, a float16
``MaxPoolGrad`` ~2.6× (``benchmarks/half_kernels.py``; figures in ``docs/benchmarks.md``).
For the ops below the float32 kernel followed by a float32→float16 ``Cast`` gives *exactly*
the float16 kernel's result, so the graph means the same and runs faster:

* :data:`EXACT` ops select, move or compare their inputs (``Relu``, ``MaxPool``, ...): on
  float16 values widened to float32 their result is a float16 value already; no rounding.
  Bit for bit, except that :data:`ZERO_SIGN_MAY_DIFFER` ops can give ``+0.0`` where the
  float16 kernel gives ``-0.0`` (equal values).
* :data:`ROUNDED` ops are one IEEE operation (``+ - * /``, square root): float32 has at least
  2·11+2 significand bits, so the float32 result rounded to float16 is the correctly rounded
  float16 result, which is what the float16 kernel (computing in float) returns.
* A ``MaxPoolGrad`` whose windows overlap (ResNet's 3×3/2 stem pool) adds several gradients
  into one input with a float16 rounding after each addition, in output order, which no
  float32 op reproduces; but most of its float16 kernel's time goes into finding each window's
  maximum with float16 comparisons (on a ReLU output of 32×32×32×16 the float16 kernel took
  13.5 ms, finding the maxima in float32 4.4 ms, the float16 additions 1 ms). So the maxima
  are found in float32 (``MaxPoolWithArgmax`` on the twin: the same comparisons, the same
  loop, the same first-of-equals and NaN rules) and only the additions stay in float16
  (``MaxPoolGradWithArgmax``: the same ``+=`` in the same order), bit for bit.

Every float16 tensor keeps its name and dtype (dumps and compare read them): the rewritten node
becomes a ``Cast`` to float16 of its float32 twin (an overlapping ``MaxPoolGrad``, the float16
``MaxPoolGradWithArgmax``). Where a float16 tensor is only read back
into float32 (the precision pass's ``Cast`` to float32, lowering's own ``_tf2npu_in_f32``),
that reader becomes an ``Identity`` of the twin (and a second ``Cast`` of one float16
tensor to float32, e.g. a gradient read by both ``Conv2DBackprop*`` ops, an ``Identity`` of
the first), so a chain of such ops runs in float32 with a
rounding only after the ROUNDED ones, and a float16 ``Cast`` nobody fetches is pruned by the
session. The top-level graph only; superseded nodes are left alone. O(nodes + edges).

With ``half_round`` (the runtime loaded ``Tf2npuHalfRound``, :mod:`tf2npu.runtime.native`;
``EngineConfig.half_round``) a float32 value rounded to float16 precision is one op instead of
a ``Cast`` pair: TensorFlow's ``Cast`` to float16 and back is two passes over memory and a
float16 buffer, most of what the default precision mode adds on a CNN. Its float32 reader
reads :data:`HALF_ROUND_OP` of the float32 value, bit for bit the pair (NaN made quiet with its
sign, as ``Cast`` makes it), while the float16 ``Cast`` keeps its name for fetches and dumps:

* a :data:`ROUNDED` op's twin is ``<name>/_tf2npu_f32_round``, ``HalfRound`` of its float32
  op, so its float32 readers become ``Identity`` s of that;
* a float16→float32 ``Cast`` (or a new twin) of a float32→float16 ``Cast`` (the precision
  pass's cast of a float32 input, a CPU form's ``_tf2npu_out``) becomes ``HalfRound`` of the
  narrowing ``Cast``'s input.

The engine never loads the library itself: the flag says the runtime did.
"""

from __future__ import annotations

from typing import Any

from tf2npu.dtypes import DT_FLOAT, DT_HALF, DT_INT64
from tf2npu.graph._opdef import output_layout
from tf2npu.graph.decisions import DEVICE_FORM, FUSED_BY, SUPERSEDED
from tf2npu.graph.ir import Graph, Node, TensorRef
from tf2npu.graph.passes.cpu_runnable import CPU_FORM, _Attrs, _Form, _input_dtypes

__all__ = [
    "EXACT",
    "HALF_ROUND_OP",
    "ROUNDED",
    "STAT_KEYS",
    "ZERO_SIGN_MAY_DIFFER",
    "compute_half_in_fp32",
]

#: Ops whose float32 result on float16-representable inputs is float16-representable.
EXACT = frozenset(
    {
        "Relu",
        "Relu6",
        "ReluGrad",
        "Relu6Grad",
        "MaxPool",
        "Maximum",
        "Minimum",
        "Neg",
        "Abs",
        "Identity",
        "Reshape",
        "Squeeze",
        "ExpandDims",
    }
)
#: EXACT ops whose float16 kernel keeps a -0.0 that the float32 kernel turns into +0.0 (or
#: picks the other of two equal zeros): the same value, but not the same bits for zeros.
ZERO_SIGN_MAY_DIFFER = frozenset(
    {
        "Relu",
        "Relu6",
        "ReluGrad",
        "Relu6Grad",
        "MaxPool",
        "MaxPoolGrad",
        "Maximum",
        "Minimum",
    }
)
#: Ops that are one correctly rounded IEEE operation per element.
ROUNDED = frozenset({"Add", "AddV2", "Sub", "Mul", "RealDiv", "Div", "BiasAdd", "Square", "Sqrt"})
#: The stats :func:`compute_half_in_fp32` returns, in order (``half_roundings_in_one_op``:
#: ``Cast`` pairs replaced by :data:`HALF_ROUND_OP`, only with ``half_round``).
STAT_KEYS = ("half_ops_via_fp32", "half_casts_elided", "half_roundings_in_one_op")
#: The op type of ``src/tf2npu/runtime/native/half_round.cc`` (float32 in, float32 out).
HALF_ROUND_OP = "Tf2npuHalfRound"


def compute_half_in_fp32(graph: Graph, *, half_round: bool = False) -> dict[str, int]:
    """Rewrite the top level's float16 :data:`EXACT` / :data:`ROUNDED` ops; returns stats.

    ``half_round``: the runtime registered :data:`HALF_ROUND_OP`; emit it for roundings."""
    rewrite = _Rewrite(graph, half_round)
    if not any(_type(node, "T") == DT_HALF or _is_widening_cast(node) for node in graph):
        return rewrite.stats  # a float32 graph: skip the topological sort
    for node in graph.toposort():
        if SUPERSEDED in node.meta:
            continue
        if _is_widening_cast(node):
            rewrite.widening_cast(node)
        elif _eligible(node):
            rewrite.op(node)
        elif _overlapping_max_pool_grad(node):
            rewrite.max_pool_grad(node)
    return rewrite.stats


def _is_widening_cast(node: Node) -> bool:
    return node.op == "Cast" and _type(node, "SrcT") == DT_HALF and _type(node, "DstT") == DT_FLOAT


def _eligible(node: Node) -> bool:
    """A float16 EXACT/ROUNDED op with one float16 output (MaxPoolGrad: windows not overlapping)."""
    if _type(node, "T") != DT_HALF:
        return False
    if node.op == "MaxPoolGrad":
        window = _window(node)
        # Overlapping windows add several gradients into one input, which the float16 kernel
        # does with a rounding after each addition: not one operation.
        if window is None or any(k > s for k, s in zip(*window, strict=True)):
            return False
    elif node.op not in EXACT and node.op not in ROUNDED:
        return False
    outs = output_layout(node)
    return outs is not None and [d for _, ds in outs for d in ds] == [DT_HALF]


def _window(node: Node) -> tuple[list[int], list[int]] | None:
    ksize, strides = node.attrs.get("ksize"), node.attrs.get("strides")
    if ksize is None or strides is None or len(ksize.list.i) != len(strides.list.i):
        return None
    return list(ksize.list.i), list(strides.list.i)


def _overlapping_max_pool_grad(node: Node) -> bool:
    """A float16 ``MaxPoolGrad`` the argmax ops can compute: NHWC (the only layout of its CPU
    kernel), SAME or VALID padding (``MaxPoolWithArgmax`` has no explicit padding), windows
    over rows and columns only (4 ints, batch and depth 1), at least two windows overlapping."""
    if node.op != "MaxPoolGrad" or _type(node, "T") != DT_HALF or len(node.inputs) != 3:
        return False
    window = _window(node)
    padding, layout = node.attrs.get("padding"), node.attrs.get("data_format")
    return (
        window is not None
        and len(window[0]) == 4
        and window[0][0] == window[0][3] == window[1][0] == window[1][3] == 1
        and any(k > s for k, s in zip(*window, strict=True))
        and padding is not None
        and padding.s in (b"SAME", b"VALID")
        and (layout is None or layout.s in (b"", b"NHWC"))
    )


class _Rewrite:
    """The float32 twins found so far: ``twins`` hold float32 values equal to float16 ones."""

    def __init__(self, graph: Graph, half_round: bool) -> None:
        self.graph = graph
        self.half_round = half_round
        self.make = _Attrs()
        #: float16 tensor -> a float32 tensor computed without a Cast from it (an EXACT result)
        self.computed: dict[TensorRef, TensorRef] = {}
        #: float16 tensor -> a Cast of it to float32 (one per tensor, shared by readers)
        self.widened: dict[TensorRef, TensorRef] = {}
        self.stats = dict.fromkeys(STAT_KEYS, 0)

    def widening_cast(self, node: Node) -> None:
        """A float16→float32 Cast of a tensor with a computed twin, or with an earlier Cast
        to float32, becomes an Identity of that (one conversion per float16 tensor)."""
        source, control = node.inputs[0], node.control_inputs
        twin = self.computed.get(source)
        if twin is None:
            earlier = self.widened.get(source)
            if earlier is not None and self.graph[earlier.node].device == node.device:
                twin = earlier
            else:
                wide = self.narrowed_from(source)
                if wide is not None:
                    form = _Form(self.graph, node, "half via fp32 rounding")
                    form.add(HALF_ROUND_OP, [wide], {}, control=True)
                    self.stats["half_roundings_in_one_op"] += 1
                if not control:
                    self.widened.setdefault(source, TensorRef(node.name))
                return
        if twin is None:
            return
        form = _Form(self.graph, node, "half via fp32 Cast")
        form.add("Identity", [twin], {"T": self.make.dtype(DT_FLOAT)}, control=True)
        self.stats["half_casts_elided"] += 1

    def op(self, node: Node) -> None:
        dtypes = _input_dtypes(node)
        if dtypes is None or len(dtypes) != len(node.inputs):
            return
        inputs = [
            self.twin(ref) if d == DT_HALF else ref
            for ref, d in zip(node.inputs, dtypes, strict=True)
        ]
        op, name = node.op, node.name
        attrs = {k: self.make.widened(v) for k, v in node.attrs.items()}
        form = _Form(self.graph, node, f"half via fp32 {op}")
        wide = form.add(op, inputs, attrs, tag="f32", control=True)
        form.add("Cast", [wide.output()], self.make.cast(DT_FLOAT, DT_HALF))
        if op not in ROUNDED:
            self.computed[TensorRef(name)] = wide.output()
        elif self.half_round:
            rounded = form.add(HALF_ROUND_OP, [wide.output()], {}, tag="f32_round")
            self.computed[TensorRef(name)] = rounded.output()
            self.stats["half_roundings_in_one_op"] += 1
        self.stats["half_ops_via_fp32"] += 1

    def max_pool_grad(self, node: Node) -> None:
        """Overlapping windows: each window's maximum found in float32 on the input's twin, the
        gradients added in float16 into the maxima found (the float16 kernel's two loops, the
        slow one of them in float32). The result is float16, read back by a Cast."""
        source, _, grad = node.inputs
        wide = self.twin(source)
        window = {key: node.attrs[key] for key in ("ksize", "strides", "padding")}
        index = {
            "Targmax": self.make.dtype(DT_INT64),
            "include_batch_in_index": self.make.boolean(True),
        }
        form = _Form(self.graph, node, "half via fp32 MaxPoolGrad")
        argmax = form.add(
            "MaxPoolWithArgmax",
            [wide],
            {**window, **index, "T": self.make.dtype(DT_FLOAT)},
            tag="f32_argmax",
            control=True,
        )
        form.add(
            "MaxPoolGradWithArgmax",
            [source, grad, TensorRef(argmax.name, 1)],
            {**window, **index, "T": self.make.dtype(DT_HALF)},
        )
        self.stats["half_ops_via_fp32"] += 1

    def twin(self, ref: TensorRef) -> TensorRef:
        """A float32 tensor equal to float16 ``ref``: computed, an existing Cast, or a new one."""
        found = self.computed.get(ref) or self.widened.get(ref)
        if found is not None:
            return found
        producer = self.graph[ref.node]
        wide = self.narrowed_from(ref)
        if wide is not None:
            self.stats["half_roundings_in_one_op"] += 1
        cast = self.graph.add_node(
            self.graph.new_name(ref.node, "twin_f32"),
            "Cast" if wide is None else HALF_ROUND_OP,
            [ref] if wide is None else [wide],
            attrs=self.make.cast(DT_HALF, DT_FLOAT) if wide is None else {},
            device=producer.device,
            origin=producer.origin or (producer.name,),
        )
        cast.meta.update({**_carried(producer), CPU_FORM: "half via fp32 twin"})
        self.widened[ref] = cast.output()
        return cast.output()

    def narrowed_from(self, ref: TensorRef) -> TensorRef | None:
        """With ``half_round``: the float32 input of ``ref`` when ``ref`` is a plain float32→
        float16 ``Cast`` (round to nearest, not ``Truncate``; no control inputs, which a
        reader of its input would not wait for), else None."""
        if not self.half_round:
            return None
        producer = self.graph[ref.node]
        truncate = producer.attrs.get("Truncate")
        if (
            producer.op != "Cast"
            or SUPERSEDED in producer.meta
            or _type(producer, "SrcT") != DT_FLOAT
            or _type(producer, "DstT") != DT_HALF
            or (truncate is not None and truncate.b)
            or producer.control_inputs
            or len(producer.inputs) != 1
        ):
            return None
        return producer.inputs[0]


#: Meta of a producer that is about the producer itself, not shared with its twin.
_OWN_META = (CPU_FORM, DEVICE_FORM, FUSED_BY)


def _carried(producer: Node) -> dict[str, Any]:
    """The producer's meta a new reader of it shares (its GeOp, its decision), not its form
    nor the fusion that made it."""
    return {k: v for k, v in producer.meta.items() if k not in _OWN_META}


def _type(node: Node, attr: str) -> int:
    value = node.attrs.get(attr)
    return int(value.type) if value is not None else 0

"""List the op types the engine may put into float16 for which TensorFlow's CPU has no kernel.

Two sources of float16 nodes exist: the precision pass (every device op of the op library whose
device kernel takes float16, lowered by setting its float32 type attrs to ``DT_HALF``) and the
fusion rules (TF fused ops emitted in their inputs' dtype). For each op type this script builds
the attrs the precision pass would give a float32 node, and asks TensorFlow's kernel registry
whether a CPU kernel admits them (constraints on other attrs, e.g. ``Tidx``, are not judged).
The lowering pass handles whatever is listed (``docs/graph-engine.md``, "Running the decided
graph on the CPU"); this script shows the extent of the gap for the installed TensorFlow.

Usage::

    .venv/bin/python tools/cpu_half_kernels.py [--dtype bfloat16]
"""

from __future__ import annotations

import argparse
import sys

from tf2npu.graph.ir import Graph
from tf2npu.graph.opinfo import load_default
from tf2npu.graph.passes.cpu_kernels import cpu_constraints
from tf2npu.graph.precision.signature import DT_BFLOAT16, DT_FLOAT, DT_HALF, SignatureReader

#: TF op types the fusion rules emit (NPU ops are CPU functions and are not listed).
FUSION_EMITTED = ("_FusedMatMul", "_FusedConv2D", "SoftmaxCrossEntropyWithLogits")


def lowered_attrs(op: str, target: int) -> frozenset[str] | None:
    """The type attrs the precision pass sets to ``target`` on a float32 ``op`` node, or
    ``None`` when it cannot lower such a node (its signature blocks it)."""
    from tensorflow.core.framework.attr_value_pb2 import AttrValue
    from tensorflow.python.framework import op_def_registry

    op_def = op_def_registry.get(op)
    if op_def is None:
        return None
    typed = {a.type_attr for a in (*op_def.input_arg, *op_def.output_arg) if a.type_attr}
    attrs = {}
    for attr in op_def.attr:
        allowed = set(attr.allowed_values.list.type)
        if attr.type == "type" and attr.name in typed and (not allowed or DT_FLOAT in allowed):
            attrs[attr.name] = AttrValue(type=DT_FLOAT)
        elif attr.type == "int" and attr.name.startswith("N"):
            attrs[attr.name] = AttrValue(i=1)
    node = Graph().add_node("probe", op, attrs=attrs)
    signature = SignatureReader(target).read(node)
    if signature is None or signature.blocker:
        return None
    return frozenset(signature.attrs)


def lacks_cpu_kernel(op: str, attrs: frozenset[str], target: int) -> bool:
    """Whether no CPU kernel of ``op`` admits ``target`` in every one of ``attrs``.

    An op TF registers no kernel for at all (``AccumulateNV2``, which grappler rewrites before
    anything runs) is not listed: the lowering pass does not judge it either.
    """
    kernels = cpu_constraints(op)
    if kernels is None:
        return False
    for kernel in kernels:
        if kernel.label:
            continue
        allowed = dict(kernel.allowed)
        if all(target in allowed.get(name, {target}) for name in attrs):
            return False
    return True


def survey(target: int) -> dict[str, list[str]]:
    """``{"precision": [...], "fusion": [...]}``: op types lacking a CPU kernel in ``target``."""
    dtype = "float16" if target == DT_HALF else "bfloat16"
    precision = []
    for info in load_default():
        if not info.device_supported or dtype not in info.float_dtypes:
            continue
        attrs = lowered_attrs(info.op, target)
        if attrs and lacks_cpu_kernel(info.op, attrs, target):
            precision.append(info.op)
    fusion = [op for op in FUSION_EMITTED if lacks_cpu_kernel(op, frozenset({"T"}), target)]
    return {"precision": precision, "fusion": fusion}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", choices=("float16", "bfloat16"), default="float16")
    args = parser.parse_args(argv)
    target = DT_HALF if args.dtype == "float16" else DT_BFLOAT16
    found = survey(target)
    for source, ops in found.items():
        print(f"{source}: {len(ops)} op types without a CPU {args.dtype} kernel")
        for op in ops:
            print(f"  {op}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

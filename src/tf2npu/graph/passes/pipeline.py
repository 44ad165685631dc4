"""The one ordered list of graph passes (DESIGN §4); the pass objects live in their own modules.

Each stage below is a pass name registered with :func:`tf2npu.graph.passes.infra.register_pass`;
:meth:`PassManager.from_names(DEFAULT_PIPELINE) <tf2npu.graph.passes.infra.PassManager.from_names>`
builds the pipeline. Order lives here and nowhere else.
"""

from __future__ import annotations

__all__ = ["DEFAULT_PIPELINE", "STAGES"]

STAGES: dict[str, str] = {
    "device_strings": (
        "Normalise device strings (/device:NPU, /job:localhost/...) so later passes read one form."
    ),
    "placement": (
        "Decide device or host per node with support predicates that return a reason when they "
        "refuse: op library, gray ops, dataset ops, string/resource/ref propagation, control-flow "
        "frames all-or-nothing, _without_npu_compile, resource-op pairing."
    ),
    "precision": (
        "Insert casts per precision_mode and the allow/deny/gray/clear lists (edited by "
        "modify_mixlist), keep keep_dtype_scope nodes untouched, remove redundant cast pairs; "
        "record the decision and its reason per node."
    ),
    "fusion": (
        "Apply the named rewrite rules switched on by fusion_switch_file, to a fixpoint; count "
        "each rule's applications and record origin nodes."
    ),
    "inject_faults": (
        "Only when a fault drill asks (TF2NPU_INJECT_FAULT): corrupt the output of the fused "
        "node(s) of one rule or instance, or of one op, by inserting an Add or Mul after it."
    ),
    "partition": (
        "Cycle-safe clustering into GeOps: one GeOp in full-offload mode (reporting what would "
        "fall back), several in mixed compute with every host-device edge recorded."
    ),
    "lowering": (
        "Make the decided graph run on this CPU: NPU ops become calls of CPU functions, ops "
        "the CPU has no kernel for in their dtype get a CPU form, GeOp members are tagged."
    ),
}

DEFAULT_PIPELINE: tuple[str, ...] = (
    "device_strings",
    "placement",
    "precision",
    "fusion",
    "inject_faults",
    "partition",
    "lowering",
)
"""Pass names in the order they run: device strings, placement, precision, fusion, fault
injection (drills only), partition, lowering. ``STAGES`` describes each."""

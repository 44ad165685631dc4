"""``iterations_per_loop``: one ``sess.run`` of ``IterationOp`` executes N training steps.

``util.set_iteration_per_loop`` (sess.run scripts) and ``NPUEstimator`` with
``iterations_per_loop=N`` group the train op into a node named ``IterationOp``; the adapter's
GeOp then runs its sub-graph N times per ``sess.run``, each iteration taking the next batch
from the device-side ``GetNext``. Here the session runs the step N times. The adapter's
constraints are checked on the first such run: not with mixed compute, no one-shot iterator,
and static batch shapes (``drop_remainder=True``), since the device loop is compiled once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from tf2npu.config.options import NpuOptions
from tf2npu.runtime.errors import LoopError

__all__ = ["LOOP_OP", "TrainingSteps", "check_loop", "is_loop_run"]

#: The node name (last path component) the adapter treats as "run the loop".
LOOP_OP = "IterationOp"
_APPLY = re.compile(r"^(Resource)?(Sparse)?Apply|^AdamApplyOne|^ResourceScatter|^ApplyGradient")
_ASSIGNS = frozenset({"Assign", "AssignAdd", "AssignVariableOp", "AssignAddVariableOp"})
_NOT_A_STEP = frozenset({"Const", "RestoreV2", "Restore", "RestoreSlice"})
_PASS_THROUGH = frozenset({"Identity", "Snapshot"})
_ONE_SHOT = frozenset({"OneShotIterator"})
_GET_NEXT = frozenset({"IteratorGetNext", "IteratorGetNextSync"})


def is_loop_run(targets: Iterable[Any]) -> bool:
    """Whether one of the run's targets is the ``IterationOp`` group."""
    return any(op.name.rpartition("/")[2] == LOOP_OP for op in targets)


def check_loop(graph: Any, options: NpuOptions) -> None:
    """The adapter's constraints on offloading the training loop (client graph ``graph``).

    Raises:
        LoopError: naming the option or node, its value, and the fix.
    """
    n = options.iterations_per_loop
    if options.mix_compile_mode:
        raise LoopError(
            f"iterations_per_loop={n} cannot be used with mix_compile_mode=True: mixed compute "
            "runs one step per sess.run; set iterations_per_loop=1 or mix_compile_mode=False"
        )
    for op in graph.get_operations():
        if op.type in _ONE_SHOT:
            raise LoopError(
                f"iterations_per_loop={n}: {op.name!r} is a one-shot iterator, which the "
                "device loop cannot re-run; use dataset.make_initializable_iterator() (and run "
                "its initializer) or iterations_per_loop=1"
            )
        if op.type in _GET_NEXT:
            dynamic = [str(t.shape) for t in op.outputs if not t.shape.is_fully_defined()]
            if dynamic:
                raise LoopError(
                    f"iterations_per_loop={n}: {op.name!r} yields tensors of unknown shape "
                    f"({', '.join(dynamic)}); the device loop is compiled for static shapes. "
                    "Use dataset.batch(batch_size, drop_remainder=True) and fixed-size inputs"
                )


class TrainingSteps:
    """Which runs are training steps: those that apply an optimizer or advance the global step.

    An optimizer's update is an ``Apply*`` op, or, for hand-written optimizers (BERT's
    ``AdamWeightDecayOptimizer``), plain assignments followed by ``global_step.assign(...)``;
    both count. Initialising or restoring the global step does not. The answer depends only on
    the run's fetches and targets; it is cached per such signature.
    """

    def __init__(self, graph: Any) -> None:
        self.graph = graph
        self._cache: dict[tuple[str, ...], bool] = {}

    def is_step(self, ops: Sequence[Any]) -> bool:
        key = tuple(sorted(op.name for op in ops))
        hit = self._cache.get(key)
        if hit is None:
            steps = {v.op.name for v in self.graph.get_collection("global_step")}
            hit = self._cache[key] = _reaches_update(ops, steps)
        return hit


def _reaches_update(roots: Sequence[Any], global_steps: set[str]) -> bool:
    seen: set[str] = set()
    stack = list(roots)
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if _APPLY.search(op.type) or _advances(op, global_steps) or _calls_update(op):
            return True
        stack.extend(t.op for t in op.inputs)
        stack.extend(op.control_inputs)
    return False


def _calls_update(op: Any) -> bool:
    """Whether a function ``op`` calls (a v2 ``cond`` branch: ``NPULossScaleOptimizer``'s
    apply-if-finite, a ``while`` body) applies an optimizer, at any depth."""
    stack = [attr.func.name for attr in op.node_def.attr.values() if attr.HasField("func")]
    seen: set[str] = set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        function = op.graph._get_function(name)  # private: TF has no public lookup by name
        if function is None:
            continue
        for node in function.definition.node_def:
            if _APPLY.search(node.op):
                return True
            stack.extend(a.func.name for a in node.attr.values() if a.HasField("func"))
    return False


def _advances(op: Any, global_steps: set[str]) -> bool:
    """An assignment to the global step that is neither its initialiser nor a restore."""
    if op.type not in _ASSIGNS or len(op.inputs) < 2 or op.inputs[0].op.name not in global_steps:
        return False
    value = op.inputs[1].op
    while value.type in _PASS_THROUGH and value.inputs:  # a restore reads RestoreV2 via Identity
        value = value.inputs[0].op
    return value.type not in _NOT_A_STEP

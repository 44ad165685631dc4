"""Session-run hooks of the adapter: broadcast, checkpoint logging, tensor output, loop vars.

The broadcast hook does nothing with ``RANK_SIZE`` 1 (or unset); with more ranks (a
``tf2npu run --ranks N`` job) it sets every rank's trainable variables to the root's.

The adapter's outfeed hooks (``NPULogOutfeedSessionHook``, ``NPUInfeedOutfeedSessionHook``)
belong to the estimator's host-call machinery and are not in this module.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf

from npu_bridge.estimator.npu import util
from npu_bridge.hccl import hccl_ops
from npu_bridge.hccl.manage import world_rank_size
from tf2npu.client import groups as _groups

__all__ = [
    "NPUBroadcastGlobalVariablesHook",
    "NPUCheckpointSaverHook",
    "NPUOutputTensorHook",
    "NPUShutDownHook",
    "SetIterationsVarHook",
    "TellMeStepOrLossHook",
    "broadcast_global_variables",
]

_Hook: Any = tf.compat.v1.train.SessionRunHook
_SaverHook: Any = tf.compat.v1.train.CheckpointSaverHook


def broadcast_global_variables(root_rank: int, index: int | None = None) -> Any:
    """An op that sets every floating trainable variable to its value on ``root_rank``.

    Each variable goes through ``hccl_ops.broadcast`` and is assigned the result. With one
    rank the broadcast is the identity, so the op re-assigns each variable its own value.
    ``index`` (this rank's device index in the adapter) does not change the result.
    """
    updates = []
    for var in tf.compat.v1.trainable_variables():
        if not var.dtype.base_dtype.is_floating:
            continue
        (value,) = hccl_ops.broadcast([var.read_value()], root_rank=root_rank)
        updates.append(tf.compat.v1.assign(var, value))
    return tf.group(*updates)


class NPUBroadcastGlobalVariablesHook(_Hook):  # type: ignore[misc]
    """Broadcast the trainable variables from ``root_rank`` once the session exists.

    With one rank there is nothing to broadcast: :meth:`begin` builds nothing and
    :meth:`after_create_session` does nothing (the latest adapter does the same when the rank
    size is <= 1). With more ranks :meth:`begin` builds :func:`broadcast_global_variables`
    and :meth:`after_create_session` runs it, so every rank starts from root's values.
    """

    def __init__(self, root_rank: int | None = None, index: int | None = None) -> None:
        super().__init__()
        self.root_rank = root_rank
        self.index = index
        self._broadcast: Any = None

    def begin(self) -> None:
        self._broadcast = None
        if world_rank_size() > 1:
            _groups.require_cluster("NPUBroadcastGlobalVariablesHook")
            self._broadcast = broadcast_global_variables(self.root_rank or 0, self.index)

    def after_create_session(self, session: Any, coord: Any) -> None:
        """Run the broadcast (nothing with one rank: it already holds the values)."""
        if self._broadcast is not None:
            session.run(self._broadcast)


class NPUCheckpointSaverHook(_SaverHook):  # type: ignore[misc]
    """TF's ``CheckpointSaverHook`` that also logs the global step after every run."""

    def __init__(
        self,
        checkpoint_dir: str,
        save_secs: int | None = None,
        save_steps: int | None = None,
        saver: Any = None,
        checkpoint_basename: str = "model.ckpt",
        scaffold: Any = None,
        listeners: Sequence[Any] | None = None,
    ) -> None:
        super().__init__(
            checkpoint_dir,
            save_secs=save_secs,
            save_steps=save_steps,
            saver=saver,
            checkpoint_basename=checkpoint_basename,
            scaffold=scaffold,
            listeners=listeners,
        )

    def after_run(self, run_context: Any, run_values: Any) -> None:
        super().after_run(run_context, run_values)
        tf.compat.v1.logging.info("global_step..%s", run_values.results)


class NPUOutputTensorHook(_Hook):  # type: ignore[misc]
    """Collect ``tensors`` every step; pass them to ``output_fn`` every N steps and at the end.

    Args:
        tensors: a dict ``{tag: tensor or tensor name}`` or a list of tensors / names (then
            each tag is the tensor's name).
        dependencies: ops that must run before the tensors are read.
        output_fn: called with the list of ``{tag: value}`` dicts collected since the last
            call; ``None`` logs them instead.
        output_every_n_steps: 0 = only at the end of the session.
    """

    def __init__(
        self,
        tensors: Mapping[str, Any] | Sequence[Any],
        dependencies: Sequence[Any] | None = None,
        output_fn: Callable[[list[dict[str, Any]]], Any] | None = None,
        output_every_n_steps: int = 0,
    ) -> None:
        super().__init__()
        util.check_nonnegative_integer(output_every_n_steps, "output_every_n_steps")
        if output_fn is not None and not callable(output_fn):
            raise TypeError(f"NPUOutputTensorHook: output_fn={output_fn!r} must be callable")
        self._tensors = tensors
        self._dependencies = list(dependencies or [])
        self._output_fn = output_fn
        self._every = output_every_n_steps
        self._fetches: dict[str, Any] = {}
        self._collected: list[dict[str, Any]] = []
        self._steps = 0

    def begin(self) -> None:
        graph = tf.compat.v1.get_default_graph()
        items = (
            dict(self._tensors)
            if isinstance(self._tensors, Mapping)
            else {getattr(t, "name", t): t for t in self._tensors}
        )
        with tf.control_dependencies(self._dependencies):
            self._fetches = {
                tag: tf.identity(graph.as_graph_element(t) if isinstance(t, str) else t)
                for tag, t in items.items()
            }
        self._collected = []
        self._steps = 0

    def before_run(self, run_context: Any) -> Any:
        return tf.compat.v1.train.SessionRunArgs(self._fetches)

    def after_run(self, run_context: Any, run_values: Any) -> None:
        self._collected.append(dict(run_values.results))
        self._steps += 1
        if self._every and self._steps % self._every == 0:
            self._flush()

    def end(self, session: Any) -> None:
        if self._collected:
            self._flush()

    def _flush(self) -> None:
        collected, self._collected = self._collected, []
        if self._output_fn is None:
            tf.compat.v1.logging.info("NPUOutputTensorHook: %s", collected)
        else:
            self._output_fn(collected)


class SetIterationsVarHook(_Hook):  # type: ignore[misc]
    """Create the loop variables of :mod:`~npu_bridge.estimator.npu.util` and load them with
    ``iterations_per_loop - 1, 0, 0, 1`` once the session exists (iteration offload)."""

    def __init__(self, iterations_per_loop: int | None = None) -> None:
        super().__init__()
        util.check_positive_integer(iterations_per_loop, "iterations_per_loop")
        self._iterations_per_loop = iterations_per_loop
        self._variables: list[Any] = []

    def begin(self) -> None:
        self._variables = [util.create_or_get_var(name) for name in util._LOOP_VARS]

    def after_create_session(self, session: Any, coord: Any) -> None:
        assert self._iterations_per_loop is not None  # checked in __init__
        util._load(session, self._variables, self._iterations_per_loop)


class NPUShutDownHook(_Hook):  # type: ignore[misc]
    """Run ``npu_ops.shutdown_system()`` when the session ends (releases the device)."""

    def __init__(self, scaffold: Any = None) -> None:
        super().__init__()
        self._scaffold = scaffold
        self._shutdown_op: Any = None

    def begin(self) -> None:
        from npu_bridge.estimator import npu_ops

        self._shutdown_op = npu_ops.shutdown_system()

    def end(self, session: Any) -> None:
        session.run(self._shutdown_op)


class TellMeStepOrLossHook(_Hook):  # type: ignore[misc]
    """Publish training progress in ``STEP_NOW``/``TOTAL_STEP``/``LOSS_NOW``/``TARGET_LOSS``.

    The adapter's ``experimental_accelerate_train_mode`` reads these variables to decide when to
    leave low precision; here they are set exactly the same way (that option has no effect on
    the CPU, but scripts and tools may read the variables).

    Args:
        step: the global-step tensor (read every run into ``STEP_NOW``).
        total_step: the planned number of steps (``TOTAL_STEP``).
        loss: the loss tensor (read every run into ``LOSS_NOW``).
        final_loss: the target loss (``TARGET_LOSS``).
    """

    def __init__(
        self,
        step: Any = None,
        total_step: int | None = None,
        loss: Any = None,
        final_loss: float | None = None,
    ) -> None:
        super().__init__()
        self._step = step
        self._total_step = total_step
        self._loss = loss
        self._final_loss = final_loss

    def begin(self) -> None:
        if self._total_step is not None:
            os.environ["TOTAL_STEP"] = str(self._total_step)
        if self._final_loss is not None:
            os.environ["TARGET_LOSS"] = str(self._final_loss)

    def before_run(self, run_context: Any) -> Any:
        fetches = {"step": self._step, "loss": self._loss}
        return tf.compat.v1.train.SessionRunArgs(
            {k: v for k, v in fetches.items() if v is not None}
        )

    def after_run(self, run_context: Any, run_values: Any) -> None:
        results = run_values.results
        if "step" in results:
            os.environ["STEP_NOW"] = str(results["step"])
        if "loss" in results:
            os.environ["LOSS_NOW"] = str(results["loss"])

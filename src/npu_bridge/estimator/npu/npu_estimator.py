"""``NPUEstimator`` and ``NPUEstimatorSpec``: TF's v1 Estimator with the adapter's NPU wiring.

What the real ``NPUEstimator`` adds to ``tf.compat.v1.estimator.Estimator``, reproduced here:

* the run config must be an ``NPURunConfig``; its options go into the session config as an
  ``NpuOptimizer`` custom optimizer (the channel every NPU setting travels in), together with
  the grappler optimizer list the adapter appends;
* job information comes from a job-start JSON file or the environment (``JOB_ID``, ...);
* the ``model_fn`` is wrapped to prepend the NPU training hooks: variable broadcast when
  ``RANK_SIZE`` > 1, an ``NPUCheckpointSaverHook``, the ``host_call`` of an
  ``NPUEstimatorSpec``, and for ``iterations_per_loop`` > 1 ``SetIterationsVarHook`` plus a
  ``train_op`` regrouped as ``IterationOp`` (the name tf2npu's runtime looks for to run a step
  ``N`` times per ``sess.run``).

Differences from the real adapter, because there is no job scheduler or device here:
``JOB_ID`` missing is a one-time warning (the real one raises ``ValueError('Load job info
failed...')``) and the job id defaults to :data:`DEFAULT_JOB_ID`; the ``host_call`` runs on the
host directly instead of through a device outfeed channel (and no log-outfeed hook is added:
print ops already print on the host); checkpoints use TF's default saver.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import os
import random
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import tensorflow as tf
from tensorflow_estimator.python.estimator import (  # type: ignore[import-untyped]
    estimator as _estimator_lib,
)

from npu_bridge.estimator.npu.npu_config import NPURunConfig
from tf2npu.config import cluster as _cluster
from tf2npu.config.proto import npu_parameter_values, write_parameter_map
from tf2npu.config.sources import NPU_OPTIMIZER as _NPU_OPTIMIZER
from tf2npu.config.sources import from_run_config as _from_run_config
from tf2npu.runtime.context import run_stats as _run_stats
from tf2npu.runtime.loop import LOOP_OP as _LOOP_OP

__all__ = ["DEFAULT_JOB_ID", "NPUEstimator", "NPUEstimatorSpec"]

_log = logging.getLogger(__name__)

DEFAULT_JOB_ID = "10087"
"""Job id used when ``JOB_ID`` is unset (the value Ascend's sample launch scripts export)."""

GRAPPLER_OPTIMIZERS = (
    "pruning",
    "function",
    "constfold",
    "shape",
    "arithmetic",
    "loop",
    "dependency",
    "layout",
    "GradFusionOptimizer",
)
"""Appended to ``rewrite_options.optimizers`` (latest adapter; the anchor also had ``memory``).
``GradFusionOptimizer`` is the adapter's grappler pass; TF 2.15 skips a name it does not know
and still creates the session (tested)."""

_ModeKeys = tf.estimator.ModeKeys


# -- NPUEstimatorSpec --------------------------------------------------------------------------


def _check_host_call(host_call: object) -> None:
    """The adapter's ``host_call`` checks, same exception types, messages naming the fix."""
    where = "NPUEstimatorSpec(host_call=...)"
    if not isinstance(host_call, (tuple, list)):
        raise ValueError(
            f"{where}: got {type(host_call).__name__}; give a tuple (fn, tensors), "
            "e.g. host_call=(host_fn, [global_step, loss])"
        )
    if len(host_call) != 2:
        raise ValueError(f"{where}: has {len(host_call)} elements; give exactly two, (fn, tensors)")
    fn, tensors = host_call
    if not callable(fn):
        raise TypeError(f"{where}: host_call[0] = {fn!r} is not callable; give the host function")
    if not isinstance(tensors, (tuple, list, dict)):
        raise ValueError(
            f"{where}: host_call[1] is a {type(tensors).__name__}; give a list of tensors "
            "(passed positionally) or a dict (passed by keyword)"
        )
    params = inspect.signature(fn).parameters.values()
    kinds = {p.kind for p in params}
    if isinstance(tensors, dict):
        if inspect.Parameter.VAR_KEYWORD in kinds:
            return
        named = [p for p in params if p.kind is not inspect.Parameter.VAR_POSITIONAL]
        unexpected = sorted(set(tensors) - {p.name for p in named})
        missing = sorted(p.name for p in named if p.default is p.empty and p.name not in tensors)
        if unexpected or missing:
            raise TypeError(
                f"{where}: the tensor dict keys {sorted(tensors)} do not match the arguments "
                f"of {getattr(fn, '__name__', fn)!r} (unexpected {unexpected}, missing "
                f"{missing}); name each tensor after an argument"
            )
        return
    if inspect.Parameter.VAR_POSITIONAL in kinds:
        return
    positional = [
        p
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is p.empty]
    if not len(required) <= len(tensors) <= len(positional):
        raise RuntimeError(
            f"{where}: {len(tensors)} tensors were given but "
            f"{getattr(fn, '__name__', fn)!r} takes {len(positional)} arguments; "
            "give one tensor per argument"
        )


class NPUEstimatorSpec(tf.compat.v1.estimator.EstimatorSpec):  # type: ignore[misc]
    """An ``EstimatorSpec`` with a ``host_call``: ``(fn, tensors)`` run on the host every step.

    ``tensors`` is a list (``fn(*tensors)``) or a dict (``fn(**tensors)``); ``fn`` typically
    writes ``tf.compat.v2.summary`` values and returns ``all_v2_summary_ops()``. Only used in
    ``TRAIN`` and ``EVAL`` mode.

    Raises:
        ValueError / TypeError / RuntimeError: a malformed ``host_call`` (as the adapter).
    """

    def __new__(
        cls,
        mode: str,
        predictions: Any = None,
        loss: Any = None,
        train_op: Any = None,
        eval_metric_ops: Any = None,
        export_outputs: Any = None,
        training_chief_hooks: Any = None,
        training_hooks: Any = None,
        scaffold: Any = None,
        evaluation_hooks: Any = None,
        prediction_hooks: Any = None,
        host_call: Any = None,
    ) -> NPUEstimatorSpec:
        if host_call is not None:
            _check_host_call(host_call)
        spec = super().__new__(
            cls,
            mode=mode,
            predictions=predictions,
            loss=loss,
            train_op=train_op,
            eval_metric_ops=eval_metric_ops,
            export_outputs=export_outputs,
            training_chief_hooks=training_chief_hooks,
            training_hooks=training_hooks,
            scaffold=scaffold,
            evaluation_hooks=evaluation_hooks,
            prediction_hooks=prediction_hooks,
        )
        spec._host_call = host_call
        return spec  # type: ignore[no-any-return]

    def to_estimator_spec(self) -> Any:
        """The same fields as a plain ``tf.estimator.EstimatorSpec`` (``host_call`` dropped)."""
        return tf.compat.v1.estimator.EstimatorSpec(**self._asdict())


# -- host_call on the host ---------------------------------------------------------------------

_WRITER_OP_TYPES = frozenset({"CreateSummaryFileWriter", "CreateSummaryDbWriter"})


def _call_host_fn(host_call: Sequence[Any]) -> tuple[Any, list[Any]]:
    """Call ``fn`` on the tensors in the current graph; return its result and the summary
    writer-creation ops it made (to run once per session, as ``tf.compat.v1.summary`` needs)."""
    fn, tensors = host_call
    graph = tf.compat.v1.get_default_graph()
    before = len(graph.get_operations())
    result = fn(**tensors) if isinstance(tensors, dict) else fn(*tensors)
    writers = [op for op in graph.get_operations()[before:] if op.type in _WRITER_OP_TYPES]
    return result, writers


class _HostCallHook(tf.compat.v1.train.SessionRunHook):  # type: ignore[misc]
    """Runs the ``host_call`` result with every step; creates its summary writers after the
    session starts and flushes them at the end (the device adapter dequeues an outfeed here)."""

    def __init__(self, fetches: Any, writer_ops: Sequence[Any]) -> None:
        self._fetches = fetches
        self._writer_ops = list(writer_ops)
        self._flush_ops: list[Any] = []

    def begin(self) -> None:
        self._flush_ops = [
            tf.raw_ops.FlushSummaryWriter(writer=op.inputs[0]) for op in self._writer_ops
        ]

    def after_create_session(self, session: Any, coord: Any) -> None:
        if self._writer_ops:
            session.run(self._writer_ops)

    def before_run(self, run_context: Any) -> Any:
        return tf.compat.v1.train.SessionRunArgs(self._fetches)

    def end(self, session: Any) -> None:
        if self._flush_ops:
            session.run(self._flush_ops)


def _host_call_hooks(spec: NPUEstimatorSpec, after: Any) -> list[Any]:
    """The hook running an ``NPUEstimatorSpec``'s host call, whose ops run after ``after`` (as
    the adapter's outfeed enqueue does); none without a host call.

    The adapter also adds ``NPULogOutfeedSessionHook(sys.stderr)``, which prints what print
    ops on the device sent through the log outfeed channel. Here print ops run on the host and
    write to stderr themselves, so there is nothing to dequeue and no such hook is added.
    """
    if spec._host_call is None:
        return []
    with tf.control_dependencies([after]):
        result, writers = _call_host_fn(spec._host_call)
    return [_HostCallHook(result, writers)]


# -- job info ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class JobInfo:
    """What the adapter's ``NPUBasics`` reads from the job-start file or the environment."""

    job_id: str
    index: str
    """Rank of this process (``device_info.Index``, ``POD_NAME`` or ``RANK_ID``)."""
    rank_size: int
    rank_table_file: str
    local_checkpoint_dir: str
    heartbeat: str = ""
    job_id_defaulted: bool = False
    """``JOB_ID`` was unset and :data:`DEFAULT_JOB_ID` was used."""
    root_rank: int = 0


_warned_job_id = False


def load_job_info(job_start_file: str, env: Mapping[str, str]) -> JobInfo:
    """Job info from ``job_start_file`` (JSON), or from ``env`` when the file cannot be opened."""
    try:
        with open(job_start_file, encoding="utf-8") as handle:
            text = handle.read()
    except OSError:
        return _job_info_from_env(env)
    return _job_info_from_file(job_start_file, text)


def _job_info_from_file(path: str, text: str) -> JobInfo:
    where = f"NPUEstimator(job_start_file={path!r})"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not valid JSON ({exc})") from None
    device_info = data.get("device_info") if isinstance(data, dict) else None
    if not isinstance(device_info, dict):
        raise ValueError(f"{where}: needs a 'device_info' object with an 'Index'")
    index = device_info.get("Index")
    if not isinstance(index, int) or isinstance(index, bool) or index < 0:
        raise ValueError(f"{where}: device_info.Index = {index!r}; give an integer >= 0")
    if data.get("rank_table_file") is None:
        raise ValueError(f"{where}: needs 'rank_table_file' (the HCCL rank table path)")
    rank_size = data.get("rank_size")
    if not isinstance(rank_size, int) or isinstance(rank_size, bool) or rank_size < 1:
        raise ValueError(f"{where}: rank_size = {rank_size!r}; give an integer >= 1")
    return JobInfo(
        job_id="",
        index=str(index),
        rank_size=rank_size,
        rank_table_file=str(data["rank_table_file"]),
        local_checkpoint_dir=str(data.get("local_checkpoint_dir") or ""),
    )


def _job_info_from_env(env: Mapping[str, str]) -> JobInfo:
    global _warned_job_id
    job_id = env.get("JOB_ID", "")
    defaulted = job_id == ""
    if defaulted:
        if not _warned_job_id:
            _log.warning(
                "JOB_ID is not set; the real adapter requires it (ValueError 'Load job info "
                "failed'); using JOB_ID=%s here since there is no job scheduler",
                DEFAULT_JOB_ID,
            )
            _warned_job_id = True
        job_id = DEFAULT_JOB_ID
    return JobInfo(
        job_id=job_id,
        index=env.get("POD_NAME") or env.get("RANK_ID", ""),
        rank_size=_cluster.Cluster.from_env(env).size,
        rank_table_file=env.get("RANK_TABLE_FILE", ""),
        local_checkpoint_dir=env.get("LOCAL_CHECKPOINT_DIR", ""),
        heartbeat=env.get("HEARTBEAT", ""),
        job_id_defaulted=defaulted,
    )


# -- NPUEstimator ------------------------------------------------------------------------------


def _session_config_with_npu(config: NPURunConfig) -> NPURunConfig:
    """``config`` with the grappler list and an ``NpuOptimizer`` entry holding its options.

    An existing session config is changed in place (so two estimators built from one config
    add two entries, as in the adapter); without one, a copy of ``config`` gets a new one.
    """
    if config.session_config is None:
        config = config.replace(session_config=tf.compat.v1.ConfigProto())
    rewrite = config.session_config.graph_options.rewrite_options
    rewrite.optimizers.extend(GRAPPLER_OPTIMIZERS)
    custom = rewrite.custom_optimizers.add()
    custom.name = _NPU_OPTIMIZER
    values = npu_parameter_values(config._npu_arguments, os.environ)
    write_parameter_map(custom, values)
    # The map holds every option, as the adapter's: the run summary lists only the user's.
    given = _from_run_config(config.npu_arguments)
    if "enable_data_pre_proc" not in config.npu_arguments:
        given.pop("enable_data_pre_proc", None)  # NPURunConfig's own default
    _run_stats().note_written_defaults({k: v for k, v in values.items() if k not in given})
    return config


def _model_dir(model_dir: str | None, config: NPURunConfig) -> str:
    """The one model directory: both given must agree; neither creates ``./model_dir_<10>``."""
    if model_dir is not None and config.model_dir is not None and model_dir != config.model_dir:
        raise ValueError(
            f"NPUEstimator(model_dir={model_dir!r}) differs from NPURunConfig(model_dir="
            f"{config.model_dir!r}); set it in one place or give the same value"
        )
    chosen = model_dir or config.model_dir
    if chosen is not None:
        return str(chosen)
    alphabet = string.ascii_letters + string.digits
    while True:
        name = "model_dir_" + "".join(random.sample(alphabet, 10))
        chosen = os.path.join(os.getcwd(), name)
        if not tf.io.gfile.exists(chosen):
            break
    _log.warning("NPUEstimator: no model_dir given; using the new directory %s", chosen)
    tf.io.gfile.makedirs(chosen)
    return chosen


class NPUEstimator(tf.compat.v1.estimator.Estimator):  # type: ignore[misc]
    """``tf.compat.v1.estimator.Estimator`` that runs with the NPU session options.

    Args:
        model_fn: as for ``Estimator``; may return an :class:`NPUEstimatorSpec`.
        model_dir: checkpoint directory; must agree with ``config.model_dir`` when both are
            set; neither set creates ``./model_dir_<10 random letters/digits>``.
        config: an ``NPURunConfig`` (required).
        params: hyper-parameters passed to ``model_fn``.
        job_start_file: JSON job description; when it cannot be opened, job info comes from
            ``JOB_ID``, ``RANK_SIZE``, ``RANK_ID``/``POD_NAME``, ``RANK_TABLE_FILE``,
            ``LOCAL_CHECKPOINT_DIR``.
        warm_start_from: as for ``Estimator``; defaults to the job's local checkpoint dir,
            else ``$RESTORE_FROM``.

    Raises:
        ValueError: ``config`` is not an ``NPURunConfig``, or the model directories disagree.
    """

    def __init__(
        self,
        model_fn: Callable[..., Any] | None = None,
        model_dir: str | None = None,
        config: Any = None,
        params: dict[str, Any] | None = None,
        job_start_file: str = "",
        warm_start_from: Any = None,
    ) -> None:
        if not isinstance(config, NPURunConfig):
            raise ValueError(
                f"NPUEstimator(config={config!r}): config must be an NPURunConfig; build it "
                "with NPURunConfig(...), or keep tf.estimator.Estimator and pass "
                "npu_run_config_init(run_config)"
            )
        if model_fn is None:
            raise ValueError("NPUEstimator(model_fn=None): give the model function")
        _estimator_lib._verify_model_fn_args(model_fn, params)
        config = _session_config_with_npu(config)
        self._job_info = load_job_info(job_start_file, os.environ)
        model_dir = _model_dir(model_dir, config)
        if not warm_start_from:
            warm_start_from = (
                self._job_info.local_checkpoint_dir or os.environ.get("RESTORE_FROM") or None
            )
        super().__init__(
            model_fn=self._augment_model_fn(model_fn, model_dir),
            model_dir=model_dir,
            config=config,
            params=params or {},
            warm_start_from=warm_start_from,
        )

    def _assert_members_are_not_overridden(self) -> None:
        """Disabled, as in the adapter (which patches it out around ``Estimator.__init__``)."""

    @property
    def job_info(self) -> JobInfo:
        """The job information read at construction."""
        return self._job_info

    def _augment_model_fn(self, model_fn: Callable[..., Any], model_dir: str) -> Any:
        job_info = self._job_info

        def _model_fn(features: Any, labels: Any, mode: str, params: Any, config: Any) -> Any:
            wanted = inspect.signature(model_fn).parameters
            given = {"labels": labels, "mode": mode, "params": params, "config": config}
            kwargs = {name: value for name, value in given.items() if name in wanted}
            spec = model_fn(features=features, **kwargs)
            if mode == _ModeKeys.TRAIN:
                return _train_spec(spec, config, model_dir, job_info)
            if mode == _ModeKeys.EVAL:
                return _eval_spec(spec)
            return spec

        return _model_fn


def _require_spec(spec: object, what: str) -> None:
    if not isinstance(spec, tf.compat.v1.estimator.EstimatorSpec):
        raise RuntimeError(
            f"NPUEstimator {what}: model_fn returned a {type(spec).__name__}; return an "
            "NPUEstimatorSpec or a tf.estimator.EstimatorSpec"
        )


def _train_spec(spec: Any, config: Any, model_dir: str, job_info: JobInfo) -> Any:
    """Prepend the adapter's training hooks, in its order."""
    _require_spec(spec, "training")
    from npu_bridge.estimator.npu import npu_hook

    hooks: list[Any] = []
    if _cluster.current().distributed and not config.horovod_mode:
        index = int(job_info.index) if job_info.index.isdigit() else None
        hooks.append(npu_hook.NPUBroadcastGlobalVariablesHook(job_info.root_rank, index))
    if config.save_checkpoints_steps or config.save_checkpoints_secs:
        # A CheckpointSaverHook subclass: TF's Estimator then adds no saver hook of its own.
        # No scaffold: with a train_distribute strategy TF finalizes a merged scaffold, not
        # this one; without a saver the hook takes the one the finalized scaffold registers.
        hooks.append(
            npu_hook.NPUCheckpointSaverHook(
                checkpoint_dir=model_dir,
                save_secs=config.save_checkpoints_secs,
                save_steps=config.save_checkpoints_steps,
                saver=spec.scaffold.saver,
            )
        )
    if isinstance(spec, NPUEstimatorSpec):
        hooks.extend(_host_call_hooks(spec, spec.train_op))
    train_op = spec.train_op
    if config.iterations_per_loop > 1:
        hooks.append(npu_hook.SetIterationsVarHook(config.iterations_per_loop))
        train_op = tf.group(train_op, name=_LOOP_OP)
    plain = spec.to_estimator_spec() if isinstance(spec, NPUEstimatorSpec) else spec
    return plain._replace(train_op=train_op, training_hooks=(*hooks, *(spec.training_hooks or ())))


def _eval_spec(spec: Any) -> Any:
    _require_spec(spec, "evaluation")
    if not isinstance(spec, NPUEstimatorSpec):
        return spec
    hooks = _host_call_hooks(spec, spec.loss)
    return spec.to_estimator_spec()._replace(
        evaluation_hooks=(*hooks, *(spec.evaluation_hooks or ()))
    )

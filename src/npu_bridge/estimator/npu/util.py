"""``npu_bridge.estimator.npu.util``: iteration offload, graph-exec attrs and small helpers.

Iteration offload ("loop sinking") is the one behaviour here with a runtime contract: the graph
gets four int64 resource variables in scope ``npu_runconfig`` (loaded with ``N-1, 0, 0, 1``) and
a ``tf.group`` named exactly ``IterationOp``. tf2npu's runtime runs a ``sess.run`` whose targets
include a node whose name ends in ``IterationOp`` ``N`` times, ``N`` being the session's
``iterations_per_loop`` option, as the adapter's GeOp does on the device.

Validators keep the adapter's exception types (``TypeError`` for a wrong type, ``ValueError`` for
a wrong value) with messages that name the value and the fix.

Example:
    >>> import tensorflow as tf
    >>> with tf.Graph().as_default():
    ...     step = tf.compat.v1.train.get_or_create_global_step()
    ...     train_op = tf.compat.v1.assign_add(step, 1).op
    ...     with tf.compat.v1.Session() as sess:
    ...         sess.run(tf.compat.v1.global_variables_initializer())
    ...         op = set_iteration_per_loop(sess, train_op, 10)
    >>> op.name
    'IterationOp'
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from tf2npu.runtime.loop import LOOP_OP as _LOOP_OP

__all__ = [
    "IterationPerLoop",
    "check_aoe_mode",
    "check_bool_type",
    "check_mstune_mode",
    "check_nonnegative_integer",
    "check_not_none",
    "check_path",
    "check_positive_integer",
    "check_profiling_options",
    "convert_bool_to_int",
    "create_or_get_var",
    "format_string",
    "get_ranksize",
    "get_value",
    "global_dict_init",
    "keep_tensors_dtypes",
    "npu_compile",
    "register_func",
    "set_graph_exec_config",
    "set_iteration_per_loop",
    "set_op_input_tensor_multi_dims",
    "set_op_tensor_max_range",
    "set_value",
    "variable_initializer_in_host",
]

_NPU_RUNCONFIG = "npu_runconfig"
_ITERATIONS_PER_LOOP_VAR = "iterations_per_loop"
_LOOP_COND_VAR = "loop_cond"
_CONST_ZERO = "zero"
_CONST_ONE = "one"
_LOOP_VARS = (_ITERATIONS_PER_LOOP_VAR, _LOOP_COND_VAR, _CONST_ZERO, _CONST_ONE)

#: The group op the runtime looks for (last path component of the node name).
ITERATION_OP_NAME = _LOOP_OP

_EXECUTE_MODES = ("lazy_recompile", "dynamic_execute")
_PROFILING_TYPES = ("training_trace", "task_trace", "op_trace")


# -- validators --------------------------------------------------------------------------------


def check_not_none(value: object, name: str) -> None:
    """``ValueError`` when ``value`` is None."""
    if value is None:
        raise ValueError(f"{name} must not be None; give a value for {name}")


def check_positive_integer(value: object, name: str) -> None:
    """``TypeError`` unless ``value`` is an ``int`` (bools excluded), ``ValueError`` unless > 0."""
    _check_int(value, name, 1)


def check_nonnegative_integer(value: object, name: str) -> None:
    """``TypeError`` unless ``value`` is an ``int`` (bools excluded), ``ValueError`` unless >= 0."""
    _check_int(value, name, 0)


def _check_int(value: object, name: str, low: int) -> None:
    # A bool is an int in Python but never what a caller means by a count.
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(
            f"{name}={value!r} ({type(value).__name__}) must be an int; give a whole number "
            f">= {low}, e.g. {name}={max(low, 1)}"
        )
    if value < low:
        kind = "positive" if low == 1 else "non-negative"
        raise ValueError(f"{name}={value!r} must be {kind}; give a whole number >= {low}")


def check_bool_type(value: object, name: str) -> None:
    """``TypeError`` unless ``value`` is ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise TypeError(f"{name}={value!r} must be True or False")


def convert_bool_to_int(value: object) -> int:
    """``True`` → 1, ``False`` → 0, anything else → -1 (the adapter's "unset")."""
    if value is True:
        return 1
    if value is False:
        return 0
    return -1


def format_string(value: object, name: str) -> str:
    """``None`` → ``""``; a ``str`` unchanged; anything else is a ``TypeError``."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{name}={value!r} ({type(value).__name__}) must be a string")
    return value


def check_profiling_options(profiling_options: Sequence[str] | None = None) -> str:
    """The anchor's list form: a non-empty subset of the trace kinds, joined with ``:``."""
    if not profiling_options or any(o not in _PROFILING_TYPES for o in profiling_options):
        raise ValueError(
            f"profiling_options={profiling_options!r}: give a non-empty list of "
            f"{', '.join(_PROFILING_TYPES)}"
        )
    return ":".join(profiling_options)


def check_path(path: str) -> str:
    """The real path of an existing, readable and writable directory, else ``ValueError``."""
    if not os.path.exists(path):
        raise ValueError(f"path {path!r} does not exist; create the directory first")
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        raise ValueError(f"path {path!r} is not a directory; give a directory")
    if not os.access(real, os.R_OK | os.W_OK):
        raise ValueError(f"path {path!r} is not readable and writable; fix its permissions")
    return real


def check_mstune_mode(mstune_mode: object) -> None:
    """Anchor tuning mode: one of ``'1'``..``'4'`` (a string)."""
    _check_tune_mode("mstune_mode", mstune_mode)


def check_aoe_mode(aoe_mode: object) -> None:
    """Latest tuning mode: one of ``'1'``..``'4'`` (a string)."""
    _check_tune_mode("aoe_mode", aoe_mode)


def _check_tune_mode(name: str, value: object) -> None:
    if value not in ("1", "2", "3", "4"):
        raise ValueError(f"{name}={value!r} is not a tuning mode; use '1', '2', '3' or '4'")


# -- rank size and the global dict ---------------------------------------------------------------


def get_ranksize() -> str:
    """``RANK_SIZE``, else ``CM_WORKER_SIZE``, else ``'1'`` — a string, as in the adapter.

    Raises:
        ValueError: both variables are set (the adapter cannot tell which one describes the job).
    """
    rank_size = os.getenv("RANK_SIZE")
    worker_size = os.getenv("CM_WORKER_SIZE")
    if rank_size is not None and worker_size is not None:
        raise ValueError(
            f"RANK_SIZE={rank_size!r} and CM_WORKER_SIZE={worker_size!r} are both set; "
            "unset one of them"
        )
    return rank_size or worker_size or "1"


_global_dict: dict[str, Any] = {}


def global_dict_init() -> None:
    """Empty the process-wide dict (``init_resource`` caches the rank ids here)."""
    _global_dict.clear()


def set_value(key: str, value: Any) -> None:
    """Store ``value`` under ``key`` in the process-wide dict."""
    _global_dict[key] = value


def get_value(key: str, def_value: Any = None) -> Any:
    """The value stored under ``key``, else ``def_value``."""
    return _global_dict.get(key, def_value)


# -- iteration offload -------------------------------------------------------------------------


def register_func(var_name: str) -> None:
    """Register proto (de)serialisers for collection ``npu_runconfig_<var_name>``.

    Exported meta-graphs then keep the loop variables (as for TF's own variable collections).
    """
    from tensorflow.core.framework import variable_pb2
    from tensorflow.python.framework import ops
    from tensorflow.python.ops import resource_variable_ops

    ops.register_proto_function(
        f"{_NPU_RUNCONFIG}_{var_name}",
        proto_type=variable_pb2.VariableDef,
        to_proto=resource_variable_ops._to_proto_fn,
        from_proto=resource_variable_ops._from_proto_fn,
    )


def create_or_get_var(var_name: str) -> Any:
    """The int64 resource variable ``npu_runconfig/<var_name>`` of the default graph.

    It lives in collections ``npu_runconfig_<var_name>`` and ``LOCAL_VARIABLES``, is not
    trainable, and is colocated with the global step when there is one.

    Raises:
        RuntimeError: the collection holds more than one variable.
    """
    graph = tf.compat.v1.get_default_graph()
    collection = f"{_NPU_RUNCONFIG}_{var_name}"
    existing = graph.get_collection(collection)
    if len(existing) == 1:
        return existing[0]
    if len(existing) > 1:
        raise RuntimeError(
            f"collection {collection!r} holds {len(existing)} variables; it must hold one"
        )
    global_step = tf.compat.v1.train.get_global_step()
    with (
        graph.colocate_with(global_step, ignore_existing=global_step is None),
        tf.compat.v1.variable_scope(_NPU_RUNCONFIG, reuse=tf.compat.v1.AUTO_REUSE),
    ):
        return tf.compat.v1.get_variable(
            var_name,
            shape=[],
            dtype=tf.int64,
            initializer=tf.compat.v1.zeros_initializer(),
            trainable=False,
            collections=[collection, tf.compat.v1.GraphKeys.LOCAL_VARIABLES],
            use_resource=True,
        )


def _check_train_op(train_op: object, where: str) -> None:
    if not isinstance(train_op, tf.Operation):
        hint = " (use tensor.op)" if isinstance(train_op, tf.Tensor) else ""
        raise ValueError(
            f"{where}: train_op={train_op!r} is a {type(train_op).__name__}, not an Operation; "
            f"pass the op that applies the gradients, e.g. optimizer.minimize(loss){hint}"
        )


class IterationPerLoop:
    """Iteration offload in two steps: build the graph first, load the values later.

    For graphs that cannot change after the session exists (``tf.train.Supervisor``, frozen
    graphs): :meth:`create_iteration_per_loop_var` before, :meth:`load_iteration_per_loop_var`
    after the session is created.
    """

    def __init__(self) -> None:
        self._vars: tuple[Any, ...] = ()

    def create_iteration_per_loop_var(self, train_op: Any) -> Any:
        """Create the four loop variables; return ``tf.group(train_op, name="IterationOp")``."""
        _check_train_op(train_op, "create_iteration_per_loop_var")
        self._vars = tuple(create_or_get_var(name) for name in _LOOP_VARS)
        return tf.group(train_op, name=ITERATION_OP_NAME)

    def load_iteration_per_loop_var(self, sess: Any, iterations_per_loop: int = 1) -> None:
        """Load ``N-1, 0, 0, 1`` into the variables in ``sess``.

        Raises:
            RuntimeError: :meth:`create_iteration_per_loop_var` was not called first.
        """
        check_positive_integer(iterations_per_loop, "iterations_per_loop")
        if not self._vars:
            raise RuntimeError(
                "load_iteration_per_loop_var: call create_iteration_per_loop_var(train_op) "
                "first, before the session is created"
            )
        _load(sess, self._vars, iterations_per_loop)


def _load(sess: Any, variables: Sequence[Any], iterations_per_loop: int) -> None:
    values = (iterations_per_loop - 1, 0, 0, 1)
    for var, value in zip(variables, values, strict=True):
        var.load(value, session=sess)


def set_iteration_per_loop(sess: Any, train_op: Any, iterations_per_loop: int = 1) -> Any:
    """Make each ``sess.run`` of the returned op run ``iterations_per_loop`` training steps.

    Args:
        sess: the session the loop variables are loaded into.
        train_op: the ``tf.Operation`` that applies the gradients.
        iterations_per_loop: steps per ``sess.run``; the session's ``iterations_per_loop``
            option must be the same number (tf2npu's runtime reads the option).

    Returns:
        ``train_op`` itself when ``iterations_per_loop == 1``, else an op named
        ``IterationOp`` grouping ``train_op``.

    Raises:
        ValueError: ``train_op`` is not an Operation, or ``iterations_per_loop`` <= 0.
        TypeError: ``iterations_per_loop`` is not an ``int``.
    """
    _check_train_op(train_op, "set_iteration_per_loop")
    check_positive_integer(iterations_per_loop, "iterations_per_loop")
    if iterations_per_loop == 1:
        return train_op
    variables = [create_or_get_var(name) for name in _LOOP_VARS]
    _load(sess, variables, iterations_per_loop)
    return tf.group(train_op, name=ITERATION_OP_NAME)


def variable_initializer_in_host(var_list: Sequence[Any]) -> Any:
    """``tf.compat.v1.variables_initializer(var_list)`` named ``var_in_host``.

    The name tells the adapter's GeOp to initialise these variables on the host; here every
    initialiser runs on the host anyway.
    """
    return tf.compat.v1.variables_initializer(list(var_list), name="var_in_host")


def npu_compile(sess: Any, *fetches: Any) -> None:
    """Run ``fetches`` once so the graph is built before timing starts (the adapter's
    compile-ahead helper)."""
    sess.run(fetches)


# -- node attributes ---------------------------------------------------------------------------


def _op_of(item: Any) -> Any:
    return item if isinstance(item, tf.Operation) else item.op


def _set_attrs(op: Any, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        op._set_attr(key, value)


def set_graph_exec_config(
    fetch: Any,
    dynamic_input: bool = False,
    dynamic_graph_execute_mode: str = "dynamic_execute",
    dynamic_inputs_shape_range: str | None = None,
    is_train_graph: bool = False,
) -> Any:
    """Stamp per-graph dynamic-shape settings on ``fetch``'s op(s); returns ``fetch``.

    ``fetch`` is an op, a tensor, a list/tuple of them, or a tensor name (then the tensor is
    returned). Sets ``_graph_dynamic_input``, ``_graph_dynamic_graph_execute_mode``,
    ``_graph_dynamic_inputs_shape_range`` and ``_is_train_graph``; the partitioner reads them in
    place of the session values.

    Raises:
        ValueError: an unknown execute mode or a ``fetch`` of another kind.
    """
    if dynamic_graph_execute_mode not in _EXECUTE_MODES:
        raise ValueError(
            f"set_graph_exec_config: dynamic_graph_execute_mode={dynamic_graph_execute_mode!r}; "
            f"use one of: {', '.join(_EXECUTE_MODES)}"
        )
    attr = tf.compat.v1.AttrValue
    attrs = {
        "_graph_dynamic_input": attr(b=bool(dynamic_input)),
        "_graph_dynamic_graph_execute_mode": attr(s=dynamic_graph_execute_mode.encode()),
        "_graph_dynamic_inputs_shape_range": attr(s=(dynamic_inputs_shape_range or "").encode()),
        "_is_train_graph": attr(b=bool(is_train_graph)),
    }
    if isinstance(fetch, str):
        fetch = tf.compat.v1.get_default_graph().get_tensor_by_name(fetch)
    items = fetch if isinstance(fetch, (list, tuple)) else [fetch]
    for item in items:
        if not isinstance(item, (tf.Operation, tf.Tensor)):
            raise ValueError(
                f"set_graph_exec_config: fetch item {item!r} is a {type(item).__name__}; give "
                "an op, a tensor, a list or tuple of them, or a tensor name"
            )
        _set_attrs(_op_of(item), attrs)
    return fetch


def keep_tensors_dtypes(graph: Any, input_tensors: Sequence[str]) -> None:
    """Mark the producers of the named tensors ``_keep_dtype=1`` (keep their precision).

    Raises:
        ValueError: ``graph`` is not a ``tf.Graph`` or ``input_tensors`` not a list/tuple.
    """
    if not isinstance(graph, tf.Graph):
        raise ValueError(f"keep_tensors_dtypes: graph={graph!r} must be a tf.Graph")
    if not isinstance(input_tensors, (list, tuple)):
        raise ValueError(
            f"keep_tensors_dtypes: input_tensors={input_tensors!r} must be a list or tuple of "
            "tensor names, e.g. ['dense/MatMul:0']"
        )
    for name in input_tensors:
        graph.get_tensor_by_name(name).op._set_attr("_keep_dtype", tf.compat.v1.AttrValue(i=1))


def set_op_tensor_max_range(tensor: Any, max_shape: str) -> None:
    """Set ``_op_max_shape`` (the largest shape a dynamic tensor takes) on its op."""
    _op_of(tensor)._set_attr("_op_max_shape", tf.compat.v1.AttrValue(s=max_shape.encode()))


def set_op_input_tensor_multi_dims(tensor: Any, input_shape: str, input_dims: str) -> None:
    """Set the ``_subgraph_multi_dims_input_shape`` / ``..._dims`` gear attrs on the op."""
    attr = tf.compat.v1.AttrValue
    _set_attrs(
        _op_of(tensor),
        {
            "_subgraph_multi_dims_input_shape": attr(s=input_shape.encode()),
            "_subgraph_multi_dims_input_dims": attr(s=input_dims.encode()),
        },
    )

"""Collective failures: what TensorFlow says, turned into what happened and to whom.

A failed collective aborts TensorFlow's collective executor for the life of the process
("Restart your program to reset"), so :class:`CollectiveError` is not an ``OpError``: scripts
and ``MonitoredSession`` (which retries on ``UnavailableError``) cannot catch it as a run error
and carry on into a hang. The message names the rank, the HCCL op and node, and the likely
cause; the launcher quotes it (it looks for ``collective <Op> '<node>'``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tf2npu.client.hcom import hcom_type
from tf2npu.config.cluster import Cluster
from tf2npu.errors import Tf2NpuError
from tf2npu.graph.npu_ops.hcom import SHAPES_DIFFER

__all__ = ["CollectiveError", "collective_failure", "fatal_failure", "is_collective_failure"]

_NODE = re.compile(r"\{\{node ([^}]+)\}\}")


class CollectiveError(Tf2NpuError):
    """A collective op failed; this rank cannot run collectives any more."""

    exit_code = 1


_DEAD_PEER = "another rank died or cannot be reached"
_CAUSES = (
    (
        SHAPES_DIFFER,
        "the ranks gave tensors of different shapes ({shapes}, one row per rank); every rank "
        "must pass the same shape",
    ),
    ("is joining a group with size", "the ranks disagree on RANK_SIZE; start them all alike"),
    (
        "Shape mismatch in the collective instance",
        "the ranks gave tensors of different shapes; every rank must pass the same shape",
    ),
    (
        "expected type",
        "the ranks gave tensors of different dtypes; every rank must pass the same dtype",
    ),
    ("Socket closed", _DEAD_PEER),
    ("Connection reset", _DEAD_PEER),
    ("failed to connect", _DEAD_PEER),
    ("timed out", "another rank did not reach it within {timeout:g} s ({variable})"),
    ("Collective ops is aborted", "an earlier collective of this rank failed"),
)
#: The gathered shapes in a failed shape agreement: ``[x (CollectiveGatherV2:0) = ] [[3 2][4 2]]``.
_GATHERED = re.compile(r"\(CollectiveGatherV2[^)]*\) = \] (\[[\[\]\d ]*\])")
#: ``[[outer/HcomAllReduce_1]]``: the call node a function-body error happened in.
_CALLER = re.compile(r"\[\[([^\[\]{}]+)\]\]")
_HCOM_NAME = re.compile(r"(?:^|/)(Hcom[A-Za-z]+)(?:_\d+)?$")


#: What TensorFlow says when a run outlives the session's ``operation_timeout_in_ms``, which
#: bounds a rank's wait for the others (``world.distributed_config``).
_RUN_TIMED_OUT = "Operation timed out"


def is_collective_failure(err: Any) -> bool:
    """Whether the ``OpError`` ``err`` comes from a collective op, or is a rank's run that
    outlived its timeout (waiting for another rank)."""
    text = str(getattr(err, "message", err))
    op = getattr(err, "op", None)
    return (
        "Collective" in text
        or _RUN_TIMED_OUT in text
        or (op is not None and hcom_type(op) is not None)
    )


def collective_failure(
    err: Any,
    op_type: str | None,
    node: str | None,
    cluster: Cluster,
    in_run: Sequence[tuple[str, str]] = (),
) -> CollectiveError:
    """The :class:`CollectiveError` for ``err`` (an ``OpError``) at HCCL op ``node``;
    ``in_run``: ``(op type, node)`` of the collectives the failed run contained, which name
    where a run that timed out was waiting."""
    text = str(getattr(err, "message", err))
    if _RUN_TIMED_OUT in text and "Collective" not in text:
        return _run_timed_out(cluster, in_run)
    if node is None or op_type is None:
        op_type, node = _failed_node(err, text)
    cause = _cause(text, node, cluster)
    return CollectiveError(
        f"rank {cluster.rank}: collective {op_type} '{node}' failed: {cause} "
        f"({type(err).__name__}: {_first_line(text)})"
    )


def _run_timed_out(cluster: Cluster, in_run: Sequence[tuple[str, str]]) -> CollectiveError:
    where = ""
    if in_run:
        kind, node = in_run[0]
        more = f" (and {len(in_run) - 1} more)" if len(in_run) > 1 else ""
        where = f" in collective {kind} '{node}'{more}"
    return CollectiveError(
        f"rank {cluster.rank}: a run{where} did not finish within HCCL_EXEC_TIMEOUT="
        f"{cluster.exec_timeout:g} s (or the session's hccl_timeout): another rank did not "
        "reach the collectives of this step, or the step itself is slower than that; raise "
        "HCCL_EXEC_TIMEOUT for slow steps"
    )


def _failed_node(err: Any, text: str) -> tuple[str, str]:
    """``(HCCL op type, node name)`` of the collective ``err`` happened in."""
    for name in _CALLER.findall(text):  # the call node, when the failure is in its body
        found = _HCOM_NAME.search(name.strip())
        if found:
            return found.group(1), name.strip()
    op = getattr(err, "op", None)
    if op is not None:
        return hcom_type(op) or op.type, op.name
    node = _NODE.search(text)
    return "collective", node.group(1) if node else "?"


def _first_line(text: str) -> str:
    """The line that says what went wrong (not TensorFlow's "Graph execution error:" header)."""
    for line in text.splitlines():
        line = line.strip()
        if line and line != "Graph execution error:" and not line.startswith("From /job:"):
            return line
    return text.strip()


def _cause(text: str, node: str, cluster: Cluster) -> str:
    variable = "HCCL_CONNECT_TIMEOUT" if node == "HcomBarrier" else "HCCL_EXEC_TIMEOUT"
    timeout = cluster.connect_timeout if node == "HcomBarrier" else cluster.exec_timeout
    gathered = _GATHERED.search(text)
    shapes = gathered.group(1) if gathered else "?"
    for needle, cause in _CAUSES:
        if needle in text:
            return cause.format(timeout=timeout, variable=variable, shapes=shapes)
    return "see the TensorFlow error"


def fatal_failure(err: Any, in_run: Sequence[tuple[str, str]] = ()) -> CollectiveError | None:
    """The :class:`CollectiveError` to raise instead of ``err`` in a multi-rank job; None for
    an error that is not a collective's, or with one rank. ``in_run``: see
    :func:`collective_failure`."""
    from tf2npu.config import cluster as cluster_lib

    cluster = cluster_lib.current()
    if not cluster.distributed or not is_collective_failure(err):
        return None
    return collective_failure(err, None, None, cluster, in_run)

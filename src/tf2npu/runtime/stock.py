"""TensorFlow's own session, made so that the session hook does not see it (needs TensorFlow).

The NPU session runs its partitioned graph in one of these, XLA clusters are compiled in one,
and a multi-rank job probes its servers with one; none of them may become an NPU session.
It lives below the hook (:mod:`tf2npu.runtime.hook`) so those callers need not import it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["stock_session"]


def stock_session(target: str = "", graph: Any = None, config: Any = None) -> Any:
    """A plain ``tf.compat.v1.Session``, bypassing the hook (the NPU session's inner session)."""
    from tensorflow.python.client import session as session_lib

    session = object.__new__(session_lib.Session)
    session.__init__(target, graph, config)
    return session

"""``tensorflow.contrib.graph_editor`` under ``tf2npu run``: importable, every name refused.

TF 1.15's graph editor rewired ``tf.Graph`` objects in place (subgraph views, copies,
reroutes); TF 2.15 has no equivalent. Scripts import it at the top for an optional feature
(GPT-2 fine-tuning's ``memory_saving_gradients``, used only with ``--memory_saving_gradients``
or the 345M model), so importing works and any name raises
:class:`~tf2npu.compat.errors.ContribAttributeError` saying what to do.
"""

from __future__ import annotations

from typing import NoReturn

from tf2npu.compat.errors import ContribAttributeError


def __getattr__(name: str) -> NoReturn:
    if name.startswith("__"):
        raise AttributeError(name)
    raise ContribAttributeError(
        f"tf.contrib.graph_editor.{name} is not provided by tf2npu run: TF 2.15 has no graph "
        "editor; leave off the feature that edits the graph (e.g. gradient checkpointing: "
        "memory_saving_gradients), or build the graph you need directly"
    )

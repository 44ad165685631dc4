"""``tensorflow.python.data.experimental.ops.threadpool`` as TF 1.15 had it.

TF 1.15 let a pipeline run on its own thread pool::

    ds = threadpool.override_threadpool(ds, threadpool.PrivateThreadPool(128, display_name="x"))

TF 2.15 dropped this module (its replacement is ``tf.data.Options().threading``) but still
ships the two kernels it used, ``ThreadPoolHandle`` and ``ThreadPoolDataset``. This module
builds the same graph TF 1.15 built with them: a thread-pool resource and a dataset that runs
its input's iterator on that pool; the elements are unchanged.
"""

from __future__ import annotations

import itertools
from typing import Any

__all__ = ["PrivateThreadPool", "override_threadpool"]

_UIDS = itertools.count()


class PrivateThreadPool:
    """A thread pool for one or more datasets: ``num_threads`` threads named ``display_name``.

    Example:
        >>> pool = PrivateThreadPool(4, display_name="input")  # doctest: +SKIP
    """

    def __init__(
        self,
        num_threads: int,
        display_name: str | None = None,
        max_intra_op_parallelism: int = 1,
    ) -> None:
        from tensorflow.python.eager import context
        from tensorflow.python.ops import gen_experimental_dataset_ops as ged_ops

        if display_name is None:
            display_name = f"private_thread_pool_{next(_UIDS)}"
        # Eagerly, a shared_name keeps the pool alive across calls (TF 1.15 did the same).
        shared = f"privatethreadpool_{next(_UIDS)}" if context.executing_eagerly() else ""
        self._resource = ged_ops.thread_pool_handle(
            num_threads=num_threads,
            max_intra_op_parallelism=max_intra_op_parallelism,
            display_name=display_name,
            shared_name=shared,
        )


def _thread_pool_dataset(dataset: Any, thread_pool: PrivateThreadPool) -> Any:
    from tensorflow.python.data.ops import dataset_ops
    from tensorflow.python.ops import gen_experimental_dataset_ops as ged_ops

    class _ThreadPoolDataset(dataset_ops.UnaryUnchangedStructureDataset):  # type: ignore[misc]
        """``dataset``'s elements, produced by threads of ``thread_pool``."""

        def __init__(self, input_dataset: Any) -> None:
            self._input_dataset = input_dataset
            variant = ged_ops.thread_pool_dataset(
                input_dataset._variant_tensor, thread_pool._resource, **self._flat_structure
            )
            super().__init__(input_dataset, variant)

    return _ThreadPoolDataset(dataset)


def override_threadpool(dataset: Any, thread_pool: PrivateThreadPool) -> Any:
    """``dataset`` running on ``thread_pool``; a v1 dataset stays a v1 dataset.

    Raises:
        TypeError: ``thread_pool`` is not a :class:`PrivateThreadPool`.
    """
    from tensorflow.python.data.ops import dataset_ops

    if not isinstance(thread_pool, PrivateThreadPool):
        raise TypeError(
            f"override_threadpool needs a threadpool.PrivateThreadPool, got "
            f"{type(thread_pool).__name__}"
        )
    if isinstance(dataset, dataset_ops.DatasetV1):
        return dataset_ops.DatasetV1Adapter(_thread_pool_dataset(dataset, thread_pool))
    return _thread_pool_dataset(dataset, thread_pool)

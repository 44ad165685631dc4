"""``TPUClusterResolver`` as TF 1.15 had it: ``tpu=""`` names no TPU and contacts nothing.

In TF 1.15 an empty name (like ``"local"``, ``grpc://...`` and ``/bns...``) was "not a Cloud
TPU": nothing was resolved, ``master()`` was the name itself (``""``, the in-process session)
and ``cluster_spec()`` was ``None`` in graph mode, so scripts that build the resolver from a
``--tpu`` flag defaulting to ``""`` ran on CPU/GPU. TF 2.15's resolver hands every name but
``"local"`` to its Cloud TPU client, which refuses ``""`` ("Please provide a TPU Name to
connect to"). This subclass keeps TF 2.15's behaviour for every other name; ``tpu=None``
without ``TPU_NAME`` set raises that ValueError, as TF 1.15 did too.
"""

from __future__ import annotations

from typing import Any

from tensorflow.python.distribute.cluster_resolver import cluster_resolver as _base
from tensorflow.python.distribute.cluster_resolver.tpu import tpu_cluster_resolver as _tpu

_NO_TPU = ("", b"")


class TPUClusterResolver(_tpu.TPUClusterResolver):  # type: ignore[misc]
    """TF 2.15's ``TPUClusterResolver``; ``tpu=""`` is TF 1.15's resolver of no TPU."""

    def __init__(
        self,
        tpu: Any = None,
        zone: str | None = None,
        project: str | None = None,
        job_name: str = "worker",
        coordinator_name: str | None = None,
        coordinator_address: str | None = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(tpu, list) and len(tpu) == 1:
            tpu = tpu[0]
        self._tf2npu_no_tpu = isinstance(tpu, (str, bytes)) and tpu in _NO_TPU
        if not self._tf2npu_no_tpu:
            super().__init__(
                tpu, zone, project, job_name, coordinator_name, coordinator_address, **kwargs
            )
            return
        # TF 1.15's attributes on its non-resolving path ("google" environment, no RPC layer).
        self._tpu = ""
        self.task_type = job_name
        self.task_id = 0
        self.rpc_layer = None
        self._environment = "google"
        self._project, self._zone = project, zone
        self._coordinator_name = coordinator_name
        self._coordinator_address = coordinator_address
        self._tpu_topology = None

    def __enter__(self) -> None:
        if not self._tf2npu_no_tpu:
            super().__enter__()

    def __exit__(self, *exc: object) -> None:
        if not self._tf2npu_no_tpu:
            super().__exit__(*exc)

    def master(
        self, task_type: str | None = None, task_id: int | None = None, rpc_layer: Any = None
    ) -> str:
        """``""`` (the in-process session) for no TPU, as TF 1.15 returned."""
        if not self._tf2npu_no_tpu:
            return str(super().master(task_type, task_id, rpc_layer))
        return str(_base.format_master_url("", rpc_layer or self.rpc_layer))

    def get_master(self) -> str:
        return self.master()

    def get_job_name(self) -> str | None:
        """``None`` for no TPU in graph mode: TF 1.15 named a job only when it resolved one."""
        return None if self._tf2npu_no_tpu else super().get_job_name()

    def cluster_spec(self) -> Any:
        """``None`` for no TPU: TF 1.15's case of a name it did not resolve, in graph mode."""
        return super().cluster_spec() if not self._tf2npu_no_tpu else None

    def num_accelerators(
        self, task_type: str | None = None, task_id: int | None = None, config_proto: Any = None
    ) -> dict[str, int]:
        """``{"TPU": 0}`` for no TPU: TF 1.15 counted the TPU cores of the in-process master."""
        if not self._tf2npu_no_tpu:
            return dict(super().num_accelerators(task_type, task_id, config_proto))
        return {"TPU": 0}

    @property
    def environment(self) -> str:
        return "google" if self._tf2npu_no_tpu else str(super().environment)

"""Every ``TF2NPU_*`` environment variable: one name each, and who sets and reads it.

These variables carry a parent's choices into the runs it starts (``verify`` and ``bisect``
trials, ``--ranks`` ranks) so that every subprocess of a run inherits them. Users rarely set
them by hand; each has a command-line flag.

=====================================  ==============================  ==========================
variable                               set by                          read by
=====================================  ==============================  ==========================
``TF2NPU_FUSION_INSTANCES=FILE``       ``run --fusion-instances``,     ``config.overrides``
                                       ``bisect`` trials
``TF2NPU_KEEP_FP32=FILE``              ``run --keep-fp32``, trials     ``config.overrides``
``TF2NPU_INJECT_FAULT=SPEC``           the user (bisect drills)        ``config.faults``
``TF2NPU_RECORD=1``                    ``run --record``, trials        ``runtime.record``
``TF2NPU_MAX_STEPS=N``                 ``verify --steps``              ``runtime.record``
``TF2NPU_DROPOUT_OFF=1``               ``verify`` (dropout off)        ``runtime.dropout``
``TF2NPU_CLUSTER=host:port,...``       ``run --ranks``                 ``config.cluster``
``TF2NPU_SWEEP_TAG=CASE``              the hostile-input test sweeps   ``testing.hostile``
``TF2NPU_HALF_ROUND=0``                the user (a before/after)       ``runtime.native``
=====================================  ==============================  ==========================
"""

from __future__ import annotations

__all__ = [
    "ADDRESSES_VARIABLE",
    "DROPOUT_OFF_ENV",
    "FUSION_INSTANCES_ENV",
    "HALF_ROUND_ENV",
    "INJECT_FAULT_ENV",
    "KEEP_FP32_ENV",
    "MAX_STEPS_ENV",
    "RECORD_ENV",
    "SWEEP_TAG_ENV",
]

FUSION_INSTANCES_ENV = "TF2NPU_FUSION_INSTANCES"
"""A JSON file of fusion rules and instances turned off (:mod:`tf2npu.config.overrides`)."""
KEEP_FP32_ENV = "TF2NPU_KEEP_FP32"
"""A JSON file of client nodes kept in float32 (:mod:`tf2npu.config.overrides`)."""
INJECT_FAULT_ENV = "TF2NPU_INJECT_FAULT"
"""Planted faults for bisect drills (:mod:`tf2npu.config.faults`)."""
RECORD_ENV = "TF2NPU_RECORD"
"""Record fetched scalars and variables per step (:mod:`tf2npu.runtime.record`)."""
MAX_STEPS_ENV = "TF2NPU_MAX_STEPS"
"""Stop the run after this many steps (:mod:`tf2npu.runtime.record`)."""
DROPOUT_OFF_ENV = "TF2NPU_DROPOUT_OFF"
"""Dropout becomes the identity, in TF's and the NPU's ops (:mod:`tf2npu.runtime.dropout`)."""
ADDRESSES_VARIABLE = "TF2NPU_CLUSTER"
"""``host:port,host:port,...``: rank k's gRPC server is entry k (set by ``run --ranks``)."""
SWEEP_TAG_ENV = "TF2NPU_SWEEP_TAG"
"""Marks every process a hostile-input sweep case started, to find leftovers
(:mod:`tf2npu.testing.hostile`)."""
HALF_ROUND_ENV = "TF2NPU_HALF_ROUND"
"""``0``: float16 roundings run as ``Cast`` pairs, not the native op
(:mod:`tf2npu.runtime.native`)."""

"""The ``device_strings`` pass: one canonical reading of every node's ``device`` field.

TF accepts many spellings of one device (``/cpu:0``, ``/device:CPU:0``, ``CPU:0``,
``/job:localhost/replica:0/task:0/device:CPU:0``, ``/gpu:*``). Later passes and reports should
not each re-parse them, so this pass parses every node's device string once and records

* ``node.meta["device_kind"]``: ``"npu"``, ``"cpu"``, ``"gpu"``, ``"other"`` (a known-shaped
  device of another type, e.g. ``TPU``) or ``""`` (no device type given);
* ``node.meta["device"]``: the canonical spelling TF itself writes
  (``/job:<j>/replica:<r>/task:<t>/device:<TYPE>:<id>``, absent parts left out).

``node.device`` is never changed, so an unchanged graph exports bit-exactly. The adapter
re-pins every node to the host CPU before partitioning (reference §3.2 step 5), so a user's
device pin does not steer placement; it is recorded for reports only.

>>> parse_device("/cpu:0")
DeviceSpec(job='', replica='', task='', type='CPU', index='0')
>>> canonical(parse_device("/job:localhost/replica:0/task:0/device:npu:0"))
'/job:localhost/replica:0/task:0/device:NPU:0'
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from tf2npu.errors import GraphError
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.ir import Graph
from tf2npu.graph.passes.infra import PassContext, PassInfo, PassResult, register_pass

__all__ = [
    "DEVICE",
    "DEVICE_KIND",
    "KINDS",
    "DeviceSpec",
    "DeviceStrings",
    "canonical",
    "device_kind",
    "parse_device",
]

#: ``node.meta`` key → the canonical device string (``""`` when the node has none).
DEVICE = "device"
#: ``node.meta`` key → one of :data:`KINDS`.
DEVICE_KIND = "device_kind"
#: Every value ``node.meta["device_kind"]`` takes; ``""`` means no device type was given.
KINDS = ("npu", "cpu", "gpu", "other", "")

# Device types by kind; XLA_* devices run on the same hardware as their base type.
_KIND_OF_TYPE = {"NPU": "npu", "CPU": "cpu", "XLA_CPU": "cpu", "GPU": "gpu", "XLA_GPU": "gpu"}
_ID = r"(\d+|\*)"
_PART = re.compile(
    rf"(?:job:(?P<job>[A-Za-z][\w.-]*)|replica:(?P<replica>{_ID})|task:(?P<task>{_ID})"
    rf"|device:(?P<type>[A-Za-z_][\w]*):(?P<index>{_ID})"
    rf"|(?P<legacy>[A-Za-z_][\w]*):(?P<lindex>{_ID})|device:(?P<typeonly>[A-Za-z_][\w]*))"
)


@dataclass(frozen=True, slots=True)
class DeviceSpec:
    """The parts of one device string; ``""`` for a part not given. ``type`` is upper case."""

    job: str = ""
    replica: str = ""
    task: str = ""
    type: str = ""
    index: str = ""


def parse_device(text: str) -> DeviceSpec:
    """Parses any spelling TF accepts; raises ``ValueError`` naming the bad part."""
    found: dict[str, str] = {}
    stripped = text.strip()
    parts = [p for p in stripped.split("/") if p] if stripped else []
    if stripped and not stripped.startswith("/") and len(parts) == 1:
        parts = [stripped]  # "CPU:0" without a leading slash
    for part in parts:
        match = _PART.fullmatch(part)
        if match is None:
            raise ValueError(f"device part {part!r} is not job:, replica:, task: or device:")
        groups = {k: v for k, v in match.groupdict().items() if v is not None}
        if "legacy" in groups:
            groups = {"type": groups["legacy"], "index": groups["lindex"]}
        elif "typeonly" in groups:
            groups = {"type": groups["typeonly"]}
        for key, value in groups.items():
            if key in found and found[key] != value:
                raise ValueError(f"{key} given twice ({found[key]!r} and {value!r})")
            found[key] = value
    found["type"] = found.get("type", "").upper()
    return DeviceSpec(**found)


def canonical(spec: DeviceSpec) -> str:
    """TF's own spelling of ``spec`` (``DeviceSpec.to_string``): parts in fixed order."""
    out = ""
    if spec.job:
        out += f"/job:{spec.job}"
    if spec.replica:
        out += f"/replica:{spec.replica}"
    if spec.task:
        out += f"/task:{spec.task}"
    if spec.type:
        out += f"/device:{spec.type}:{spec.index or '*'}"
    return out


def device_kind(spec: DeviceSpec) -> str:
    """The kind (one of :data:`KINDS`) of a parsed device."""
    if not spec.type:
        return ""
    return _KIND_OF_TYPE.get(spec.type, "other")


@register_pass
class DeviceStrings:
    """Record each node's canonical device string and device kind in ``node.meta``."""

    info = PassInfo(
        "device_strings",
        description="Normalise device strings so later passes read one form.",
    )

    def run(self, graph: Graph, ctx: PassContext[EngineConfig]) -> PassResult[Graph]:
        cache: dict[str, tuple[str, str]] = {}
        counts: Counter[str] = Counter()
        for body in graph.walk():
            for node in body:
                text = node.device
                known = cache.get(text)
                if known is None:
                    try:
                        spec = parse_device(text)
                    except ValueError as exc:
                        raise GraphError(
                            f"{body.label}: node {node.name!r} has device {text!r}, which TF "
                            f"cannot parse: {exc}; fix the tf.device(...) string (for example "
                            "'/device:CPU:0') or clear it"
                        ) from None
                    known = cache[text] = (canonical(spec), device_kind(spec))
                node.meta[DEVICE], node.meta[DEVICE_KIND] = known
                counts[known[1] or "unspecified"] += 1
        stats = {kind or "unspecified": counts[kind or "unspecified"] for kind in KINDS}
        return PassResult(graph, changed=False, stats=stats)

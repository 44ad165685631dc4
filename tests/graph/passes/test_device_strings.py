"""The device_strings pass: every spelling TF accepts read into one canonical form and kind."""

from __future__ import annotations

import pytest

from tf2npu.config.options import NpuOptions
from tf2npu.errors import GraphError
from tf2npu.graph.context import EngineConfig
from tf2npu.graph.ir import FunctionGraph, Graph
from tf2npu.graph.passes.device_strings import (
    DEVICE,
    DEVICE_KIND,
    DeviceSpec,
    DeviceStrings,
    canonical,
    device_kind,
    parse_device,
)
from tf2npu.graph.passes.infra import PassContext


def _ctx() -> PassContext[EngineConfig]:
    return PassContext(config=EngineConfig.build(NpuOptions.from_values({})))


@pytest.mark.parametrize(
    ("text", "form", "kind"),
    [
        ("", "", ""),
        ("/cpu:0", "/device:CPU:0", "cpu"),
        ("CPU:0", "/device:CPU:0", "cpu"),
        ("/device:NPU:0", "/device:NPU:0", "npu"),
        ("/device:npu:1", "/device:NPU:1", "npu"),
        (
            "/job:localhost/replica:0/task:0/device:CPU:0",
            "/job:localhost/replica:0/task:0/device:CPU:0",
            "cpu",
        ),
        ("/task:0/job:worker/device:GPU:0", "/job:worker/task:0/device:GPU:0", "gpu"),
        ("/gpu:*", "/device:GPU:*", "gpu"),
        ("/device:GPU", "/device:GPU:*", "gpu"),
        ("/device:XLA_GPU:0", "/device:XLA_GPU:0", "gpu"),
        ("/device:TPU:1", "/device:TPU:1", "other"),
        ("/job:ps/task:1", "/job:ps/task:1", ""),
    ],
)
def test_parse_canonical_kind(text: str, form: str, kind: str) -> None:
    spec = parse_device(text)
    assert (canonical(spec), device_kind(spec)) == (form, kind)


def test_parse_keeps_parts() -> None:
    assert parse_device("/job:ps/replica:0/task:2/device:CPU:0") == DeviceSpec(
        "ps", "0", "2", "CPU", "0"
    )


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("foo", "device part 'foo' is not job:, replica:, task: or device:"),
        ("/job:", "device part 'job:' is not job:, replica:, task: or device:"),
        ("/cpu:0/gpu:0", "type given twice ('cpu' and 'gpu')"),
    ],
)
def test_parse_rejects(text: str, error: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_device(text)
    assert str(info.value) == error


def test_pass_records_meta_everywhere_and_keeps_device_text() -> None:
    g = Graph()
    g.add_node("a", "NoOp", device="/cpu:0")
    g.add_node("b", "NoOp", device="/job:localhost/replica:0/task:0/device:NPU:0")
    g.add_node("c", "NoOp")
    g.add_node("d", "NoOp", device="/gpu:0")
    body = FunctionGraph("f", g)
    body.add_node("e", "NoOp", device="/device:CPU:0")
    g.functions["f"] = body

    result = DeviceStrings().run(g, _ctx())

    seen = {n.name: (n.device, n.meta[DEVICE], n.meta[DEVICE_KIND]) for b in g.walk() for n in b}
    assert seen == {
        "a": ("/cpu:0", "/device:CPU:0", "cpu"),
        "b": (
            "/job:localhost/replica:0/task:0/device:NPU:0",
            "/job:localhost/replica:0/task:0/device:NPU:0",
            "npu",
        ),
        "c": ("", "", ""),
        "d": ("/gpu:0", "/device:GPU:0", "gpu"),
        "e": ("/device:CPU:0", "/device:CPU:0", "cpu"),
    }
    assert result.changed is False
    assert dict(result.stats) == {"npu": 1, "cpu": 2, "gpu": 1, "other": 0, "unspecified": 1}
    g.lint()


def test_pass_rejects_unparseable_device() -> None:
    g = Graph()
    g.add_node("a", "NoOp", device="/device:CPU:0:extra")
    with pytest.raises(GraphError) as info:
        DeviceStrings().run(g, _ctx())
    assert str(info.value) == (
        "graph: node 'a' has device '/device:CPU:0:extra', which TF cannot parse: device part "
        "'device:CPU:0:extra' is not job:, replica:, task: or device:; fix the tf.device(...) "
        "string (for example '/device:CPU:0') or clear it"
    )

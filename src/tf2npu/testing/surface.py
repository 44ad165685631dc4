"""The public surface of our ``npu_bridge``: every module's public names and signatures.

``tests/npu_bridge/test_public_surface.py`` compares it with the recorded snapshot
``tests/npu_bridge/public_surface.txt`` so that an accidental change of a name or a signature
scripts rely on is a visible diff. After an intended change, record it again::

    .venv/bin/python -m tf2npu.testing.surface --write
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import types
from collections.abc import Iterator
from pathlib import Path

__all__ = ["MODULES", "SNAPSHOT", "render_surface"]

#: The modules scripts import, by their real adapter paths.
MODULES = (
    "npu_bridge",
    "npu_bridge.npu_init",
    "npu_bridge.estimator.npu_ops",
    "npu_bridge.estimator.npu_unary_ops",
    "npu_bridge.estimator.npu_aicore_ops",
    "npu_bridge.estimator.npu.npu_config",
    "npu_bridge.estimator.npu.npu_estimator",
    "npu_bridge.estimator.npu.npu_hook",
    "npu_bridge.estimator.npu.npu_optimizer",
    "npu_bridge.estimator.npu.npu_callbacks",
    "npu_bridge.estimator.npu.npu_loss_scale_manager",
    "npu_bridge.estimator.npu.npu_loss_scale_optimizer",
    "npu_bridge.estimator.npu.npu_scope",
    "npu_bridge.estimator.npu.npu_plugin",
    "npu_bridge.estimator.npu.npu_strategy",
    "npu_bridge.estimator.npu.npu_rnn",
    "npu_bridge.estimator.npu.npu_dynamic_rnn",
    "npu_bridge.estimator.npu.keras_to_npu",
    "npu_bridge.estimator.npu.util",
    "npu_bridge.hccl.hccl_ops",
    "npu_bridge.hccl.manage",
    "npu_bridge.helper.helper",
    "npu_bridge.npu_cpu.npu_cpu_ops",
    "npu_bridge.npu_cpu.lru_cache",
    "npu_bridge.tf_adapter",
    "npu_bridge.tbe.npu_vector_ops",
    "hccl.manage.api",
    "hccl.split.api",
)

SNAPSHOT = Path(__file__).resolve().parents[3] / "tests" / "npu_bridge" / "public_surface.txt"


def render_surface() -> str:
    """One line per public name: ``module.name: kind signature`` (modules as ``module``)."""
    # Import every module first: a package's attributes include the submodules imported so far.
    modules = [importlib.import_module(name) for name in MODULES]
    lines: list[str] = []
    for name, module in zip(MODULES, modules, strict=True):
        lines.append(f"[{name}]")
        lines.extend(_entries(module))
    return "\n".join(lines) + "\n"


def _entries(module: types.ModuleType) -> Iterator[str]:
    for name in sorted(vars(module)):
        if name.startswith("_"):
            continue
        value = vars(module)[name]
        if isinstance(value, types.ModuleType):
            yield f"{name}: module {value.__name__}"
        elif inspect.isclass(value):
            yield f"{name}: class {_signature(value)}"
            if value.__module__.startswith("npu_bridge"):
                for method in sorted(vars(value)):
                    member = vars(value)[method]
                    if not method.startswith("_") and inspect.isfunction(member):
                        yield f"{name}.{method}: method {_signature(member)}"
        elif callable(value):
            yield f"{name}: function {_signature(value)}"
        elif isinstance(value, (bool, int, float, str, type(None))):
            yield f"{name}: value {value!r}"
        else:
            yield f"{name}: {type(value).__name__}"


def _signature(value: object) -> str:
    try:
        return str(inspect.signature(value))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"record the snapshot in {SNAPSHOT}")
    args = parser.parse_args()
    text = render_surface()
    if args.write:
        SNAPSHOT.write_text(text, encoding="utf-8")
        print(f"wrote {SNAPSHOT}")
    else:
        print(text, end="")


if __name__ == "__main__":
    main()

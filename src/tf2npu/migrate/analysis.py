"""API analysis: every TF and Horovod API a file uses, classified against the support list."""

from __future__ import annotations

from tf2npu.migrate.catalog import classify
from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.model import ApiUse


def api_uses(index: ModuleIndex, path: str) -> tuple[ApiUse, ...]:
    """One :class:`ApiUse` per resolved reference, in source order."""
    uses: list[ApiUse] = []
    for ref in index.refs:
        name = ref.name
        if name.startswith("hvd.keras."):
            name = "hvd." + name[len("hvd.keras.") :]
        info = classify(name)
        uses.append(
            ApiUse(
                path=path,
                line=ref.node.lineno,
                col=ref.node.col_offset + 1,
                module=info.module,
                api=ref.name,
                status=info.status,
                advice=info.advice,
                kind=ref.kind,
            )
        )
    return tuple(uses)

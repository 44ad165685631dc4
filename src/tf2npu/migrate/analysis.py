"""API analysis: every TF and Horovod API a file uses, classified against the support list."""

from __future__ import annotations

from tf2npu.migrate.catalog import classify
from tf2npu.migrate.index import ModuleIndex
from tf2npu.migrate.model import ApiUse


def api_uses(index: ModuleIndex, path: str) -> tuple[ApiUse, ...]:
    """One :class:`ApiUse` per resolved reference, in source order."""
    uses: list[ApiUse] = []
    for ref in index.refs:
        api = _reported_name(ref.name)
        info = classify(_lookup_name(api))
        uses.append(
            ApiUse(
                path=path,
                line=ref.node.lineno,
                col=ref.node.col_offset + 1,
                module=info.module,
                api=api,
                status=info.status,
                advice=info.advice,
                kind=ref.kind,
            )
        )
    return tuple(uses)


def _reported_name(name: str) -> str:
    """``tf.flags.FLAGS.lr`` reads a flag the script defines itself: the API used is FLAGS."""
    cut = name.find(".FLAGS.")
    return name[: cut + len(".FLAGS")] if cut != -1 else name


def _lookup_name(name: str) -> str:
    """Keras Horovod shares the support list's ``hvd.*`` rows."""
    return "hvd." + name[len("hvd.keras.") :] if name.startswith("hvd.keras.") else name

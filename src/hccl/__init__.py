"""tf2npu's stand-in for CANN's ``hccl`` Python package (``hccl.manage.api``, ``hccl.split.api``).

Hand-migrated scripts import the rank helpers from CANN's own package rather than from
``npu_bridge``: ``from hccl.manage.api import get_rank_id``, ``from hccl.split.api import
set_split_strategy_by_idx``. Both modules re-export :mod:`npu_bridge.hccl.manage`, which answers
for one process from ``RANK_SIZE`` / ``RANK_ID``.

As for ``npu_bridge``, a real CANN ``hccl`` package anywhere on ``sys.path`` (a directory
``hccl`` with ``manage/api.py`` that is not a tf2npu stand-in) wins: the import is handed over.
"""

from pathlib import Path as _Path

from npu_bridge._handover import hand_over as _hand_over

#: Marks this package as tf2npu's, so that another copy of tf2npu is never taken for CANN's.
_TF2NPU_STANDIN = True


def _is_real_hccl(package: _Path) -> bool:
    init = package / "__init__.py"
    if not init.is_file() or not (package / "manage" / "api.py").is_file():
        return False
    try:
        return "_TF2NPU_STANDIN" not in init.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


_hand_over(_Path(__file__).parent, "hccl", _is_real_hccl)

"""``hccl.manage``: rank and group queries (see :mod:`hccl.manage.api`)."""

"""``hccl.split``: gradient-fusion split strategies (see :mod:`hccl.split.api`)."""

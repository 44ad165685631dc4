"""Shipped op-info data (``ops.tsv``), written by ``tools/derive_opinfo.py``."""

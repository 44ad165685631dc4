"""On-disk formats that writers and readers share (TF-free; imports nothing above it)."""

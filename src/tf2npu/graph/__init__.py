"""The graph engine: op facts, placement, precision, fusion and partitioning over GraphDefs."""

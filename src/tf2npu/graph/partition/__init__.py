"""Partitioning the top-level graph into GeOps (vendor §3.5–§3.8); see docs/partition.md.

:func:`partition_graph` decides and records the GeOps; :func:`extract_subgraph` gives one
GeOp's nodes as a standalone graph for dumps.
"""

from tf2npu.graph.partition.edges import Copy, Transfer
from tf2npu.graph.partition.plan import (
    GRAPH_NUM,
    PARTITION,
    PartitionPlan,
    geop_name,
    partition_graph,
)
from tf2npu.graph.partition.subgraph import extract_subgraph
from tf2npu.graph.partition.verify import cluster_cycle

__all__ = [
    "GRAPH_NUM",
    "PARTITION",
    "Copy",
    "PartitionPlan",
    "Transfer",
    "cluster_cycle",
    "extract_subgraph",
    "geop_name",
    "partition_graph",
]

"""Placement helpers: support predicates, frames, propagation, bodies and table checks.

The ``placement`` pass (:mod:`tf2npu.graph.passes.placement`) composes them; each module
implements one step of the adapter's candidate selection (reference §3.3–§3.4).
"""

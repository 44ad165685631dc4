"""Training step time on N ranks: ``NPUDistributedOptimizer`` against raw TF collectives.

Run it as a job of N ranks (each rank runs this script), and once without ``--ranks`` for the
one-process step time:

    tf2npu run --ranks 2 --quiet --report-dir /tmp/st \\
        --option precision_mode=must_keep_origin_dtype benchmarks/distributed_step_time.py
    tf2npu run --quiet --report-dir /tmp/st1 \\
        --option precision_mode=must_keep_origin_dtype benchmarks/distributed_step_time.py

Every rank builds each model of ``distributed_models`` (the spike's small MLP, its big MLP of
1.09 M parameters, the BERT-style graph; SGD 0.1, this rank's shard of a global batch) three
times, each in its own graph and session on the rank's server:

* **ours**: ``NPUDistributedOptimizer`` in a session with ``npu_config_proto()`` (the path of
  a migrated script: graph engine, ``HcomAllReduce``/``HcomAllGather`` ops);
* **raw**: the bare optimizer's gradients, each through one ``collective_ops.all_reduce_v2``
  (``Add``, then divided by N; an ``IndexedSlices`` gradient, as ours, through
  ``all_gather_v2`` of its values and indices), in a stock session on the server target;
* **raw fused**: the same, with the dense gradients concatenated into one flat all-reduce and
  split back (the spike's ``fuse=True``);
* **ours fused**: ours with ``set_split_strategy_by_size([100])``, so that its dense gradients
  too travel as one all-reduce: the same collectives as raw fused, so ``ours fused/raw fused``
  is what tf2npu's layer costs. (Ours, with HCCL's default split ``[96.54, 3.46]``, sends two.)

Every step also fetches the loss averaged over the ranks (``hccl_ops.allreduce`` in ours, one
more ``all_reduce_v2`` in raw), as the spike's training step did: the small MLP's step has 7
collectives (6 gradients and the loss). Steps take turns (ours, raw, raw fused, the order
rotating every step) after ``--warmup`` steps each, so that load on the machine hits all three
alike. Rank 0 prints the machine's load average before measuring, then the median step time
(ms) of each per model and the ratios ours/raw and ours fused/raw fused, as a Markdown table and one
JSON line; every rank prints its own JSON line (``[rank k] step-time {...}``).

Without ``--ranks`` it measures the one-process step on the global batch: ours (the wrapper is
the identity with one rank) against a stock session. Raw collectives use group key 1 and
instance keys below 2**24, which tf2npu's own keys (hashes mapped to [2**24, 2**31)) never take.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import tensorflow.compat.v1 as tf
from distributed_models import MODELS, OPTIMIZERS, Model, build
from tensorflow.python.ops import collective_ops

from npu_bridge.hccl import hccl_ops, manage
from npu_bridge.npu_init import NPUDistributedOptimizer, npu_config_proto
from tf2npu.client.groups import WORLD_GROUP_KEY
from tf2npu.runtime.distributed.split import DEFAULT_SPLIT
from tf2npu.runtime.distributed.world import World, current_world

FEEDS = 4  # distinct global batches cycled through


class RawAllReduceOptimizer(tf.train.Optimizer):  # type: ignore[misc]
    """Averages the wrapped optimizer's gradients with TF collectives built by hand.

    Args:
        optimizer: the ``tf.compat.v1.train`` optimizer that computes and applies them.
        world: this rank's world (group size, device, timeout).
        keys: the instance keys to use, one per collective (consumed in order).
        fused: one all-reduce over the concatenated dense gradients instead of one each.
    """

    def __init__(self, optimizer: Any, world: World, keys: Any, fused: bool) -> None:
        super().__init__(use_locking=False, name="Raw")
        self._optimizer, self._world, self._keys, self._fused = optimizer, world, keys, fused

    def compute_gradients(self, *args: Any, **kwargs: Any) -> list[tuple[Any, Any]]:
        pairs = self._optimizer.compute_gradients(*args, **kwargs)
        grads = [g for g, _ in pairs]
        with tf.device(self._world.device):
            dense = [i for i, g in enumerate(grads) if isinstance(g, tf.Tensor)]
            for i, g in enumerate(grads):
                if isinstance(g, tf.IndexedSlices):
                    grads[i] = self._gather(g)
            if self._fused:
                flat = tf.concat([tf.reshape(grads[i], [-1]) for i in dense], 0)
                parts = tf.split(self.mean(flat), [grads[i].shape.num_elements() for i in dense])
                for i, part in zip(dense, parts, strict=True):
                    grads[i] = tf.reshape(part, grads[i].shape)
            else:
                for i in dense:
                    grads[i] = self.mean(grads[i])
        return [(g, v) for g, (_, v) in zip(grads, pairs, strict=True)]

    def mean(self, value: Any) -> Any:
        """``value`` all-reduced (sum) over the ranks, divided by their number."""
        summed = collective_ops.all_reduce_v2(
            value, group_size=self._world.size, group_key=WORLD_GROUP_KEY,
            instance_key=next(self._keys), merge_op="Add", final_op="Id",
        )  # fmt: skip
        return summed / float(self._world.size)

    def _gather(self, slices: Any) -> Any:
        def gather(value: Any) -> Any:
            return collective_ops.all_gather_v2(
                value, group_size=self._world.size, group_key=WORLD_GROUP_KEY,
                instance_key=next(self._keys),
            )  # fmt: skip

        values = gather(slices.values) / float(self._world.size)
        return tf.IndexedSlices(values, gather(slices.indices), slices.dense_shape)

    def apply_gradients(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.apply_gradients(*args, **kwargs)


class Variant:
    """One model built one way, with its session, its fetches and its feeds."""

    def __init__(self, model: Model, session: Any, global_loss: Any) -> None:
        self.model, self.session = model, session
        self.fetches = [model.train_op, global_loss]
        self.feeds = [model.feeds(step) for step in range(FEEDS)]
        self.collectives = sum(
            op.type.startswith(("Hcom", "Collective")) for op in model.graph.get_operations()
        )
        self.times: list[float] = []
        self.session.run(model.init)

    def step(self, index: int, record: bool = True) -> None:
        start = time.perf_counter()
        self.session.run(self.fetches, self.feeds[index % FEEDS])
        if record:
            self.times.append((time.perf_counter() - start) * 1e3)


def _sgd(v1: Any) -> Any:
    return OPTIMIZERS["sgd"](v1)


def distributed_variants(world: World, name: str, index: int) -> dict[str, Variant]:
    """ours, ours fused, raw and raw fused of model ``name`` on this rank."""
    variants = {"ours": _ours_variant(world, name)}
    manage.set_split_strategy_by_size([100])  # read while the gradients are built
    try:
        variants["ours fused"] = _ours_variant(world, name)
    finally:
        manage.set_split_strategy_by_size(list(DEFAULT_SPLIT.points))
    for offset, label in ((0, "raw"), (500, "raw fused")):
        first_key = 100 + 1000 * index + offset
        variants[label] = _raw_variant(world, name, range(first_key, first_key + 500), offset > 0)
    return variants


def _ours_variant(world: World, name: str) -> Variant:
    """Model ``name`` averaged by ``NPUDistributedOptimizer`` in an NPU session."""
    ours = build(name, lambda v1: NPUDistributedOptimizer(_sgd(v1)), world.rank, world.size)
    with ours.graph.as_default():
        loss = hccl_ops.allreduce(ours.loss, "sum") / float(world.size)
    return Variant(ours, tf.Session(graph=ours.graph, config=npu_config_proto()), loss)


def _raw_variant(world: World, name: str, keys: range, fused: bool) -> Variant:
    """Model ``name`` averaged by a :class:`RawAllReduceOptimizer` using ``keys``."""
    made: list[RawAllReduceOptimizer] = []
    key_iter = iter(keys)

    def raw(v1: Any) -> Any:
        made.append(RawAllReduceOptimizer(_sgd(v1), world, key_iter, fused))
        return made[-1]

    model = build(name, raw, world.rank, world.size)
    with model.graph.as_default(), tf.device(world.device):
        loss = made[0].mean(model.loss)
    session = tf.Session(world.target, graph=model.graph, config=world.session_config())
    return Variant(model, session, loss)


def single_variants(name: str) -> dict[str, Variant]:
    """ours and a stock session of model ``name`` in one process (global batch)."""
    ours = build(name, lambda v1: NPUDistributedOptimizer(_sgd(v1)), 0, 1)
    stock = build(name, _sgd, 0, 1)
    return {
        "ours": Variant(ours, tf.Session(graph=ours.graph, config=npu_config_proto()), ours.loss),
        "stock": Variant(stock, tf.Session(graph=stock.graph), stock.loss),
    }


def measure(variants: dict[str, Variant], steps: int, warmup: int) -> dict[str, Any]:
    """Median step time (ms) of each variant; steps take turns in an order rotating per step."""
    names = list(variants)
    for index in range(warmup):
        for name in names:
            variants[name].step(index, record=False)
    for index in range(steps):
        shift = index % len(names)
        for name in names[shift:] + names[:shift]:
            variants[name].step(index)
    result: dict[str, Any] = {name: statistics.median(v.times) for name, v in variants.items()}
    result["collectives"] = {name: v.collectives for name, v in variants.items()}
    for variant in variants.values():
        variant.session.close()
    return result


#: (ours, theirs) pairs whose ratio is reported: like for like.
PAIRS = (("ours", "raw"), ("ours fused", "raw fused"), ("ours", "stock"))


def with_ratios(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` plus ours/raw and ours fused/raw fused (or ours/stock with one process)."""
    ratios = {f"{a}/{b}": row[a] / row[b] for a, b in PAIRS if a in row and b in row}
    return {**row, **ratios}


def table(size: int, results: dict[str, dict[str, Any]]) -> str:
    """Rank 0's results as a Markdown table."""
    names = ["ours", "ours fused", "raw", "raw fused"] if size > 1 else ["ours", "stock"]
    ratios = [f"{a}/{b}" for a, b in PAIRS if a in names and b in names]
    head = "| model | " + " | ".join([*names, *ratios])
    head += f" | collectives/step ({', '.join(names)}) |"
    lines = [head, "|" + " --- |" * (1 + len(names) + len(ratios) + 1)]
    for model, row in results.items():
        cells = [f"{row[n]:.2f}" for n in names] + [f"{row[r]:.3f}" for r in ratios]
        counts = ", ".join(str(row["collectives"][n]) for n in names)
        lines.append(f"| {model} | " + " | ".join(cells) + f" | {counts} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--steps", type=int, default=50, help="timed steps of each variant")
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    world = current_world()
    rank, size = (world.rank, world.size) if world else (0, 1)
    if rank == 0:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"step time, {size} rank(s), load average before: {load}", flush=True)
    make: Callable[[str, int], dict[str, Variant]] = (
        (lambda name, i: distributed_variants(world, name, i)) if world else
        (lambda name, i: single_variants(name))
    )  # fmt: skip
    results = {
        name: with_ratios(measure(make(name, index), args.steps, args.warmup))
        for index, name in enumerate(args.models)
    }
    print("step-time " + json.dumps({"rank": rank, "ranks": size, "results": results}), flush=True)
    if rank == 0:
        print(f"median step time (ms), {args.steps} steps each after {args.warmup} warm-ups")
        print(table(size, results))


if __name__ == "__main__":
    main()

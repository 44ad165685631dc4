"""A small raw profile built by hand: one feed, a device MatMul, a float16 device ReduceSum that
the precision pass lowered, a host op between them, a fetch; three traced training runs."""

from __future__ import annotations

from pathlib import Path

from tf2npu.artifacts.profile_raw import (
    CompileRecord,
    Iteration,
    ModelInfo,
    OpFacts,
    OpRun,
    RawProfile,
    RawWriter,
)

GEOP = "GeOp1_0"
US = 1000  # ns per µs

OPS = (
    OpFacts("_arg_x_0_0", "_Arg", kind="feed", tensor="x:0", session=1),
    OpFacts("mm", "MatMul", "MatMulV2", GEOP, where="train.py:5 in <module>", order=3,
            inputs=("x:0", "w:0"), input_dtypes=("DT_FLOAT", "DT_FLOAT"),
            input_shapes=((4, 8), (8, 8)), session=1),
    OpFacts("w", "VariableV2", "", GEOP, order=2, session=1),
    OpFacts("hostop", "PyFunc", "", "", where="train.py:6 in <module>", host_reason="py_func",
            host_message="PyFunc: host only", order=4, inputs=("mm:0",),
            input_dtypes=("DT_FLOAT",), input_shapes=((4, 8),), ai_core=False, session=1),
    OpFacts("rs/_tf2npu_fp16", "Sum", "ReduceSumD", GEOP, origin=("rs",),
            where="train.py:7 in <module>", precision="float32->float16",
            precision_reason="follows_lowered: follows fp16 input", order=6,
            inputs=("hostop:0", "rs/axis:0"), input_dtypes=("DT_FLOAT16", "DT_INT32"),
            input_shapes=((4, 8), ()), session=1),
    OpFacts("gradients/rs_grad/Tile", "Tile", "Tile", GEOP, order=8, inputs=("rs/_tf2npu_fp16:0",),
            input_dtypes=("DT_FLOAT16",), input_shapes=((8,),), session=1),
    OpFacts("_retval_rs_0_0", "_Retval", kind="fetch", tensor="rs/_tf2npu_fp16:0",
            inputs=("rs/_tf2npu_fp16:0",), session=1),
)  # fmt: skip


def iteration(index: int, start_us: int, *, gap_us: int = -1, reduce_us: int = 60) -> Iteration:
    """One training run: feed, MatMul 10 µs, host op 30 µs, ReduceSum ``reduce_us``, Tile."""
    t = start_us
    runs = [
        OpRun("_arg_x_0_0", t * US, 1 * US, 1, ((4, 8),), ("DT_FLOAT",), (128,)),
        OpRun("mm", (t + 2) * US, 10 * US, 1, ((4, 8),), ("DT_FLOAT",), (128,)),
        OpRun("hostop", (t + 13) * US, 30 * US, 2, ((4, 8),), ("DT_FLOAT16",), (64,)),
        OpRun("rs/_tf2npu_fp16", (t + 44) * US, reduce_us * US, 1, ((8,),), ("DT_FLOAT16",),
              (16,)),
        OpRun("gradients/rs_grad/Tile", (t + 45 + reduce_us) * US, 5 * US, 1, ((4, 8),),
              ("DT_FLOAT16",), (64,)),
        OpRun("_retval_rs_0_0", (t + 51 + reduce_us) * US, 1 * US, 1),
    ]  # fmt: skip
    return Iteration(2, index, True, tuple(runs), gap_us * US if gap_us >= 0 else -1)


def sample(directory: Path) -> RawProfile:
    """The sample as :func:`tf2npu.artifacts.profile_raw.load` returns it (nothing written)."""
    return RawProfile(
        directory=directory,
        spec={"task_trace": "l1", "training_trace": "on"},
        options={"precision_mode": "allow_mix_precision", "modify_mixlist": ""},
        ops={1: {op.name: op for op in OPS}},
        iterations=[
            iteration(0, 1000),
            iteration(1, 1500, gap_us=20),
            iteration(2, 2000, gap_us=20),
        ],
        models={2: ModelInfo(2, session=1, train=True, plans=1, runs=3, fetches=("rs:0",))},
        timestamp="20240101120000",
    )


def write_sample(root: Path, *, compiles: tuple[CompileRecord, ...] = ()) -> Path:
    """The sample's raw files under ``root/PROF_20240101120000``; returns that folder."""
    profile = sample(root / "PROF_20240101120000")
    writer = RawWriter(profile.directory, 0)
    writer.add_ops(OPS)
    for it in profile.iterations:
        writer.add_iteration(it)
    for record in compiles:
        writer.add_compile(record)
    writer.write_meta(
        {"timestamp": profile.timestamp, "device_id": 0, "spec": dict(profile.spec),
         "options": dict(profile.options),
         "models": {"2": profile.models[2].to_json()}}
    )  # fmt: skip
    writer.close()
    return profile.directory

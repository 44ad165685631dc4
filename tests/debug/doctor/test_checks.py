"""Structured checks of logs: profile rows, loss-scale series, ranks."""

from __future__ import annotations

from tf2npu.debug.doctor.checks import loss_scale_findings, op_summary_findings, rank_findings
from tf2npu.debug.doctor.logtext import Log
from tf2npu.findings import Where

SEED_TABLE = """\
op_type,block_dim,input_shape,input_data_type,input_formats
ReduceSum,1,"1,256,256,3",DT_FLOAT16,NHWC
ReduceSum,32,"1,256,256,3",DT_FLOAT,NHWC
MatMul,1,"2,2",DT_FLOAT16,ND
"""


def test_the_seed_000_case_04_row() -> None:
    [found] = op_summary_findings(SEED_TABLE, "ops.csv")
    assert (found.id, found.where) == ("reduce_sum_fp16", Where(op_type="ReduceSum"))
    assert found.evidence == "ops.csv:2: ReduceSum block dim 1, inputs DT_FLOAT16"
    assert '{"black-list": {"to-add": ["ReduceSumD"]}}' in found.fix


OURS = """\
Device_id,Op Name,OP Type,Task Type,Block Num,Input Data Types,Precision
0,rs/_tf2npu_fp16,ReduceSumD,AI_CORE,N/A,DT_FLOAT16;DT_INT32,float32->float16
0,rs/_tf2npu_fp16,ReduceSumD,AI_CORE,N/A,DT_FLOAT16;DT_INT32,float32->float16
0,rs32,ReduceSumD,AI_CORE,N/A,DT_FLOAT;DT_INT32,
0,rs_dev,ReduceSumD,AI_CORE,8,DT_FLOAT16;DT_INT32,
"""
"""A profile off the device (block dims not measured, N/A) and one device row that has 8."""


def test_an_unmeasured_block_dim_is_judged_by_the_ops_float16_dtype_once_per_op() -> None:
    [found] = op_summary_findings(OURS, "op_summary.csv")
    assert found.where == Where(node="rs/_tf2npu_fp16", op_type="ReduceSumD")
    assert found.evidence == (
        "op_summary.csv:2: ReduceSumD inputs DT_FLOAT16;DT_INT32, lowered float32->float16; "
        "block dim not measured (N/A): the float16 ReduceSum kernel runs on one core"
    )


def test_text_that_is_no_table_gives_nothing() -> None:
    assert op_summary_findings("loss 0.5\nReduceSum,1,DT_FLOAT16\n", "log") == []
    assert op_summary_findings("", "log") == []


def scales(*values: float) -> Log:
    return Log(
        "train.log", tuple(f"step {i}: loss scale value={v:g}" for i, v in enumerate(values))
    )


def test_a_loss_scale_that_falls_to_the_floor_or_keeps_falling() -> None:
    [floor] = loss_scale_findings(scales(4, 2, 1))
    assert floor.evidence == "train.log:3: loss scale 4 -> 1"
    assert len(list(loss_scale_findings(scales(65536, 32768, 16384, 8192)))) == 1


def test_a_loss_scale_that_recovers_or_is_too_short_is_fine() -> None:
    assert list(loss_scale_findings(scales(65536, 32768, 65536, 32768, 16384))) == []
    assert list(loss_scale_findings(scales(2, 1))) == []
    assert list(loss_scale_findings(scales(1024, 1024, 1024))) == []


def test_a_scale_that_came_down_in_pairs_and_then_held_is_a_warm_up() -> None:
    # decr_every_n_nan_or_inf=2: the scale holds two values at a time while it comes down.
    values = (2**32, 2**32, 2**31, 2**31, 2**30, 2**30, 2**29, 2**29, 2**29, 2**29, 2**29)
    [found] = loss_scale_findings(scales(*values))
    assert found.id == "loss_scale_warmup"
    assert found.evidence == (
        "train.log:11: loss scale 4.29497e+09 -> 5.36871e+08, then held for the last 5 values"
    )


def test_a_scale_still_coming_down_at_the_end_keeps_dropping() -> None:
    values = (2**32, 2**32, 2**31, 2**31, 2**30, 2**30, 2**29, 2**29)
    [found] = loss_scale_findings(scales(*values))
    assert found.id == "loss_scale_keeps_dropping"
    [floor] = loss_scale_findings(scales(8, 4, 2, 1, 1, 1, 1))
    assert floor.id == "loss_scale_keeps_dropping"  # held, but at the floor of 1


def test_ranks_need_two_logs_with_graph_ids() -> None:
    line = "The model has been compiled on the Ascend AI processor, current graph id is 3"
    assert rank_findings([Log("a", (line,))]) == []
    assert rank_findings([Log("a", (line,)), Log("b", ("nothing",))]) == []
    [found] = rank_findings([Log("a", (line,)), Log("b", (line.replace("3", "5"),))])
    assert (found.where.file, found.evidence) == ("a", "last graph id a: 3, b: 5")

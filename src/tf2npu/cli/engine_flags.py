"""``tf2npu run``'s flags for trial runs: fusion instances off, nodes kept in float32, faults.

Each flag has an environment variable of the same meaning (``TF2NPU_FUSION_INSTANCES``,
``TF2NPU_KEEP_FP32``, ``TF2NPU_INJECT_FAULT``), so the runs of a bisection inherit it; the flag
wins over the variable. Files and specs are read and validated here, before the script starts
(:mod:`tf2npu.config.overrides`, :mod:`tf2npu.config.faults`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from tf2npu.config.env import INJECT_FAULT_ENV
from tf2npu.config.faults import FaultSpec, parse_faults
from tf2npu.config.overrides import (
    FUSION_INSTANCES_ENV,
    KEEP_FP32_ENV,
    EngineOverrides,
    FusionOverride,
    KeepFp32,
)

__all__ = ["add_engine_flags", "engine_overrides", "environment_overrides"]


def add_engine_flags(parser: argparse.ArgumentParser) -> argparse._ArgumentGroup:
    """Add the trial flags in their own group; returns it (later flags join it)."""
    group = parser.add_argument_group(
        "trial runs (docs/debugging.md; tf2npu bisect sets them through the environment)"
    )
    group.add_argument(
        "--fusion-instances",
        metavar="FILE",
        type=Path,
        help="turn fusion rules or single instances off on top of fusion_switch_file: "
        '{"off": [{"rule": "RULE"}, {"rule": "RULE", "root": "NODE"}]} '
        f"(env {FUSION_INSTANCES_ENV})",
    )
    group.add_argument(
        "--keep-fp32",
        metavar="FILE",
        type=Path,
        help='keep these nodes float32 under any precision_mode: {"nodes": ["NODE", ...]} '
        f"(env {KEEP_FP32_ENV})",
    )
    group.add_argument(
        "--inject-fault",
        action="append",
        default=[],
        metavar="SPEC",
        help="a drill: corrupt NPU sessions' fused nodes or an op on purpose; SPEC is "
        "fusion:RULE[@ROOT]=KIND or op:NODE=KIND, KIND nan, bias:EPS or scale:F; repeat for "
        f"several (env {INJECT_FAULT_ENV}=SPEC[;SPEC]; docs/debugging.md)",
    )
    return group


def engine_overrides(args: argparse.Namespace, env: Mapping[str, str]) -> EngineOverrides:
    """The validated overrides the flags (else the environment) name.

    Raises:
        tf2npu.errors.ConfigError: a file that is missing, not JSON, of the wrong shape, or
            naming a fusion rule that does not exist (with the closest names); a fault spec
            that does not parse.
    """
    from tf2npu.graph.fusion import known_rules

    fusion = FusionOverride()
    where = _source(args.fusion_instances, "--fusion-instances", env, FUSION_INSTANCES_ENV)
    if where is not None:
        fusion = FusionOverride.load(where[0], known_rules(), where[1])
    keep = KeepFp32()
    where = _source(args.keep_fp32, "--keep-fp32", env, KEEP_FP32_ENV)
    if where is not None:
        keep = KeepFp32.load(where[0], where[1])
    return EngineOverrides(fusion, keep, _faults(args.inject_fault, env, known_rules()))


def environment_overrides(env: Mapping[str, str]) -> EngineOverrides:
    """The overrides the variables alone name, for a command without the trial flags
    (``tf2npu profile``)."""
    return engine_overrides(
        argparse.Namespace(fusion_instances=None, keep_fp32=None, inject_fault=[]), env
    )


def _faults(
    flags: list[str], env: Mapping[str, str], rules: Mapping[str, tuple[str, tuple[str, ...]]]
) -> tuple[FaultSpec, ...]:
    if flags:
        return parse_faults(flags, rules, "--inject-fault")
    return parse_faults([env.get(INJECT_FAULT_ENV, "")], rules, INJECT_FAULT_ENV)


def _source(
    flag_value: Path | None, flag: str, env: Mapping[str, str], variable: str
) -> tuple[Path, str] | None:
    """The file to read and how to name it in errors: the flag's, else the variable's."""
    if flag_value is not None:
        return flag_value.resolve(), flag
    text = env.get(variable, "")
    if text:
        return Path(text).resolve(), variable
    return None

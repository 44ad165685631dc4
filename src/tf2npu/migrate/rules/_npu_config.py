"""Shared by the rules that create NPU configs: how ``--precision-mode`` / ``--mix-compile`` land.

``npu_config_proto`` (the real adapter's helper) takes only the proto. When the user asked for
NPU options, sessions use a small helper the migration defines once per file, which adds them to
the ``NpuOptimizer`` entry; run configs take them as ``NPURunConfig`` arguments.

Mixed compute is also turned on without ``--mix-compile`` when the file's input pipeline reads a
lookup table. That script certainly fails on the device in the default full-offload mode (seed
000, case 01): the table's initialisation (``HashTableV2``) is offloaded to the device while the
pipeline's ``LookupTableFindV2`` stays on the host, and training stops with "Table not
initialized". The vendor's fix for exactly this case is ``mix_compile_mode=True`` in the
``NpuOptimizer`` config, "which keeps the resource ops that must be used in pairs in the front-end
framework" (the seed's own words); it changes nothing else in the script, so the tool applies it
in every NPU config it writes for that file and the hazards rule reports it as a change. It is
not applied when the file sets ``iterations_per_loop`` (mixed compute requires 1, so choosing
between the two is the user's) or when the file writes no NPU config of its own: then the hazard
is an error finding.
"""

from __future__ import annotations

from tf2npu.migrate.context import FileContext
from tf2npu.migrate.rules._pipeline_resources import Resource, pipeline_tables

HELPER_NAME = "npu_session_config"
MIX_COMPILE = "mix_compile_mode"
_MIX_KEYWORD = f"{MIX_COMPILE}=True"
_MIX_PARAMETER = f'custom_op.parameter_map["{MIX_COMPILE}"].b = True'
_LOOPS = "iterations_per_loop"


def mix_compile_needed(ctx: FileContext) -> tuple[Resource, ...]:
    """The pipeline lookup tables that make the tool turn mixed compute on by itself."""
    if ctx.options.mix_compile or _LOOPS in ctx.text:
        return ()
    return pipeline_tables(ctx)


def mix_compile(ctx: FileContext) -> bool:
    """Whether the NPU configs written in this file turn mixed compute on."""
    return ctx.options.mix_compile or bool(mix_compile_needed(ctx))


def mix_compile_lines(ctx: FileContext) -> list[int]:
    """Lines of the configs recorded for this file so far that set ``mix_compile_mode=True``."""
    helper = any(_MIX_PARAMETER in line for line in ctx.helpers.get(HELPER_NAME, ()))
    marks = (_MIX_KEYWORD, f"{HELPER_NAME}(") if helper else (_MIX_KEYWORD,)
    lines = {
        patch.line
        for patch in ctx.patches
        if any(mark in edit.new for edit in patch.edits for mark in marks)
    }
    return sorted(lines)


def npu_option_keywords(ctx: FileContext) -> list[tuple[str, str]]:
    """``NPURunConfig`` keyword arguments for the options the user chose."""
    options = ctx.options
    pairs: list[tuple[str, str]] = []
    if options.precision_mode is not None:
        pairs.append(("precision_mode", repr(options.precision_mode)))
    if mix_compile(ctx):
        pairs.append((MIX_COMPILE, "True"))
    return pairs


def session_config_builder(ctx: FileContext) -> str:
    """Name of the function that builds an NPU session config in this file."""
    options = ctx.options
    mixed = mix_compile(ctx)
    if options.precision_mode is None and not mixed:
        return "npu_config_proto"
    lines = [
        f"def {HELPER_NAME}(config_proto=None):",
        '    """npu_config_proto() plus the NPU options chosen when migrating '
        '(added by tf2npu)."""',
        "    config_proto = npu_config_proto(config_proto=config_proto)",
        "    for custom_op in config_proto.graph_options.rewrite_options.custom_optimizers:",
        '        if custom_op.name == "NpuOptimizer":',
    ]
    if options.precision_mode is not None:
        value = options.precision_mode.encode()
        lines.append(f'            custom_op.parameter_map["precision_mode"].s = {value!r}')
    if mixed:
        lines.append(f"            {_MIX_PARAMETER}")
    lines.append("    return config_proto")
    ctx.need_helper(HELPER_NAME, lines)
    return HELPER_NAME

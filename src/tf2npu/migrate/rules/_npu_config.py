"""Shared by the rules that create NPU configs: how ``--precision-mode`` / ``--mix-compile`` land.

``npu_config_proto`` (the real adapter's helper) takes only the proto. When the user asked for
NPU options, sessions use a small helper the migration defines once per file, which adds them to
the ``NpuOptimizer`` entry; run configs take them as ``NPURunConfig`` arguments.
"""

from __future__ import annotations

from tf2npu.migrate.context import FileContext

HELPER_NAME = "npu_session_config"


def npu_option_keywords(ctx: FileContext) -> list[tuple[str, str]]:
    """``NPURunConfig`` keyword arguments for the options the user chose."""
    options = ctx.options
    pairs: list[tuple[str, str]] = []
    if options.precision_mode is not None:
        pairs.append(("precision_mode", repr(options.precision_mode)))
    if options.mix_compile:
        pairs.append(("mix_compile_mode", "True"))
    return pairs


def session_config_builder(ctx: FileContext) -> str:
    """Name of the function that builds an NPU session config in this file."""
    options = ctx.options
    if options.precision_mode is None and not options.mix_compile:
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
    if options.mix_compile:
        lines.append('            custom_op.parameter_map["mix_compile_mode"].b = True')
    lines.append("    return config_proto")
    ctx.need_helper(HELPER_NAME, lines)
    return HELPER_NAME

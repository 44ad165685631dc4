"""Constraints over resolved :class:`NpuOptions`; every error names option, value and fix."""

from __future__ import annotations

from collections.abc import Callable

from tf2npu.config.options import (
    MIX_PRECISION_MODES,
    MIX_PRECISION_MODES_V2,
    OPTIONS,
    NpuOptions,
)
from tf2npu.errors import ConfigError

_MIX_MODES = (
    ", ".join(MIX_PRECISION_MODES) + " or precision_mode_v2 " + ", ".join(MIX_PRECISION_MODES_V2)
)
#: The three options that set dynamic-dimension gears; they are given together or not at all.
DYNAMIC_DIMS = ("input_shape", "dynamic_dims", "dynamic_node_type")


def validate(options: NpuOptions) -> None:
    """Raise :class:`ConfigError` on the first invalid value or combination."""
    for name in sorted(options.explicit):
        value = options.get(name)
        fix = OPTIONS[name].check(value)
        if fix is not None:
            raise ConfigError(f"option {name!r} = {value!r} is not valid; {fix}")
    for rule in _RULES:
        message = rule(options)
        if message is not None:
            raise ConfigError(message)


def no_effect_report(options: NpuOptions) -> list[tuple[str, str]]:
    """``(name, reason)`` for every option the user set that has no effect here, sorted."""
    return [(name, OPTIONS[name].note) for name in options.no_effect]


def _iterations_with_mix(o: NpuOptions) -> str | None:
    if o.mix_compile_mode and o.iterations_per_loop != 1:
        return (
            f"option 'iterations_per_loop' = {o.iterations_per_loop} cannot be used with "
            "mix_compile_mode=True; set iterations_per_loop=1 or mix_compile_mode=False"
        )
    return None


def _iterations_with_lazy_recompile(o: NpuOptions) -> str | None:
    mode = o.get("dynamic_graph_execute_mode")
    if o.get("dynamic_input") and mode == "lazy_recompile" and o.iterations_per_loop != 1:
        return (
            f"option 'iterations_per_loop' = {o.iterations_per_loop} cannot be used with "
            "dynamic_graph_execute_mode='lazy_recompile'; set iterations_per_loop=1"
        )
    return None


def _both_precision_modes(o: NpuOptions) -> str | None:
    if o.precision_mode is not None and o.precision_mode_v2 is not None:
        return (
            f"options 'precision_mode' = {o.precision_mode!r} and 'precision_mode_v2' = "
            f"{o.precision_mode_v2!r} cannot both be given; keep only one of them"
        )
    return None


def _mixlist_needs_mix(o: NpuOptions) -> str | None:
    if o.modify_mixlist and not o.is_mixed_precision:
        return (
            f"option 'modify_mixlist' = {o.modify_mixlist!r} needs a mixed-precision mode but "
            f"the precision mode is {o.effective_precision_mode!r}; set precision_mode to "
            f"{_MIX_MODES}, or drop modify_mixlist"
        )
    return None


def _implmode_list(o: NpuOptions) -> str | None:
    types = o.get("optypelist_for_implmode")
    if types and o.get("op_select_implmode") is None:
        return (
            f"option 'optypelist_for_implmode' = {types!r} requires op_select_implmode; "
            "set op_select_implmode (e.g. high_precision) or drop optypelist_for_implmode"
        )
    return None


def _needs_mix_compile(name: str, bad: Callable[[NpuOptions], bool]) -> Callable[..., str | None]:
    def rule(o: NpuOptions) -> str | None:
        if bad(o) and not o.mix_compile_mode:
            return (
                f"option {name!r} = {o.get(name)!r} requires mix_compile_mode=True; "
                f"set mix_compile_mode=True or drop {name}"
            )
        return None

    return rule


def _dump_needs_path(o: NpuOptions) -> str | None:
    if o.enable_dump and not o.dump_path:
        return "option 'enable_dump' = True requires dump_path; set dump_path to a directory"
    return None


def _dump_exclusive(o: NpuOptions) -> str | None:
    if o.enable_dump and o.enable_dump_debug:
        return (
            "options 'enable_dump' = True and 'enable_dump_debug' = True are mutually "
            "exclusive; turn one of them off"
        )
    return None


def _compress_weight(o: NpuOptions) -> str | None:
    conf = o.get("compress_weight_conf")
    if o.get("enable_compress_weight") and conf:
        return (
            f"option 'enable_compress_weight' = True cannot be combined with "
            f"compress_weight_conf = {conf!r}; use one of them"
        )
    return None


def _dynamic_dims_all_or_none(o: NpuOptions) -> str | None:
    given = [n for n in DYNAMIC_DIMS if n in o.explicit]
    if given and len(given) != len(DYNAMIC_DIMS):
        missing = ", ".join(n for n in DYNAMIC_DIMS if n not in given)
        return (
            f"option {given[0]!r} = {o.get(given[0])!r} needs all of "
            f"{', '.join(DYNAMIC_DIMS)}; also set {missing} or drop them all"
        )
    if given and o.mix_compile_mode:
        return (
            f"option 'input_shape' = {o.get('input_shape')!r} cannot be used with "
            "mix_compile_mode=True; drop the dynamic-dims options or mix_compile_mode"
        )
    if given and o.get("compile_dynamic_mode"):
        return (
            "option 'compile_dynamic_mode' = True cannot be used with the dynamic-dims options "
            "(input_shape, dynamic_dims, dynamic_node_type); drop one or the other"
        )
    return None


def _hybrid_mode(o: NpuOptions) -> str | None:
    if o.get("compile_hybrid_mode") == 1 and (
        o.get("dynamic_node_type") != 1 or not all(n in o.explicit for n in DYNAMIC_DIMS)
    ):
        return (
            "option 'compile_hybrid_mode' = 1 requires dynamic_node_type=1 with input_shape "
            "and dynamic_dims; set them or compile_hybrid_mode=0"
        )
    return None


def _mstune_work_path(o: NpuOptions) -> str | None:
    if o.get("mstune_mode") and "work_path" not in o.explicit:
        return (
            f"option 'mstune_mode' = {o.get('mstune_mode')!r} requires work_path; set work_path "
            "to an existing writable directory"
        )
    return None


_RULES: tuple[Callable[[NpuOptions], str | None], ...] = (
    _iterations_with_mix,
    _iterations_with_lazy_recompile,
    _both_precision_modes,
    _mixlist_needs_mix,
    _implmode_list,
    _needs_mix_compile("variable_placement", lambda o: o.variable_placement == "Host"),
    _needs_mix_compile("in_out_pair", lambda o: bool(o.in_out_pair)),
    _dump_needs_path,
    _dump_exclusive,
    _compress_weight,
    _dynamic_dims_all_or_none,
    _hybrid_mode,
    _mstune_work_path,
)

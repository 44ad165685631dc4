"""Constraints over resolved :class:`NpuOptions`; every error names option, value and fix.

With a dump switched on, ``dump_path`` is checked on the file system here, where options are
resolved (the adapter checks it when it creates the session): it must be an existing directory
this user can read and write, a relative path being taken from the working directory.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from tf2npu.config.checks import adapter_says
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


def _dump_switch(o: NpuOptions) -> str | None:
    """The dump switch that is on (``enable_dump`` first), or ``None``."""
    if o.enable_dump:
        return "enable_dump"
    return "enable_dump_debug" if o.enable_dump_debug else None


def _dump_exclusive(o: NpuOptions) -> str | None:
    if o.enable_dump and o.enable_dump_debug:
        return (
            "options 'enable_dump' = True and 'enable_dump_debug' = True are mutually exclusive "
            "(the adapter's docs allow one of them per session); set enable_dump=False to "
            "collect overflow data, or enable_dump_debug=False to dump tensors"
        )
    return None


def _dump_needs_path(o: NpuOptions) -> str | None:
    switch = _dump_switch(o)
    if switch is None or o.dump_path:
        return None
    return f"option {switch!r} = True needs dump_path; " + adapter_says(
        "if use dump function, dump_path must be set.",
        "set dump_path to an existing directory you can read and write, e.g. dump_path=./dump "
        "after mkdir dump",
    )


def _dump_path_usable(o: NpuOptions) -> str | None:
    """The adapter's ``CheckPath``: an existing directory with read and write permission."""
    path = o.dump_path
    if _dump_switch(o) is None or not path:
        return None
    subject = f"option 'dump_path' = {path!r}"
    if not os.path.isabs(path):
        subject += f" (relative to the working directory: {os.path.abspath(path)!r})"
    if not os.path.isdir(path):
        what = "is a file, not a directory" if os.path.exists(path) else "does not exist"
        return f"{subject} {what}; " + adapter_says(
            f"the path {path} is not directory.",
            f"create the directory first (mkdir -p {path}) or set dump_path to an existing one",
        )
    if not os.access(path, os.R_OK | os.W_OK):
        return f"{subject} is not readable and writable by this user; " + adapter_says(
            f"the path {path} does't have read, write permissions.",
            f"give yourself both (chmod u+rw {path}) or set dump_path to another directory",
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
    _needs_mix_compile("in_out_pair", lambda o: bool(o.get("in_out_pair"))),
    _dump_exclusive,
    _dump_needs_path,
    _dump_path_usable,
    _compress_weight,
    _dynamic_dims_all_or_none,
    _hybrid_mode,
    _mstune_work_path,
)

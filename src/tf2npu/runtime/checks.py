"""What a run spec will use, checked before the script starts: option values, the files
options name, and the variables sessions will read.

The engine reads these only when the script first creates a session or compiles a graph: a typo
would surface after the script's set-up ran, with nothing done. ``tf2npu run`` (and the
commands that run a spec in-process) and a child started on a spec file
(``python -m tf2npu.runtime.job SPEC.json``) apply the same checks, from here.
"""

from __future__ import annotations

from collections.abc import Mapping

from tf2npu.config.options import OPTIONS, Value
from tf2npu.config.sources import (
    check_env_option,
    from_cli,
    from_env,
    option_text,
    single_rank_environment,
)
from tf2npu.errors import ConfigError

__all__ = ["check_environment", "check_option_files", "check_options", "check_values"]


def check_options(
    options: tuple[str, ...], env: Mapping[str, str], flags: Mapping[str, str] | None = None
) -> None:
    """Every check below on a spec's ``KEY=VALUE`` options and the run's environment.

    Raises:
        tf2npu.errors.UsageError: an item that is not ``KEY=VALUE`` of a known option.
        tf2npu.errors.ConfigError: a value, file or variable the run would reject.
    """
    overrides = dict(from_cli(options))
    check_values(overrides, flags)
    check_environment({**env, **single_rank_environment(env)}, overrides)
    check_option_files(overrides)


def check_values(overrides: Mapping[str, Value], flags: Mapping[str, str] | None = None) -> None:
    """Check each ``--option`` value against the option's allowed values, before the script runs.

    :func:`tf2npu.runtime.configure` has parsed keys and types; the allowed values (such as the
    precision modes) are checked here so a typo fails before a long run starts, not at the first
    session. Combinations are left to the session, where the script's own settings are known.
    ``flags`` says how the user spelled an option set by a flag (for the message).
    """
    for name, value in overrides.items():
        fix = OPTIONS[name].check(value)
        if fix is None:
            continue
        flag = (flags or {}).get(name)
        given = f"{flag} {option_text(value)}" if flag else f"--option {name}={option_text(value)}"
        raise ConfigError(f"{given}: not a valid value; {fix}")


def check_environment(env: Mapping[str, str], overrides: Mapping[str, Value]) -> None:
    """The variables the sessions will read (``RANK_SIZE``, ``AOE_MODE``, ...), checked now.

    Sessions read them when the script creates them; a bad value would stop the run there.
    """
    _, fallback = from_env(env)
    for name, value in fallback.items():
        if name not in overrides:
            check_env_option(name, value)


def check_option_files(values: Mapping[str, Value | None]) -> None:
    """Read and validate the files ``fusion_switch_file`` and ``modify_mixlist`` name, now.

    The engine reads them only when it first compiles a graph; a typo in a path would surface
    after the graph was parsed, or after the script's set-up ran, with nothing done.
    """
    from tf2npu.config.fusion_switch import FusionSwitch
    from tf2npu.config.mixlist import Mixlist
    from tf2npu.graph.fusion import known_rules

    mixlist = values.get("modify_mixlist")
    if isinstance(mixlist, str) and mixlist:
        Mixlist.load(mixlist)
    switch = values.get("fusion_switch_file")
    if isinstance(switch, str) and switch:
        FusionSwitch.load(switch, known_rules())

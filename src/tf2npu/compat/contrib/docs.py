"""Markdown views of the contrib table, pasted into ``docs/tf1-compat.md``.

The doc is checked against these renderings by a test, so the table there cannot drift from
what ``tf2npu run`` really provides. Regenerate with
``python -m tf2npu.compat.contrib.docs``.
"""

from __future__ import annotations

from tf2npu.compat.contrib import table


def _target_text(target: str) -> str:
    if target.startswith("tf."):
        return f"`{target}`"
    module, _, attr = target.partition(":")
    if module.startswith("tf2npu."):
        return f"tf2npu (`{module}.{attr}`)"
    return f"`{module}.{attr}`"


def provided_markdown() -> str:
    """The provided symbols: contrib name, TF 2.15 target, difference."""
    rows = [
        "| `tf.contrib` symbol | resolves to | difference from TF 1.15 |",
        "| --- | --- | --- |",
    ]
    for sym in table.PROVIDED:
        rows.append(
            f"| `{sym.module}.{sym.name}` | {_target_text(sym.target)} | {sym.note or 'none'} |"
        )
    return "\n".join(rows) + "\n"


def aliases_markdown() -> str:
    """The contrib modules served by a separate package when it is installed."""
    rows = ["| `tf.contrib` module | package | notes |", "| --- | --- | --- |"]
    for alias in table.ALIASES:
        rows.append(f"| `{alias.module}` | `{alias.package}` | {alias.note} |")
    return "\n".join(rows) + "\n"


def not_provided_markdown() -> str:
    """The modules and symbols with specific advice."""
    rows = ["| not provided | what to do instead |", "| --- | --- |"]
    for miss in table.NOT_PROVIDED:
        what = f"tf.contrib.{miss.module}" + (f".{miss.name}" if miss.name else " (module)")
        advice = miss.advice.replace("|", "\\|")
        rows.append(f"| `{what}` | {advice} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(provided_markdown())
    print(aliases_markdown())
    print(not_provided_markdown())

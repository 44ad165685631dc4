"""What a run left in its report folder, read as findings (TF-free).

``tf2npu run --report-dir DIR`` writes ``run_summary.json`` and, when some op is unsupported,
``check_result.tf.json`` (the adapter's list of ops the device does not run, with a reason). A
run with ``enable_dump_debug`` leaves an overflow dump; a profile leaves ``op_summary_*.csv``.
Each structured check here reports rows of :mod:`tf2npu.debug.doctor.symptoms`.

A run on this machine does not fail everywhere the device does: a table or a variable the
input pipeline uses runs on the host beside the pipeline here, while on the device the
initialisation runs on the device. ``check_result.tf.json`` shows where such ops went (code 3,
"in the dataset-initialisation graph"), so doctor warns of the device failure (a *predicted*
finding: at most a warning, its cause starting with "on the device").
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tf2npu.artifacts.run_summary import SUMMARY_FILE, Race, RunSummary
from tf2npu.config.jsonfile import parse_json
from tf2npu.debug.doctor.checks import op_summary_findings
from tf2npu.debug.doctor.symptoms import BY_ID
from tf2npu.errors import ConfigError, UsageError
from tf2npu.findings import Finding, Where
from tf2npu.fs import kind_of, read_regular

__all__ = [
    "CHECK_RESULT",
    "SUMMARY",
    "RunDir",
    "check_run",
    "read_run_dir",
]

SUMMARY = SUMMARY_FILE
CHECK_RESULT = "check_result.tf.json"
_DATASET_GRAPH = "dataset-initialisation graph"
_TABLE_OPS = frozenset({"HashTableV2", "HashTable", "MutableHashTableV2", "MutableHashTable",
                        "MutableDenseHashTableV2", "MutableHashTableOfTensorsV2"})  # fmt: skip
_VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp"})
_LOSS_SCALE_FLOOR = 1.0
"""ExponentialUpdateLossScaleManager never goes below 1: a scale there kept dropping."""
_MAX_CSV = 20
"""op_summary files read from one folder at most."""


@dataclass(frozen=True, slots=True)
class RunDir:
    """A report folder's files, parsed."""

    path: Path
    summary: RunSummary | None
    ops: tuple[Mapping[str, Any], ...]
    """``check_result.tf.json``'s ``op`` entries (empty when the file is absent)."""

    def op_type(self, node: str) -> str:
        """The type check_result gives ``node`` (``""`` when it does not list it)."""
        for op in self.ops:
            if op.get("name") == node:
                return str(op.get("type", ""))
        return ""

    @property
    def options(self) -> Mapping[str, Any]:
        return self.summary.options if self.summary is not None else {}


def read_run_dir(path: str | Path) -> RunDir:
    """Parse ``path``'s ``run_summary.json`` and ``check_result.tf.json``.

    Raises:
        UsageError: ``path`` is not a folder, holds neither file, or a file is not valid JSON.
    """
    folder = Path(path)
    fix = "give the --report-dir of a tf2npu run (default ./tf2npu-run)"
    if not folder.is_dir():
        what = "does not exist"
        if folder.exists():
            kind = "a file" if folder.is_file() else kind_of(folder.stat().st_mode)
            what = f"is {kind}, not a folder"
        raise UsageError(f"--run-dir {str(path)!r} {what}; {fix}")
    summary = _json(folder / SUMMARY)
    check = _json(folder / CHECK_RESULT)
    if summary is None and check is None and not _csv_files(folder):
        raise UsageError(
            f"--run-dir {str(path)!r} holds no {SUMMARY}, {CHECK_RESULT} or op_summary_*.csv; {fix}"
        )
    ops = check.get("op", []) if isinstance(check, Mapping) else []
    entries = tuple(op for op in ops if isinstance(op, Mapping))
    if not isinstance(summary, Mapping):
        return RunDir(folder, None, entries)
    unread = RunSummary.first_unreadable(summary)
    if unread is not None:
        raise _shape_error(folder / SUMMARY, unread)
    return RunDir(folder, RunSummary.from_json(summary), entries)


def _json(path: Path) -> Any:
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return parse_json(read_regular(path).decode("utf-8"), str(path))
    except OSError as exc:  # NotRegularFile: a FIFO or device named like the file
        raise UsageError(
            f"{path} cannot be read ({exc.strerror or exc}); give the --report-dir of a tf2npu run"
        ) from None
    except (ConfigError, UnicodeDecodeError) as exc:
        raise UsageError(
            f"{path} is not valid JSON ({exc}); was it written by tf2npu run?"
        ) from None


def check_run(run: RunDir) -> list[Finding]:
    """Every finding the folder's files give.

    Raises:
        UsageError: a file holds JSON of another shape than tf2npu run writes (a number where
            a list belongs), or an op_summary CSV is no regular file.
    """
    try:
        found = list(_check_result(run))
    except (TypeError, AttributeError, KeyError, ValueError) as exc:
        raise _shape_error(run.path / CHECK_RESULT, f"{type(exc).__name__}: {exc}") from None
    if run.summary is not None:
        found += _summary(run.summary, run.path)
        found += _overflows(run)
    for csv_path in _csv_files(run.path):
        try:
            text = read_regular(csv_path).decode("utf-8", errors="replace")
        except OSError as exc:
            raise UsageError(f"{csv_path} cannot be read ({exc.strerror or exc})") from None
        found += op_summary_findings(text, str(csv_path))
    return found


def _shape_error(path: Path, what: str) -> UsageError:
    return UsageError(
        f"{path} is JSON, but not as tf2npu run writes it ({what}); "
        "give the --report-dir of a tf2npu run, or remove the edited file"
    )


def _check_result(run: RunDir) -> Iterator[Finding]:
    """Tables and variables the input pipeline's graph holds: the device initialises them on
    the device and fails to read them on the host (seed 000 cases 01 and 02)."""
    mixed = run.options.get("mix_compile_mode") is True
    evidence = str(run.path / CHECK_RESULT)
    for op in run.ops:
        reason = op.get("not_support_reason")
        message = reason.get("message", "") if isinstance(reason, Mapping) else ""
        if _DATASET_GRAPH not in str(message):
            continue
        where = Where(node=str(op.get("name", "")), op_type=str(op.get("type", "")))
        if where.op_type in _TABLE_OPS and not mixed:
            yield BY_ID["table_split"].predicted(where, f"{evidence}: {where.node}: {message}")
        elif where.op_type in _VARIABLE_OPS:
            yield BY_ID["variable_in_preprocessing"].predicted(
                where, f"{evidence}: {where.node}: {message}"
            )


def _summary(summary: RunSummary, folder: Path) -> Iterator[Finding]:
    source = str(folder / SUMMARY)
    nonfinite = summary.nonfinite
    if nonfinite is not None:
        fetches = ", ".join(nonfinite.fetches)
        where = Where(node=nonfinite.fetches[0] if nonfinite.fetches else "")
        text = f"{source}: nonfinite {fetches} first at step {nonfinite.first_step}"
        yield BY_ID["nonfinite_loss"].finding(where, text)
    for name in summary.options_unknown:
        yield BY_ID["unknown_option"].finding(Where(node=name), f"{source}: options_unknown")
    for fault in summary.injected_faults:
        yield BY_ID["injected_faults"].finding(Where(), f"{source}: injected fault {fault.spec}")
    for race in summary.races:
        yield BY_ID["variable_race"].finding(_race_where(race), f"{source}: {race.message}")
    yield from _loss_scale(summary, source)
    status = summary.exit_status
    if status is not None and status != 0:
        yield BY_ID["script_failed"].finding(Where(), f"{source}: exit_status {status}")


def _race_where(race: Race) -> Where:
    """The read of a ``races`` entry, at its source line (``file:line in function``)."""
    file, _, line = race.read_at.partition(" in ")[0].rpartition(":")
    return Where(
        node=race.read,
        op_type=race.read_op,
        file=file if line.isdigit() else "",
        line=int(line) if line.isdigit() else 0,
    )


def _loss_scale(summary: RunSummary, source: str) -> Iterator[Finding]:
    """The scale fell to its floor while steps were skipped, or most steps were skipped: once
    the warm-up (the leading skips while a dynamic scale comes down) is left out."""
    scale = summary.loss_scale
    if scale is None:
        return
    warmup = scale.warmup
    skipped = scale.skipped_after_warmup
    steps = summary.steps
    after = steps - (warmup.skipped_steps if warmup else 0)
    value = scale.scale
    floored = value is not None and value <= _LOSS_SCALE_FLOOR and skipped > 0
    if floored or (after >= 20 and skipped * 2 > after):
        text = f"{source}: loss scale {value}, {scale.skipped_steps} of {steps} steps skipped"
        if warmup:
            text += f" ({warmup.skipped_steps} in the warm-up)"
        yield BY_ID["loss_scale_keeps_dropping"].finding(Where(), text)
    elif warmup:
        text = (
            f"{source}: steps 1-{warmup.skipped_steps} skipped while the loss scale came down "
            f"to {warmup.last_scale:g} (after step 1: {warmup.first_scale:g}); then "
            f"{skipped} of {max(after, 0)} steps skipped"
        )
        yield BY_ID["loss_scale_warmup"].finding(Where(), text)


def _overflows(run: RunDir) -> Iterator[Finding]:
    """The first overflow of each overflow dump the run wrote (``tf2npu overflow``'s rule)."""
    from tf2npu.debug.overflow import analysis as overflow

    for folder in _dump_folders(run):
        if not overflow.scan(folder).records:
            continue
        report = overflow.analyse(folder, limit=1)
        for item in report.overflows:
            file, _, line = item.created_at.rpartition(":")
            where = Where(
                node=item.user_ops[0] if item.user_ops else item.op_name,
                op_type=item.op_type,
                file=file if line.isdigit() else item.created_at,
                line=int(line) if line.isdigit() else 0,
            )
            yield replace(
                BY_ID["float_overflow"].finding(where, f"{folder}: {item.op_name}"),
                fix=_overflow_fix(item.fix.black_list, item.fix.keep_dtype_ops),
            )


def _overflow_fix(black_list: Sequence[str], keep: Sequence[str]) -> str:
    if black_list:
        listed = ", ".join(json.dumps(t) for t in black_list)
        return (
            f'write {{"black-list": {{"to-add": [{listed}]}}}} to a JSON file and pass it as '
            "modify_mixlist (tf2npu run --modify-mixlist FILE), or create "
            f"{', '.join(keep) or 'the op'} under npu_scope.keep_dtype_scope()"
        )
    return BY_ID["float_overflow"].fix


def _dump_folders(run: RunDir) -> list[Path]:
    """The folders the run dumped into, as written, else relative to the report folder."""
    names: list[object] = [d.path for d in run.summary.dumps] if run.summary is not None else []
    if run.options.get("enable_dump_debug") is True:
        names.append(run.options.get("dump_path"))
    folders = []
    for name in dict.fromkeys(n for n in names if isinstance(n, str) and n):
        for candidate in (Path(name), run.path / name):
            if candidate.is_dir():
                folders.append(candidate)
                break
    return folders


def _csv_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("**/op_summary_*.csv"))[:_MAX_CSV]

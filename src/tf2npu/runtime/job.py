"""A run as a value: a :class:`RunSpec` goes in, :func:`run` runs it, a :class:`RunOutcome`
comes out.

This is the composition root of ``tf2npu run``: it puts the spec's settings in force, adds the
instruments the spec asks for to the :class:`~tf2npu.runtime.context.RuntimeContext` (a
profile, a graph export, a golden dump, a run record, a step limit, a collective counter),
enters the TF 1.15 environment, runs the script in this process, closes the instruments and
assembles the run summary from what each of them gathered. The command line is the CLI's
business (:mod:`tf2npu.cli.run` checks it and turns it into a spec, then prints the outcome);
a tool that starts runs builds a spec, never a command line of its own.

A spec is plain data (paths, strings, numbers and the engine overrides the CLI loaded) and a
file (:mod:`tf2npu.artifacts.run_spec`): ``python -m tf2npu.runtime.job SPEC.json`` runs it in a
child process as ``tf2npu run --quiet`` runs its command line (the same notes on stderr, the
same ``run_summary.json``, whose ``error`` section says why a run failed, the same exit status;
the terminal summary is the CLI's, not printed). The tools that start child runs (the trials of
verify and bisect, the ranks of ``--ranks``) write a spec file and start :func:`child_command`
on it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tf2npu import exit_codes, runtime
from tf2npu.artifacts import run_spec
from tf2npu.artifacts.run_summary import SUMMARY_FILE, RunSummary
from tf2npu.atomic import write_text_atomic
from tf2npu.config.faults import FaultSpec
from tf2npu.config.overrides import EngineOverrides
from tf2npu.config.sources import single_rank_environment
from tf2npu.errors import Tf2NpuError, UsageError
from tf2npu.runtime.checks import check_options
from tf2npu.runtime.script import run_script
from tf2npu.runtime.tflog import quiet_tensorflow

__all__ = ["RunOutcome", "RunSpec", "child_command", "main", "run"]


@dataclass(frozen=True)
class RunSpec:
    """One run of a script, checked: every path absolute, every option already validated."""

    script: Path
    """Absolute path of the script."""
    script_args: tuple[str, ...]
    report_dir: Path
    """Absolute, so a script that changes directory does not move it."""
    options: tuple[str, ...]
    """``KEY=VALUE`` NpuOptimizer overrides (``--option`` and the flags that stand for one)."""
    npu: bool
    execution: str
    strict_options: bool = False
    golden_dump: Path | None = None
    """``--no-npu --dump DIR``: the stock sessions' dump folder."""
    dump_step: str = ""
    profile: Path | None = None
    """``--profile DIR``: the profile's output folder."""
    profile_steps: str = ""
    export_graph: Path | None = None
    """``--export-graph DIR``: each compiled graph's GraphDefs go there."""
    deterministic: bool = False
    record: bool = False
    """``--record`` or ``TF2NPU_RECORD=1``."""
    max_steps: int | None = None
    """``TF2NPU_MAX_STEPS``: stop the script after this many training steps."""
    dropout_off: bool = False
    """``TF2NPU_DROPOUT_OFF=1``: every dropout keeps every element."""
    engine: EngineOverrides = field(default_factory=EngineOverrides)
    """A trial's fusion instances off, nodes kept in float32, injected faults."""
    verbose: bool = False
    """TensorFlow's own log lines are shown (``--verbose``)."""
    quiet: bool = False
    """No notes on stderr besides warnings and errors (``--quiet``)."""

    def to_json(self) -> dict[str, Any]:
        """The spec as ``run_spec.json``'s object (:mod:`tf2npu.artifacts.run_spec`)."""
        return run_spec.encode(self)

    @classmethod
    def from_json(cls, data: object, source: str = run_spec.SPEC_FILE) -> RunSpec:
        """The spec :meth:`to_json` made ``data`` from; a bad key or value is a ConfigError."""
        return run_spec.decode(cls, data, source)


@dataclass(frozen=True)
class RunOutcome:
    """What a run ended with: the script's status and the summary the instruments made."""

    status: int
    """The script's exit status (0, its ``sys.exit`` code, or 1 after an exception)."""
    summary: RunSummary
    """``run_summary.json``'s content; what could not be written (a full disk) is its
    ``write_errors``, the one-device job variables the run set are its ``job_environment``."""
    summary_path: Path
    summary_written: bool

    @property
    def complete(self) -> bool:
        """Every artifact of the run was written."""
        return self.summary_written and self.summary.complete

    @property
    def exit_code(self) -> int:
        """What ``tf2npu run`` exits with: the script's status, or 1 (findings) when the script
        succeeded but an artifact was not written."""
        if not self.complete and self.status == exit_codes.OK:
            return exit_codes.FINDINGS
        return self.status


def run(spec: RunSpec) -> RunOutcome:
    """Run ``spec`` in this process (the script is ``__main__``) and summarise it.

    The spec's values are taken as checked (:mod:`tf2npu.cli.run` checks a command line);
    the settings and instruments it puts in force stay in the context in force afterwards.
    """
    runtime.configure(
        npu=spec.npu,
        options=spec.options,
        execution=spec.execution,
        report_dir=spec.report_dir,
        strict_options=spec.strict_options,
        engine=spec.engine,
    )
    job = single_rank_environment(os.environ)
    _add_instruments(spec)
    if spec.deterministic:  # read once, when TensorFlow is imported
        from tf2npu.runtime.determinism import ENVIRONMENT

        os.environ.update(ENVIRONMENT)
    quiet_tensorflow(verbose=spec.verbose)
    _enter_tf1_environment()
    _add_run_controls(spec)
    if spec.engine.faults:
        _warn_faults(spec.engine.faults)
    if job and not spec.quiet:
        shown = " ".join(f"{k}={v}" for k, v in job.items())
        print(f"tf2npu run: one-device job environment: {shown} (were unset)", file=sys.stderr)
    stats = runtime.reset_stats()
    # A stale list from an earlier run in this folder would name instances this run never had.
    from tf2npu.runtime.instances import FUSION_INSTANCES_FILE  # the graph engine: not at start-up

    (spec.report_dir / FUSION_INSTANCES_FILE).unlink(missing_ok=True)
    _add_collective_counter()
    start = time.perf_counter()
    os.environ.update(job)
    try:
        end = run_script(spec.script, spec.script_args)
    finally:
        for name in job:  # the script's lifetime only: a caller of run() keeps its environment
            os.environ.pop(name, None)
    wall = time.perf_counter() - start
    dumps, unwritten = _finish_dumps()
    status = end.status
    own = {
        "error": end.error or _write_error(unwritten),
        "job_environment": job,
        "dumps": dumps,
        "write_errors": unwritten,
    }
    parts = [stats.summary(wall_seconds=wall, exit_status=status), own]
    parts += [instrument.summary_part() for instrument in runtime.context().instruments]
    summary = RunSummary.from_parts(parts)
    path = spec.report_dir / SUMMARY_FILE
    written = _write_summary(path, summary)
    return RunOutcome(status, summary, path, written)


def _write_error(unwritten: list[str]) -> dict[str, Any] | None:
    """The ``error`` section of a run whose script succeeded but whose artifacts were not all
    written (a full disk)."""
    if not unwritten:
        return None
    return {"kind": "write", "type": "OSError", "message": "; ".join(unwritten), "where": None}


def _add_instruments(spec: RunSpec) -> None:
    """The instruments the spec asks for before any session exists."""
    ctx = runtime.context()
    if spec.profile is not None:
        from tf2npu.runtime.profile import install

        install(ctx, spec.profile, steps=spec.profile_steps)
    if spec.export_graph is not None:
        from tf2npu.runtime.graph_export import GraphExport

        ctx.extra_instruments.append(GraphExport(spec.export_graph))
    if spec.golden_dump is not None:
        from tf2npu.runtime.dump import golden_dump

        ctx.extra_instruments.append(golden_dump(spec.golden_dump, ctx, spec.dump_step))


def _add_run_controls(spec: RunSpec) -> None:
    """What ``--deterministic``, ``--record``, ``TF2NPU_MAX_STEPS`` and
    ``TF2NPU_DROPOUT_OFF`` add to the run (TensorFlow is imported by now)."""
    from tf2npu.runtime import dropout, record
    from tf2npu.runtime.determinism import CLI_FLAG

    ctx = runtime.context()
    if spec.deterministic:
        ctx.determinism.requested_by = CLI_FLAG
    recorder = None
    if spec.record:
        recorder = record.RunRecorder(spec.report_dir, ctx)
        ctx.extra_instruments.append(recorder)
    if spec.max_steps is not None:
        ctx.extra_instruments.append(record.StepLimit(spec.max_steps, ctx, recorder))
    if spec.dropout_off:
        dropout.install()


def _add_collective_counter() -> None:
    """In a rank of a multi-rank job, the distributed instrument and a collective counter
    (the summary's ``distributed``) added to the instruments."""
    from tf2npu.config.cluster import current

    cluster = current()
    if not cluster.distributed:
        return
    from tf2npu.runtime.distributed.instrument import CollectiveCounter, DistributedInstrument

    counter = CollectiveCounter(cluster.rank, cluster.size)
    runtime.context().extra_instruments.extend([DistributedInstrument(), counter])


def _warn_faults(faults: Iterable[FaultSpec]) -> None:
    """Loud, whatever --quiet says: numbers from this run are wrong on purpose."""
    specs = "; ".join(spec.text for spec in faults)
    print(
        f"tf2npu run: WARNING: FAULT INJECTION ACTIVE ({specs}): NPU sessions compute wrong "
        "values on purpose (a drill); see injected_faults in the run summary",
        file=sys.stderr,
    )


def _finish_dumps() -> tuple[list[dict[str, Any]], list[str]]:
    """Wait for the dump writers; what each dump folder received, and what could not be
    written (said on stderr: a full disk ends the run with exit 1, not a traceback)."""
    from tf2npu.runtime.dump import dump_figures

    ctx = runtime.context()
    unwritten = ctx.close()
    for problem in unwritten:
        print(f"tf2npu run: error: {problem}", file=sys.stderr)
    return dump_figures(ctx), unwritten


def _enter_tf1_environment() -> None:
    """``import tensorflow`` gives the TF1 API, ``npu_bridge`` imports; sessions are hooked.

    The compat layer is activated even with ``--no-npu`` so a migrated script's ``npu_bridge``
    imports still work; :func:`tf2npu.runtime.configure` has already told the hook to keep every
    session stock in that case.
    """
    try:
        from tf2npu import compat

        compat.activate()
        runtime.install()
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != "tensorflow":
            raise
        raise UsageError(
            "tf2npu run needs TensorFlow 2.15, which is not installed; install it with "
            "pip install 'tf2npu[tf]'"
        ) from None


def _write_summary(path: Path, summary: RunSummary) -> bool:
    try:
        write_text_atomic(path, json.dumps(summary.to_json(), indent=2) + "\n")
    except OSError as exc:
        print(f"tf2npu run: error: cannot write {path}: {exc.strerror}", file=sys.stderr)
        return False
    return True


def child_command(spec_file: Path) -> list[str]:
    """The command line of a child process that runs the spec file ``spec_file`` (which
    :func:`tf2npu.artifacts.run_spec.write` wrote): what every tool starting child runs uses."""
    return [sys.executable, "-m", "tf2npu.runtime.job", str(spec_file)]


def main(argv: list[str] | None = None) -> int:
    """``python -m tf2npu.runtime.job SPEC.json``: run the spec file; the run's exit status.

    The spec's options are checked first, as ``tf2npu run`` checks its command line
    (:func:`tf2npu.runtime.checks.check_options`). A user error before the script starts (a
    spec file that is not one, an option value, file or variable the run would reject) is
    printed as ``tf2npu run`` prints it and written beside the spec file as
    ``start_error.json`` (:func:`tf2npu.artifacts.run_spec.write_start_error`), for the tool
    that started the child; no summary is written.
    """
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            f"usage: python -m tf2npu.runtime.job SPEC.json (got {len(args)} arguments: "
            f"{args!r}); SPEC.json is a {run_spec.SPEC_FILE} a tool wrote for a child run",
            file=sys.stderr,
        )
        return exit_codes.USAGE
    spec_file = Path(args[0])
    try:
        spec = run_spec.read(RunSpec, spec_file)
        if not spec.script.is_file():
            raise UsageError(
                f"run spec {str(spec_file)!r}: script = {str(spec.script)!r} is not an existing "
                "file; write the spec of an existing training script"
            )
        check_options(spec.options, os.environ)
    except Tf2NpuError as exc:
        _said(exc)
        run_spec.write_start_error(spec_file.parent, exc, exc.exit_code)
        return exc.exit_code
    try:
        return run(spec).exit_code
    except Tf2NpuError as exc:
        _said(exc)
        return exc.exit_code


def _said(exc: Tf2NpuError) -> None:
    context = "".join(f"\n  ({note})" for note in getattr(exc, "__notes__", ()))
    print(f"tf2npu run: error: {exc}{context}", file=sys.stderr)


if __name__ == "__main__":
    # Run as a script this file is ``__main__``, a second copy of this module; the importable
    # one is the one the runtime and the spec's class belong to.
    from tf2npu.runtime.job import main as _main

    sys.exit(_main())

"""``tf2npu verify``: does a migrated script still train like the original? (TF-free driver)

Four recorded trials (:mod:`tf2npu.debug.trials`), each a fresh ``tf2npu run`` subprocess:

1. and 2. the original with stock sessions (``--no-npu``), twice: how far two runs of the same
   script differ is its **noise floor**;
3. the migrated script through the adapter with ``precision_mode=must_keep_origin_dtype``: the
   graph engine's placement, fusions and NPU ops, but no dtype change. It must match the
   original within ``max(1e-5, 2 x noise floor)`` relative (1e-5 when the runs are deterministic
   and the floor is 0);
4. the migrated script with its own precision mode (or the one ``--option`` gives): float16
   rounding allowed, ``|x - y| <= rtol*max(|y|, m)`` with ``rtol`` 2% by default and ``m``
   the median magnitude of that scalar over the original's steps (so a loss that crosses or
   nears 0 is judged against the size it has, not by a fixed slack).

Each check compares the scalars the scripts fetched per training step (the loss they print) and
the trainable variables at the end, and names the first step and the first variable that
diverge. :func:`write_report` writes ``verify.json``, whose keys are documented in
``docs/verify.md``.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tf2npu.artifacts.run_summary import Race
from tf2npu.atomic import write_text_atomic
from tf2npu.debug.records import StepRecord, loss_name, read_steps, read_variables
from tf2npu.debug.trials import Trial, TrialResult, TrialTimeout, run_trial, trial_spec
from tf2npu.errors import UsageError
from tf2npu.procs import CHILDREN

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "EXACT_TOLERANCE",
    "PRECISION_TOLERANCE",
    "RUN_DIR",
    "VARIABLE_TOLERANCE",
    "Check",
    "Comparison",
    "RunRecord",
    "VerifyPlan",
    "compare",
    "compared_steps",
    "explain_with_fusions_off",
    "judge",
    "needs_fusions_off",
    "report_json",
    "run_verify",
    "scalar_scales",
    "variable_differences",
    "verdict",
    "write_report",
]

EXACT_TOLERANCE = 1e-5
"""Relative agreement the ``must_keep_origin_dtype`` run needs when the runs are deterministic."""
PRECISION_TOLERANCE = 0.02
"""Default relative tolerance of the run in the script's precision mode (2% of the loss)."""
VARIABLE_TOLERANCE = 1e-3
"""How far the ``must_keep_origin_dtype`` run's final variables may be from the original's,
relative to the model's largest variable magnitude: the reordered float32 sums of fused ops,
amplified over the steps by adaptive optimizers."""
NOISE_FACTOR = 2.0
"""Two runs give one sample of the original's run-to-run spread; a third could differ more."""
FUSION_ROUNDING_LIMIT = 1e-2
"""The largest difference (relative, as the checks measure it) that a run matching the original
with every fusion off is put down to the fused kernels' float32 rounding; beyond it, a fusion
changes the result (find it with ``tf2npu bisect fusion``)."""
FUSIONS_OFF = "keep-origin-dtype-fusions-off"
"""The extra trial of a failed ``keep_origin_dtype`` check: the same run with every fusion off."""
FUSIONS_OFF_SWITCH = {"Switch": {"GraphFusion": {"ALL": "off"}, "UBFusion": {"ALL": "off"}}}
VERDICTS = ("pass", "fail", "inconclusive")
VERIFY_FILE = "verify.json"
RUN_DIR = "{run_dir}"
"""In the script arguments, replaced by each run's own folder: ``--model-dir {run_dir}/model``
keeps the runs' checkpoints apart (an Estimator would resume from another run's)."""
_TINY = 1e-12
_ORIGIN = "precision_mode=must_keep_origin_dtype"


def migrated_cwd(cwd: Path, original: Path, migrated: Path) -> Path | None:
    """Where the migrated runs start when verify is called from inside the original's tree.

    A script run as its README says (``cd example && python main.py``, reading ``./data`` and
    importing ``..``) needs its own tree's folder: with ``cwd`` the original's folder or one above
    it, the migrated runs start at the same place in the migrated tree (the original's folder
    relative to ``cwd`` ends the migrated's folder), when that place is a copy of ``cwd`` (a
    whole-folder ``tf2npu migrate``: every entry of ``cwd`` is there, tf2npu's own report folders
    aside). None (the caller's folder) otherwise: ``tf2npu migrate train.py -o npu/train.py``
    copies one file, so its ``./data`` is only in the caller's folder.
    """
    here = cwd.resolve()
    try:
        inside = original.resolve().parent.relative_to(here)
    except ValueError:
        return None
    folder = migrated.resolve().parent
    depth = len(inside.parts)
    if depth and folder.parts[-depth:] != inside.parts:
        return None
    root = folder.parents[depth - 1] if depth else folder
    if root == here or not root.is_dir():
        return None
    copied = {entry.name for entry in root.iterdir()}
    for entry in here.iterdir():
        if entry.name not in copied and not entry.name.startswith((".", "tf2npu-")):
            return None
    return root


@dataclass(frozen=True)
class VerifyPlan:
    """What to run: the two scripts, their arguments and the trial settings."""

    original: Path
    migrated: Path
    out: Path
    script_args: Sequence[str] = ()
    options: Sequence[str] = ()
    """``KEY=VALUE`` items for the migrated runs (a ``precision_mode`` here is the one the
    precision check uses)."""
    steps: int | None = None
    """Training steps per run (the spec's ``max_steps``); None: as many as the script runs."""
    deterministic: bool = True
    dropout_off: bool = False
    rtol: float = PRECISION_TOLERANCE
    timeout: float | None = None

    def trial(self, name: str, script: Path, *, npu: bool, options: Sequence[str] = ()) -> Trial:
        report_dir = self.out / name
        args = tuple(arg.replace(RUN_DIR, str(report_dir)) for arg in self.script_args)
        cwd = (
            migrated_cwd(Path.cwd(), self.original, self.migrated)
            if script == self.migrated
            else None
        )
        spec = trial_spec(
            script,
            args,
            report_dir=report_dir,
            npu=npu,
            options=options,
            deterministic=self.deterministic,
            max_steps=self.steps,
            dropout_off=self.dropout_off,
        )
        return Trial(spec, cwd=cwd)

    def fusions_off_trial(self) -> Trial:
        """The ``keep-origin-dtype`` trial with every fusion off (a switch file in ``out``)."""
        switch = self.out / "fusions_off.json"
        switch.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(switch, json.dumps(FUSIONS_OFF_SWITCH) + "\n")
        kept = [o for o in self.options if not o.startswith(("precision_mode=", "fusion_switch"))]
        options = [*kept, _ORIGIN, f"fusion_switch_file={switch}"]
        return self.trial(FUSIONS_OFF, self.migrated, npu=True, options=options)

    def trials(self) -> dict[str, Trial]:
        """The four trials by name, in the order they are judged."""
        kept = [o for o in self.options if not o.startswith("precision_mode=")]
        return {
            "original-1": self.trial("original-1", self.original, npu=False),
            "original-2": self.trial("original-2", self.original, npu=False),
            "keep-origin-dtype": self.trial(
                "keep-origin-dtype", self.migrated, npu=True, options=[*kept, _ORIGIN]
            ),
            "precision-mode": self.trial(
                "precision-mode", self.migrated, npu=True, options=self.options
            ),
        }


@dataclass(frozen=True)
class RunRecord:
    """What one trial recorded."""

    name: str
    result: TrialResult
    steps: list[StepRecord]
    variables: dict[str, np.ndarray[Any, Any]]
    info: dict[str, Any]
    """``record.json``: dropout ops, where a step limit stopped the run."""

    @classmethod
    def load(cls, name: str, result: TrialResult) -> RunRecord:
        """The records ``result`` left (empty when the run wrote none)."""
        directory = result.report_dir
        steps = read_steps(directory) if (directory / "steps.jsonl").is_file() else []
        has_variables = (directory / "variables.npz").is_file()
        variables = read_variables(directory) if has_variables else {}
        try:
            info = json.loads((directory / "record.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            info = {}
        return cls(name, result, steps, variables, info)

    @property
    def dropout_ops(self) -> int:
        return int(self.info.get("dropout_ops", 0))

    @property
    def races(self) -> tuple[Race, ...]:
        """The variable races the run named (its summary's ``races``)."""
        summary = self.result.summary
        return summary.races if summary is not None else ()

    @property
    def precision_mode(self) -> str:
        """The precision mode the run's NPU sessions used (as its summary lists it)."""
        options = self.result.summary.options if self.result.summary is not None else {}
        mode = options.get("precision_mode")
        return str(mode) if mode else "allow_fp32_to_fp16 (the default)"


@dataclass(frozen=True)
class Comparison:
    """How far a candidate run is from a reference run."""

    steps_compared: int
    max_rel_diff: float
    first_divergent_step: int | None
    first_divergent_scalar: str | None
    max_rel_diff_variables: float
    first_divergent_variable: str | None
    notes: tuple[str, ...] = ()


def _rel(x: float, y: float) -> float:
    if math.isnan(x) and math.isnan(y):
        return 0.0
    if not (math.isfinite(x) and math.isfinite(y)):
        return 0.0 if x == y else math.inf
    return abs(x - y) / max(abs(y), _TINY)


def compared_steps(steps: Sequence[StepRecord]) -> list[StepRecord]:
    """The records compared step by step: training runs that fetched scalars, else the last
    evaluation's runs (:func:`tf2npu.debug.records.loss_series`' choice)."""
    train = [r for r in steps if r.train and r.scalars]
    if train:
        return train
    evaluation = [r for r in steps if not r.train and r.scalars]
    return [r for r in evaluation if r.signature == evaluation[-1].signature] if evaluation else []


def scalar_scales(run: RunRecord) -> dict[str, float]:
    """The median magnitude of each fetched scalar over ``run``'s compared steps: the size the
    precision check measures a step's difference against when the step's own value is near 0
    (a WGAN critic loss crossing 0, a loss trained down to 1e-4), where a relative error alone
    fails every rounding and a fixed absolute slack passes every divergence."""
    values: dict[str, list[float]] = {}
    for record in compared_steps(run.steps):
        for name in record.scalars:
            value = record.value(name)
            if math.isfinite(value):
                values.setdefault(name, []).append(abs(value))
    return {name: statistics.median(found) for name, found in values.items()}


def compare(
    reference: RunRecord,
    candidate: RunRecord,
    within: Callable[[str, float, float], bool],
    variable_tolerance: float = math.inf,
) -> Comparison:
    """Compare ``candidate`` with ``reference``: ``within(name, x, y)`` says whether the
    candidate's value ``x`` of the scalar the reference calls ``name`` agrees with the reference's
    ``y``; variables agree within ``variable_tolerance`` (see :func:`_compare_variables`)."""
    ref, cand = compared_steps(reference.steps), compared_steps(candidate.steps)
    notes = []
    if len(ref) != len(cand):
        notes.append(
            f"{reference.name} recorded {len(ref)} steps with scalars, {candidate.name} {len(cand)}"
        )
    worst, first_step, first_scalar = 0.0, None, None
    for index, (r, c) in enumerate(zip(ref, cand, strict=False)):
        for label, name, x, y in _pairs(r, c):
            worst = max(worst, _rel(x, y))
            if first_step is None and not within(name, x, y):
                first_step, first_scalar = c.step or index + 1, label
    if first_step is None and len(ref) != len(cand):
        first_step = min(len(ref), len(cand)) + 1
    if not ref and not cand:
        notes.append(
            "no step fetched a float scalar in both runs (a run of only summaries, or a loss "
            "computed after the last step), so no scalar was compared: this check judges the "
            "trainable variables only; fetch the loss in sess.run, or run more steps"
        )
    var_worst, first_var, var_notes = _compare_variables(
        reference.variables, candidate.variables, variable_tolerance
    )
    return Comparison(
        min(len(ref), len(cand)),
        worst,
        first_step,
        first_scalar,
        var_worst,
        first_var,
        (*notes, *var_notes),
    )


def _pairs(r: StepRecord, c: StepRecord) -> list[tuple[str, str, float, float]]:
    """The scalars both runs fetched in this step (by name; else the loss of each), as (label,
    the reference's name, candidate value, reference value)."""
    common = [name for name in r.scalars if name in c.scalars]
    if common:
        return [(name, name, c.value(name), r.value(name)) for name in common]
    r_name, c_name = loss_name([r]), loss_name([c])
    if r_name is None or c_name is None:
        return []
    return [(f"{c_name} (vs {r_name})", r_name, c.value(c_name), r.value(r_name))]


def _compare_variables(
    reference: Mapping[str, np.ndarray[Any, Any]],
    candidate: Mapping[str, np.ndarray[Any, Any]],
    tolerance: float,
) -> tuple[float, str | None, list[str]]:
    """The largest variable difference (:func:`variable_differences`) and the first variable
    (in the reference's order) beyond ``tolerance``."""
    if not reference or not candidate:
        missing = "the reference" if not reference else "the candidate"
        return 0.0, None, [f"no variables recorded by {missing}: variables not compared"]
    worst, first, notes = 0.0, None, []
    for name, rel in variable_differences(reference, candidate).items():
        if rel is None:
            notes.append(f"variable {name!r} is missing or has another shape in the candidate")
            first = first or name
            continue
        worst = max(worst, rel)
        if first is None and rel > tolerance:
            first = name
    return worst, first, notes


def variable_differences(
    reference: Mapping[str, np.ndarray[Any, Any]],
    candidate: Mapping[str, np.ndarray[Any, Any]],
) -> dict[str, float | None]:
    """Per variable of ``reference`` (in its order): the largest element difference, relative
    to the largest magnitude among all the reference's variables (inf for a NaN); None when
    the candidate lacks it or has it in another shape.

    Relative to the model's scale, not each variable's own: a variable whose gradient is zero
    (attention's key bias, invariant under softmax) holds only rounding noise, which Adam
    scales up to learning-rate-sized steps; judged by its own tiny magnitude it would fail any
    comparison.
    """
    import numpy as np  # not at the CLI's start-up

    scale = max((float(np.max(np.abs(v))) for v in reference.values() if v.size), default=0.0)
    found: dict[str, float | None] = {}
    for name, y in reference.items():
        x = candidate.get(name)
        if x is None or x.shape != y.shape:
            found[name] = None
            continue
        diff = float(np.max(np.abs(x.astype(np.float64) - y))) if y.size else 0.0
        found[name] = math.inf if math.isnan(diff) else diff / max(scale, _TINY)
    return found


@dataclass
class Check:
    """One verdict of ``tf2npu verify`` (a row of ``verify.json``'s ``checks``)."""

    name: str
    passed: bool
    tolerance: float | None
    noise_floor: float
    comparison: Comparison | None = None
    precision_mode: str | None = None
    variable_tolerance: float | None = None
    notes: list[str] = field(default_factory=list)
    inconclusive: bool = False
    """Passed only because the original's noise widened the tolerance: it proves nothing."""
    cause: str | None = None
    """Why a ``keep_origin_dtype`` difference arose, when verify found out: ``fusion_rounding``,
    ``fusion``, ``race`` or ``divergence`` (see :func:`explain_with_fusions_off`)."""

    def to_json(self) -> dict[str, Any]:
        c = self.comparison
        return {
            "name": self.name,
            "passed": self.passed,
            "first_divergent_step": c.first_divergent_step if c else None,
            "first_divergent_scalar": c.first_divergent_scalar if c else None,
            "first_divergent_variable": c.first_divergent_variable if c else None,
            "max_rel_diff": _number(c.max_rel_diff) if c and c.steps_compared else None,
            "max_rel_diff_variables": _number(c.max_rel_diff_variables) if c else None,
            "steps_compared": c.steps_compared if c else 0,
            "tolerance": self.tolerance,
            "variable_tolerance": self.variable_tolerance,
            "noise_floor": _number(self.noise_floor),
            "precision_mode": self.precision_mode,
            "inconclusive": self.inconclusive,
            "cause": self.cause,
            "notes": [*self.notes, *(c.notes if c else ())],
        }


def _number(value: float) -> float | str:
    """JSON has no Infinity: a non-finite difference is written as text."""
    return value if math.isfinite(value) else str(value)


def run_verify(
    plan: VerifyPlan, progress: Callable[[str], None] = lambda _: None
) -> tuple[list[Check], dict[str, RunRecord]]:
    """Run the trials (two at a time) and judge them.

    Raises:
        UsageError: the original script failed, or recorded nothing to compare.
    """
    trials = plan.trials()
    timeouts = TrialTimeout(plan.timeout)
    progress(f"running {len(trials)} trials into {plan.out}; {timeouts.describe()} ...")
    originals = {n: t for n, t in trials.items() if n.startswith("original")}
    results = _run_two_at_a_time(originals, timeouts.seconds())
    for result in results.values():
        timeouts.note(result.status, result.seconds)
    others = {n: t for n, t in trials.items() if n not in originals}
    results |= _run_two_at_a_time(others, timeouts.seconds())
    results = {name: results[name] for name in trials}
    runs = {name: RunRecord.load(name, result) for name, result in results.items()}
    for name in ("original-1", "original-2"):
        _require_original(runs[name], plan.original)
    checks = judge(runs, plan)
    exact = next(c for c in checks if c.name == "keep_origin_dtype")
    if needs_fusions_off(exact, runs["keep-origin-dtype"]):
        progress(f"keep_origin_dtype failed: one more run with every fusion off ({FUSIONS_OFF})")
        trial = plan.fusions_off_trial()
        runs[FUSIONS_OFF] = RunRecord.load(FUSIONS_OFF, run_trial(trial, plan.timeout))
        explain_with_fusions_off(exact, runs["original-1"], runs[FUSIONS_OFF])
    return checks, runs


def needs_fusions_off(check: Check, run: RunRecord) -> bool:
    """Whether a failed ``keep_origin_dtype`` check is worth a run with fusions off: the
    migrated run finished, and its graphs had fusions."""
    fusions = run.result.summary.fusions if run.result.summary is not None else {}
    return not check.passed and check.comparison is not None and bool(fusions)


def explain_with_fusions_off(check: Check, reference: RunRecord, off: RunRecord) -> None:
    """Set ``check.cause`` from the run with every fusion off (``off``) and say it in a note.

    The same run without fusions matching the original means the difference is the fusions':
    their float32 rounding when it stays within :data:`FUSION_ROUNDING_LIMIT` (the check then
    passes, saying so), else a fusion that changes the result. Still diverging without fusions
    means a real divergence, or a variable race when a run named one.
    """
    on = check.comparison
    if on is None:
        return
    tolerance = check.tolerance if check.tolerance is not None else EXACT_TOLERANCE
    variable_tolerance = check.variable_tolerance or VARIABLE_TOLERANCE
    if not off.result.ok:
        check.notes.append(f"the run with every fusion off exited {off.result.status}: "
                           f"{off.result.failure()} (its output: {off.result.log})")  # fmt: skip
        return
    without = compare(reference, off, lambda _, x, y: _rel(x, y) <= tolerance, variable_tolerance)
    diff_on, diff_off = _worst(on), _worst(without)
    same = without.first_divergent_step is None and without.first_divergent_variable is None
    figures = f"fusion rounding: {diff_on:.3g}; with fusions off: {diff_off:.3g}"
    if same and diff_on <= FUSION_ROUNDING_LIMIT:
        check.passed, check.cause = True, "fusion_rounding"
        check.notes.append(
            f"{figures} (within {tolerance:.3g}): the fused kernels add in another order; "
            "with every fusion off the migrated script matches the original"
        )
    elif same:
        check.cause = "fusion"
        check.notes.append(
            f"a fusion changes the result: {diff_on:.3g} with fusions on, {diff_off:.3g} with "
            "every fusion off, beyond rounding; find the rule and instance with "
            "tf2npu bisect fusion"
        )
    else:
        check.cause = "race" if any(r.races for r in (reference, off)) else "divergence"
        where = _divergence(without)
        check.notes.append(
            f"not fusion rounding: with every fusion off the run still differs ({diff_off:.3g}"
            f"{where})"
        )


def _worst(comparison: Comparison) -> float:
    return max(comparison.max_rel_diff, comparison.max_rel_diff_variables)


def _divergence(comparison: Comparison) -> str:
    parts = []
    if comparison.first_divergent_step is not None:
        parts.append(f"first divergent step {comparison.first_divergent_step}")
    if comparison.first_divergent_variable is not None:
        parts.append(f"first divergent variable {comparison.first_divergent_variable}")
    return "; " + ", ".join(parts) if parts else ""


def _run_two_at_a_time(trials: Mapping[str, Trial], timeout: float) -> dict[str, TrialResult]:
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {name: pool.submit(run_trial, t, timeout) for name, t in trials.items()}
        try:
            return {name: future.result() for name, future in futures.items()}
        except BaseException:  # Ctrl-C, SIGTERM: stop the trials, or leaving `with` waits on them
            for future in futures.values():
                future.cancel()
            CHILDREN.stop_all()
            raise


def _require_original(run: RunRecord, script: Path) -> None:
    result = run.result
    if not result.ok:
        raise UsageError(
            f"the original script {str(script)!r} exited {result.status} under "
            f"`tf2npu run --no-npu`: {result.failure()}; fix it (or the arguments after --) "
            f"first (its output: {result.log})"
        )
    if not compared_steps(run.steps) and not run.variables:
        raise UsageError(
            f"the original script {str(script)!r} fetched no float scalar and left no trainable "
            "variables: nothing to compare. Fetch the loss in sess.run (or print it), as "
            "training scripts do"
        )


def judge(runs: Mapping[str, RunRecord], plan: VerifyPlan) -> list[Check]:
    """The three checks from the four runs' records."""
    first, second = runs["original-1"], runs["original-2"]
    noise = compare(first, second, lambda _, x, y: True)
    floor = max(noise.max_rel_diff, noise.max_rel_diff_variables)
    if math.isinf(floor):
        floor = 0.0
    exact_tol = max(EXACT_TOLERANCE, NOISE_FACTOR * floor)
    exact_var_tol = max(VARIABLE_TOLERANCE, NOISE_FACTOR * floor)
    noise_check = Check("original_noise", True, None, floor, noise)
    if plan.deterministic and floor > EXACT_TOLERANCE:
        noise_check.notes.append(_noisy_original(first, plan))

    def exact(_: str, x: float, y: float) -> bool:
        return _rel(x, y) <= exact_tol

    rtol = max(plan.rtol, exact_tol)
    scales = scalar_scales(first)

    def loose(name: str, x: float, y: float) -> bool:
        if not (math.isfinite(x) and math.isfinite(y)):
            return _rel(x, y) == 0.0
        return abs(x - y) <= rtol * max(abs(y), scales.get(name, 0.0), _TINY)

    checks = [noise_check]
    noisy = floor > EXACT_TOLERANCE
    for name, key, within, tol, var_tol, widened in (
        ("keep_origin_dtype", "keep-origin-dtype", exact, exact_tol, exact_var_tol, noisy),
        ("precision_mode", "precision-mode", loose, rtol, rtol, noisy and rtol > plan.rtol),
    ):
        check = _check(name, first, runs[key], (within, tol, var_tol), floor, plan)
        if widened and check.passed:
            check.inconclusive = True
            check.notes.append(
                f"inconclusive: runs of the original do not repeat (noise floor {floor:.3g}), so "
                f"this check passed only within a tolerance widened to {tol:.3g}; make the "
                "original repeat (a random seed, --deterministic, --dropout-off) for a verdict"
            )
        checks.append(check)
    _name_races(checks, runs, noisy)
    return checks


def _name_races(checks: Sequence[Check], runs: Mapping[str, RunRecord], noisy: bool) -> None:
    """A variable race any run named, as a note of each check it can explain: a failed or
    inconclusive one, and the original's noise when its runs do not repeat."""
    races: dict[str, Race] = {}
    for run in runs.values():
        for race in run.races:
            races.setdefault(race.variable, race)
    if not races:
        return
    notes = [
        f"variable race: {race.message}; a run can resolve it either way; fix: {race.fix}"
        for race in races.values()
    ]
    for check in checks:
        noise = check.name == "original_noise"
        if (noise and noisy) or (not noise and (not check.passed or check.inconclusive)):
            check.notes.extend(notes)


def verdict(checks: Sequence[Check]) -> str:
    """``fail`` when a check failed, ``inconclusive`` when one passed only because the original
    does not repeat, else ``pass``."""
    if not all(c.passed for c in checks):
        return "fail"
    return "inconclusive" if any(c.inconclusive for c in checks) else "pass"


def _check(
    name: str,
    reference: RunRecord,
    run: RunRecord,
    judged: tuple[Callable[[str, float, float], bool], float, float],
    floor: float,
    plan: VerifyPlan,
) -> Check:
    within, tolerance, variable_tolerance = judged
    mode = run.precision_mode
    if not run.result.ok:
        note = (
            f"the migrated script exited {run.result.status}: {run.result.failure()} "
            f"(its output: {run.result.log})"
        )
        return Check(name, False, tolerance, floor, None, mode, variable_tolerance, [note])
    comparison = compare(reference, run, within, variable_tolerance)
    passed = comparison.first_divergent_step is None and comparison.first_divergent_variable is None
    check = Check(name, passed, tolerance, floor, comparison, mode, variable_tolerance)
    dropout = max(reference.dropout_ops, run.dropout_ops)
    if not passed and dropout and not plan.dropout_off:
        check.notes.append(
            f"the scripts build dropout ({dropout} dropout ops): the original and the migrated "
            "script draw different masks (npu_ops.dropout draws its own), so their losses "
            "differ whatever the migration; re-run with --dropout-off (keep_prob=1 / rate=0 "
            "in both scripts)"
        )
    return check


def _noisy_original(run: RunRecord, plan: VerifyPlan) -> str:
    summary = run.result.summary
    state = summary.deterministic if summary is not None else None
    problems = "; ".join(state.problems) if state is not None else ""
    if problems:
        return f"the two original runs differ although --deterministic asked: {problems}"
    if run.dropout_ops and not plan.dropout_off:
        return (
            f"the two original runs differ although deterministic, and the script builds "
            f"dropout ({run.dropout_ops} dropout ops) from an unseeded generator; re-run with "
            "--dropout-off"
        )
    return "the two original runs differ although deterministic (unseeded random ops?)"


def report_json(
    checks: Sequence[Check], runs: Mapping[str, RunRecord], plan: VerifyPlan
) -> dict[str, Any]:
    """``verify.json``: ``verdict`` (pass, fail or inconclusive), ``checks``, and how it was
    run."""
    return {
        "verdict": verdict(checks),
        "checks": [c.to_json() for c in checks],
        "original": str(plan.original),
        "migrated": str(plan.migrated),
        "script_args": list(plan.script_args),
        "steps": plan.steps,
        "deterministic": plan.deterministic,
        "dropout_off": plan.dropout_off,
        "runs": {
            name: {
                "report_dir": str(run.result.report_dir),
                "status": run.result.status,
                "seconds": round(run.result.seconds, 3),
                "steps": len(compared_steps(run.steps)),
            }
            for name, run in runs.items()
        },
    }


def write_report(report: Mapping[str, Any], out: Path) -> Path:
    """Write ``verify.json`` into ``out`` (atomically); returns its path."""
    path = out / VERIFY_FILE
    write_text_atomic(path, json.dumps(report, indent=2) + "\n")
    return path

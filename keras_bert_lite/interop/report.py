"""Matching checkpoint tensors to model weights (`restore_weights`, through which both checkpoint
formats load), and reporting what did not match (`LoadReport`, `CheckpointMismatchError`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from keras_bert_lite.interop.mapping import WeightSpec

Shape = tuple[int, ...]

# Names listed per category in an error message; the full lists stay on the report.
_MAX_LISTED = 12


def _listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    more = len(items) - _MAX_LISTED
    return f"{shown}, ... ({more} more)" if more > 0 else shown


@dataclasses.dataclass(frozen=True)
class LoadReport:
    """What a checkpoint load did, by checkpoint tensor name.

    Attributes:
        source: the checkpoint path that was read.
        loaded: names assigned to model weights.
        missing: names the model needs that the checkpoint lacks (those weights are unchanged).
        unexpected: names in the checkpoint that the model does not use (optimizer slots and
            `global_step` are never listed: they are skipped by design).
        mismatched: (name, checkpoint shape, model shape) for tensors whose shape does not fit.
        sliced: (name, checkpoint shape, model shape) for position/segment tables with more rows
            in the checkpoint than the model uses; the first rows were loaded.
        config_mismatches: settings that shapes cannot reveal (e.g. attention heads, activation)
            and that differ between the checkpoint's config and the model.
    """

    source: str
    loaded: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    mismatched: tuple[tuple[str, Shape, Shape], ...] = ()
    sliced: tuple[tuple[str, Shape, Shape], ...] = ()
    config_mismatches: tuple[str, ...] = ()

    def problems(self, allowed_unexpected: Iterable[str] = ()) -> list[str]:
        """One line per kind of problem; empty when the checkpoint fits the model exactly.

        Args:
            allowed_unexpected: name prefixes whose unused tensors are not a problem (e.g. the
                pre-training heads when loading an encoder).
        """
        kinds = {
            "config differs": self.config_mismatches,
            "shape mismatch": [f"{n} (checkpoint {list(c)} vs model {list(m)})" for n, c, m in self.mismatched],
            "missing from the checkpoint": self.missing,
            "unexpected in the checkpoint": [n for n in self.unexpected if not n.startswith(tuple(allowed_unexpected))],
        }
        return [f"{kind} ({len(names)}): {_listing(names)}" for kind, names in kinds.items() if names]

    @property
    def ok(self) -> bool:
        """True when every weight was loaded and every checkpoint tensor was used."""
        return not self.problems()

    def raise_for_problems(self, allowed_unexpected: Iterable[str] = ()) -> None:
        """Raises `CheckpointMismatchError` if `problems(allowed_unexpected)` is not empty."""
        problems = self.problems(allowed_unexpected)
        if problems:
            raise CheckpointMismatchError(self, problems)

    def __str__(self) -> str:
        lines = [f"{self.source}: loaded {len(self.loaded)} tensor(s)"]
        if self.sliced:
            lines.append("sliced: " + ", ".join(f"{n} {list(c)} -> {list(m)}" for n, c, m in self.sliced))
        return "\n  ".join(lines + self.problems())


class CheckpointMismatchError(ValueError):
    """A checkpoint does not fit the model; `.report` holds the full `LoadReport`, `.problems` one
    line per kind of problem."""

    def __init__(self, report: LoadReport, problems: list[str]):
        self.report = report
        self.problems = problems
        super().__init__(
            f"Checkpoint {report.source} does not match the model:\n  " + "\n  ".join(problems)
            + "\n(Pass strict=False to load what fits and get the report instead.)"
        )


def restore_weights(
    specs: Sequence[WeightSpec],
    shapes: Mapping[str, Shape],
    read: Callable[[str], np.ndarray],
    *,
    strict: bool,
    source: str,
    config_mismatches: Sequence[str] = (),
) -> LoadReport:
    """Loads checkpoint tensors into the weights described by `specs`.

    Args:
        specs: the model's weights and their checkpoint names (see `mapping.weight_specs`).
        shapes: name -> shape of every tensor the checkpoint offers (skipped names removed).
        read: returns a tensor's value by name (a clear error if it cannot be read).
        strict: raise `CheckpointMismatchError` on any problem, before assigning anything.
        source: the checkpoint's path, for messages.
        config_mismatches: problems already found by comparing configs.

    Returns:
        The `LoadReport`. All values are read and checked before any weight is assigned, so an
        unreadable checkpoint leaves the model unchanged.

    Raises:
        CheckpointMismatchError: in strict mode, naming every problem.
        ValueError: naming `source` and the tensor, for a tensor that is not floating point or
            holds NaN or infinite values (never assigned: they would poison every output).
    """
    loaded, missing, mismatched, sliced = [], [], [], []
    for spec in specs:
        if spec.name not in shapes:
            missing.append(spec.name)
            continue
        shape, want = tuple(int(d) for d in shapes[spec.name]), spec.checkpoint_shape
        if shape != want:
            # Only a position/segment table may have more rows than the model uses.
            if not (spec.sliceable and len(shape) == 2 and shape[1:] == want[1:] and shape[0] > want[0]):
                mismatched.append((spec.name, shape, want))
                continue
            sliced.append((spec.name, shape, want))
        loaded.append(spec)
    known = {spec.name for spec in specs}
    report = LoadReport(
        source=source,
        loaded=tuple(spec.name for spec in loaded),
        missing=tuple(missing),
        unexpected=tuple(sorted(name for name in shapes if name not in known)),
        mismatched=tuple(mismatched),
        sliced=tuple(sliced),
        config_mismatches=tuple(config_mismatches),
    )
    if strict:
        report.raise_for_problems()
    values = [_checked_value(spec, read(spec.name), source) for spec in loaded]
    for spec, value in zip(loaded, values):
        spec.variable.assign(value)
    return report


def _checked_value(spec: WeightSpec, value: np.ndarray, source: str) -> np.ndarray:
    """`value` laid out and cast for `spec.variable`; a clear error for values no model can use."""
    value = np.asarray(value)
    # bfloat16 and float8 arrays (from ml_dtypes) are not NumPy floating types but are weights.
    if value.dtype.kind != "f" and not value.dtype.name.startswith(("bfloat", "float")):
        raise ValueError(f"{source}: tensor {spec.name} has dtype {value.dtype}; weights must be floating point.")
    if spec.transpose:
        value = value.T
    if spec.sliceable:
        value = value[: spec.variable.shape[0]]
    with np.errstate(over="ignore"):  # values beyond the variable's dtype are reported below
        value = value.astype(spec.variable.dtype)
    if not np.isfinite(value).all():
        raise ValueError(
            f"{source}: tensor {spec.name} holds NaN or infinite values (or values beyond "
            f"{spec.variable.dtype}); the checkpoint is corrupt or from a diverged run."
        )
    return value

"""A target's proven protection: per property, what the probe found and its evidence,
as the store keeps it (the `protection` of each target in the result document)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cryptbench.model.json_types import JsonObject
from cryptbench.model.vocabulary import Property, Verdict

PROTECTING = (Verdict.HIDDEN, Verdict.DETECTED)


@dataclass(frozen=True)
class PropertyFinding:
    """One property's proven verdict. "Protects" means hidden, or for tampering detected."""

    verdict: Verdict
    evidence: str  # what the probe saw, in words
    # the sizes probe's mapping, plaintext bytes -> backing bytes (None: no file of its
    # own); the block, in bytes, where the verdict is BLOCK
    detail: JsonObject = field(default_factory=dict)
    # what the backend's documentation promises, and where it says so; None: nothing declared
    declared: tuple[Verdict, str] | None = None

    def to_json(self) -> JsonObject:
        d: JsonObject = {"verdict": str(self.verdict), "evidence": self.evidence}
        if self.detail:
            d["detail"] = self.detail
        if self.declared is not None:
            d["declared"] = {"verdict": str(self.declared[0]), "source": self.declared[1]}
        return d

    @classmethod
    def from_json(cls, d: JsonObject) -> PropertyFinding:
        declared = d.get("declared")
        said = None if declared is None else (Verdict(declared["verdict"]), declared["source"])
        return cls(Verdict(d["verdict"]), d["evidence"], d.get("detail", {}), said)

    @property
    def disagrees(self) -> bool:
        """The probe proved the opposite of what the documentation promises (hidden against
        shown, exactly or to a block; a byte's change caught against returned silently); an
        undecided probe disagrees with nothing."""
        if self.declared is None or self.protects is None:
            return False
        if self.declared[0] is Verdict.CHECKED:  # caught, though by a checksum
            return self.verdict is Verdict.SILENT
        return self.protects != (self.declared[0] in PROTECTING)

    def as_declared(self, declared: tuple[Verdict, str]) -> PropertyFinding:
        """With the documentation's promise. A flipped byte the probe saw caught is caught
        by a checksum where the backend declares no more (Verdict.CHECKED): the probe sees
        the read fail, not whether a key was needed to make it pass."""
        if self.verdict is Verdict.DETECTED and declared[0] is Verdict.CHECKED:
            return replace(self, verdict=Verdict.CHECKED, declared=declared)
        return replace(self, declared=declared)

    @property
    def protects(self) -> bool | None:
        """True where the property is hidden (tampering: detected), False where shown (to
        the byte or to a block; tampering: silent), None where the probe could not decide."""
        if self.verdict is Verdict.UNKNOWN:
            return None
        return self.verdict in PROTECTING


@dataclass(frozen=True)
class Protection:
    """Every probed property of one target, and how its backing was read."""

    findings: dict[Property, PropertyFinding]
    sight: str  # how the backing was read: "directory", "ext4 image", "LUKS container", …
    # the positive control failed on this run's unencrypted targets: the findings are no evidence
    broken: str | None = None
    # protection/space.py's measure(): "fixed" (bytes allocated before the data sets),
    # "tree" and "large" ({"files", "data", "used": bytes, and from the pipeline
    # "baseline_used": bytes, "ratio"}), "granularity" ({"bytes", "blocks", "files", "of"}),
    # from the pipeline "baseline_fixed" (bytes);
    # {} where not measured
    space: JsonObject = field(default_factory=dict)
    # the target whose backing was read for these findings, where it was another of the
    # same format (Backend.same_format_as); None: its own
    probed_on: str | None = None

    def to_json(self) -> JsonObject:
        d: JsonObject = {"sight": self.sight, **{str(p): f.to_json() for p, f in self.findings.items()}}
        if self.broken:
            d["broken"] = self.broken
        if self.probed_on:
            d["probed_on"] = self.probed_on
        if self.space:
            d["space"] = self.space
        return d

    @classmethod
    def from_json(cls, d: JsonObject) -> Protection:
        findings = {p: PropertyFinding.from_json(d[str(p)]) for p in Property if str(p) in d}
        return cls(findings, d.get("sight", ""), d.get("broken"), d.get("space", {}), d.get("probed_on"))

"""What the doctor found: ``Finding`` values and the collection that dedupes them and applies
``select`` / ``ignore``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pitstop.codes import BY_NAME, CODES
from pitstop.errors import SettingError

RUN_TIME = tuple(code for code, entry in CODES.items() if "R" in entry.kinds)


def run_time_codes(items: Iterable[str], flag: str = "select") -> list[str]:
    """``items`` (codes, prefixes such as PIT1, or names such as stale-gradients; comma-separated
    strings allowed) as codes or prefixes; one that matches no run-time code is a usage error
    listing the valid ones."""
    out = []
    for item in (i.strip() for raw in items for i in str(raw).split(",")):
        if not item:
            continue
        code = BY_NAME[item.lower()].code if item.lower() in BY_NAME else item.upper()
        if not any(c.startswith(code) for c in RUN_TIME):
            raise SettingError(flag, f"{item!r} matches no run-time code; valid codes: {', '.join(RUN_TIME)} "
                                     f"(or a prefix such as PIT1, or a name such as stale-gradients)")
        out.append(code)
    return out


@dataclass
class Finding:
    """One mistake, deduplicated by (code, where); ``count`` = how many steps it was seen in."""

    code: str
    where: str
    message: str
    step: int | None = None  # first step seen (1-based)
    count: int = 1
    fix: str | None = None  # None: the catalogue's fix
    ranks: list[int] = field(default_factory=list)
    last_step: int | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return CODES[self.code].name

    @property
    def severity(self) -> str:
        return CODES[self.code].severity

    def to_dict(self) -> dict[str, Any]:
        """The JSON finding (docs/json.md)."""
        d: dict[str, Any] = {"code": self.code, "name": self.name, "severity": self.severity, "message": self.message,
             "where": self.where, "fix": self.fix or CODES[self.code].fix, "step": self.step, "count": self.count}
        if self.ranks:
            d["ranks"] = self.ranks
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Finding:
        return cls(d["code"], d["where"], d["message"], d.get("step"), d.get("count", 1), d.get("fix"),
                   list(d.get("ranks", [])))


class Findings:
    """Findings keyed by (code, where); ``step`` gives the step a finding is recorded at by default."""

    def __init__(self, select: Iterable[str] = (), ignore: Iterable[str] = (),
                 step: Callable[[], int] = lambda: 1) -> None:
        self.select, self.ignore = run_time_codes(select, "select"), run_time_codes(ignore, "ignore")
        self._step = step
        self._by_key: dict[tuple[str, str], Finding] = {}

    def wanted(self, code: str) -> bool:
        """Whether ``code`` passes ``select`` / ``ignore`` (codes or prefixes such as PIT1)."""
        return (not self.select or any(code.startswith(s) for s in self.select)) \
            and not any(code.startswith(s) for s in self.ignore)

    def found(self, code: str, where: str, message: str, *, step: int | None = None, fix: str | None = None) -> None:
        """Record (or count again) a finding; a code seen again in the same step is not recounted."""
        if not self.wanted(code):
            return
        step = self._step() if step is None else step
        f = self._by_key.get((code, where))
        if f is None:
            self._by_key[(code, where)] = Finding(code, where, message, step, 1, fix, last_step=step)
        elif f.last_step != step:
            f.count += 1
            f.last_step = step

    def set_count(self, code: str, where: str, count: int) -> None:
        """Overwrite the count of a recorded finding (no-op when it was not recorded)."""
        if (code, where) in self._by_key:
            self._by_key[(code, where)].count = count

    def codes(self) -> set[str]:
        return {code for code, _ in self._by_key}

    def get(self, code: str, where: str) -> Finding | None:
        return self._by_key.get((code, where))

    def values(self) -> list[Finding]:
        return list(self._by_key.values())

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def __iter__(self) -> Iterator[Finding]:
        return iter(list(self._by_key.values()))

    def __len__(self) -> int:
        return len(self._by_key)

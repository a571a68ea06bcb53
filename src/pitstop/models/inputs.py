"""Input specs (``float32[B,3,224,224]``, ``int64[B,128]{0,30522}``, joined with ``;``) and the
``Inputs`` value that carries a model's positional and keyword arguments."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from pitstop.errors import InputSpecError

DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32, "float": torch.float32, "float64": torch.float64,
    "double": torch.float64, "float16": torch.float16, "half": torch.float16,
    "bfloat16": torch.bfloat16, "int64": torch.int64, "long": torch.int64,
    "int32": torch.int32, "int": torch.int32, "int16": torch.int16, "int8": torch.int8,
    "uint8": torch.uint8, "bool": torch.bool,
}
DEFAULT_INT_RANGE = (0, 100)  # [lo, hi): small enough for any embedding with >= 100 rows
_TENSOR = re.compile(r"^\s*(?:([A-Za-z_][A-Za-z0-9_]*)\s*=\s*)?([A-Za-z0-9_]+)\s*\[([^\]]*)\]\s*(?:\{([^}]*)\})?\s*$")


@dataclass(frozen=True)
class TensorSpec:
    """One input tensor: dtype, dims (ints or ``"B"`` for the batch size), integer range, and the
    keyword it is passed as (``input_ids=int64[B,128]``; None: positional)."""

    dtype: str
    dims: tuple[int | str, ...]
    low: int | None = None
    high: int | None = None
    name: str | None = None

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise InputSpecError(
                "input", f"expected a dtype like float32 or int64, got {self.dtype!r} "
                f"(valid: {', '.join(sorted(set(DTYPES)))})"
            )

    def shape(self, batch_size: int) -> tuple[int, ...]:
        """The concrete shape for a batch size."""
        return tuple(batch_size if d == "B" else int(d) for d in self.dims)

    def make(self, batch_size: int, generator: torch.Generator) -> torch.Tensor:
        """A random tensor of this spec: normal floats, uniform integers in [low, high)."""
        dtype, shape = DTYPES[self.dtype], self.shape(batch_size)
        if dtype.is_floating_point:
            return torch.randn(shape, generator=generator).to(dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, generator=generator).bool()
        low, high = (self.low, self.high) if self.low is not None and self.high is not None else DEFAULT_INT_RANGE
        return torch.randint(low, high, shape, generator=generator, dtype=dtype)

    def __str__(self) -> str:
        rng = f"{{{self.low},{self.high}}}" if self.low is not None else ""
        return f"{self.name + '=' if self.name else ''}{self.dtype}[{','.join(map(str, self.dims))}]{rng}"


@dataclass(frozen=True)
class InputSpec:
    """A parsed input spec: one ``TensorSpec`` per argument (positional, or keyword when named);
    ``field`` names what it came from in error messages (``input``, ``target``: the CLI says the flag)."""

    tensors: tuple[TensorSpec, ...]
    field: str = "input"

    @property
    def fixed_batch(self) -> int | None:
        """The one batch size a spec without ``B`` can run (its first tensor's leading dim), else None."""
        if any("B" in t.dims for t in self.tensors):
            return None
        return int(self.tensors[0].dims[0])

    def check_batch(self, batch_size: int) -> None:
        """A spec without ``B`` measured at another batch size would report batches that never ran."""
        fixed = self.fixed_batch
        if fixed is not None and batch_size != fixed:
            example = f"{self.tensors[0].dtype}[B,...]"
            raise InputSpecError(self.field, f"{self} has no B, so its batch is always {fixed}, not {batch_size}; "
                                             f"write B for the batch dim (e.g. {example}) to vary it")

    def make(self, batch_size: int, seed: int = 0) -> Inputs:
        """Random inputs for a batch size, reproducible from ``seed``. A spec without ``B`` runs
        only at its own leading dim (``check_batch``); inputs too large to allocate are an
        ``InputSpecError``."""
        gen = torch.Generator().manual_seed(seed)
        try:
            made = [(t.name, t.make(batch_size, gen)) for t in self.tensors]
        except (RuntimeError, MemoryError, OverflowError, TypeError, ValueError) as exc:
            raise InputSpecError(self.field, f"cannot allocate {self} at batch {batch_size} "
                                             f"({type(exc).__name__}); use a smaller shape or batch size") from None
        return Inputs(tuple(t for name, t in made if name is None), {name: t for name, t in made if name})

    def __str__(self) -> str:
        return ";".join(map(str, self.tensors))


def parse_input_spec(text: str, field: str = "input") -> InputSpec:
    """Parse ``float32[B,3,224,224];int64[B,128]{0,30522}`` (a ``name=`` before a tensor makes it a
    keyword argument: ``input_ids=int64[B,128]{0,50257}``) into an ``InputSpec``; errors
    (``InputSpecError``, a ``SettingError``) name ``field``."""
    parts = [p for p in text.split(";") if p.strip()]
    if not parts:
        raise InputSpecError(field, "empty spec; expected e.g. 'float32[B,3,224,224]'")
    try:
        tensors = tuple(_parse_tensor(p) for p in parts)
    except InputSpecError as exc:
        raise InputSpecError(field, exc.problem) from None
    names = [t.name for t in tensors if t.name]
    if len(set(names)) != len(names):
        raise InputSpecError(field, f"a keyword appears twice in {text.strip()!r}")
    if any(t.name for t in tensors) and any(t.name is None for t in tensors[tensors.index(
            next(t for t in tensors if t.name)):]):
        raise InputSpecError(field, f"positional tensors come before keyword ones in {text.strip()!r}")
    return InputSpec(tensors, field)


def _parse_tensor(text: str) -> TensorSpec:
    match = _TENSOR.match(text)
    if not match:
        raise InputSpecError(
            "input", f"cannot parse {text.strip()!r}; expected DTYPE[DIMS] such as "
            "'float32[B,3,224,224]', 'int64[B,128]{0,30522}' or a keyword one, 'input_ids=int64[B,128]'"
        )
    name, dtype, dims_text, range_text = match.groups()
    dims = tuple(_parse_dim(d, text) for d in dims_text.split(",") if d.strip())
    if not dims:
        raise InputSpecError("input", f"{text.strip()!r} has no dimensions; write e.g. 'float32[B,16]'")
    spec = TensorSpec(dtype.lower(), dims, *_parse_range(range_text, text), name=name)
    if spec.low is not None and DTYPES[spec.dtype].is_floating_point:
        raise InputSpecError("input", f"a {{lo,hi}} range applies to integer dtypes, not {spec.dtype}")
    return spec


def _parse_dim(dim: str, text: str) -> int | str:
    dim = dim.strip()
    if dim.upper() == "B":
        return "B"
    if dim.isdigit() and 0 < int(dim) < 2**63:
        return int(dim)
    raise InputSpecError("input", f"dimension {dim!r} in {text.strip()!r} must be a positive integer "
                         "(below 2**63) or B")


def _parse_range(range_text: str | None, text: str) -> tuple[int | None, int | None]:
    if range_text is None:
        return None, None
    bounds = [b.strip() for b in range_text.split(",")]
    try:
        low, high = (int(b) for b in bounds)
    except ValueError:
        raise InputSpecError(
            "input", f"range {{{range_text}}} in {text.strip()!r} must be two integers {{lo,hi}}"
        ) from None
    if high <= low:
        raise InputSpecError("input", f"range {{{range_text}}} is empty; need lo < hi")
    return low, high


@dataclass
class Inputs:
    """A model's example inputs: ``model(*args, **kwargs)``."""

    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def coerce(cls, value: Any) -> Inputs:
        """Accept a tensor, a tuple/list of positional inputs, a dict of keyword inputs, or Inputs."""
        if isinstance(value, Inputs):
            return value
        if isinstance(value, torch.Tensor):
            return cls((value,))
        if isinstance(value, Mapping):
            return cls((), dict(value))
        if isinstance(value, Sequence) and not isinstance(value, str):
            if value and isinstance(value[-1], Mapping):  # positional inputs, then keyword ones
                return cls(tuple(value[:-1]), dict(value[-1]))
            return cls(tuple(value))
        raise InputSpecError(
            "input", f"example inputs must be a tensor, a tuple of tensors or a dict, got {type(value).__name__}"
        )

    def tensors(self) -> list[torch.Tensor]:
        """All tensors among the inputs."""
        values = [*self.args, *self.kwargs.values()]
        return [v for v in values if isinstance(v, torch.Tensor)]

    def batch_size(self) -> int | None:
        """Size of dim 0 shared by the tensor inputs, if any."""
        sizes = {t.shape[0] for t in self.tensors() if t.dim() > 0}
        return sizes.pop() if len(sizes) == 1 else None

    def map(self, fn: Any) -> Inputs:
        """Apply ``fn`` to every tensor input."""
        conv = lambda v: fn(v) if isinstance(v, torch.Tensor) else v  # noqa: E731
        return Inputs(tuple(conv(a) for a in self.args), {k: conv(v) for k, v in self.kwargs.items()})

    def with_batch_size(self, batch_size: int) -> Inputs:
        """Inputs resized along dim 0 (repeating rows as needed) to a new batch size."""
        current = self.batch_size()
        if current is None or current == batch_size:
            if current is None and self.tensors():
                raise InputSpecError(
                    "input", "cannot change the batch size: the example inputs do not share a dim-0 size; "
                             "give an input spec with a B dimension or a factory that takes batch_size"
                )
            return self
        def resize(t: torch.Tensor) -> torch.Tensor:
            reps = -(-batch_size // current)
            return t.repeat(reps, *([1] * (t.dim() - 1)))[:batch_size].clone()
        return self.map(resize)

    def describe(self) -> str:
        """A spec-like description, e.g. ``float32[8,3,224,224]``."""
        def one(v: Any) -> str:
            if isinstance(v, torch.Tensor):
                return f"{str(v.dtype).removeprefix('torch.')}[{','.join(map(str, v.shape))}]"
            return type(v).__name__
        parts = [one(a) for a in self.args] + [f"{k}={one(v)}" for k, v in self.kwargs.items()]
        return ";".join(parts) or "(no inputs)"

"""A stand-in for Hugging Face `datasets`: synthetic GLUE/MRPC held in memory (no download).

Only what the Hugging Face course scripts use: `load_dataset("glue", "mrpc")` -> a `DatasetDict` of
`train` / `validation` / `test` (sizes from `PITSTOP_FAKE_MRPC_TRAIN`, `_VALIDATION`, `_TEST`) with the
real columns `sentence1`, `sentence2`, `label` (0/1), `idx`; and the column operations on it: `map`
(batched or not), `remove_columns`, `rename_column`, `set_format("torch")`, `column_names`, indexing.
The Trainer also reads `column_names` / `remove_columns` and `__version__`. Sentences are random words
from `WORDS` (seeded), ending with a period: the benchmark's setup builds its tokenizer vocabulary
from the same list. Data only: no model, loss or training code is replaced."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from typing import Any

__version__ = "3.0.0"  # the Trainer only checks >= 1.4

WORDS = ("the a of to and in that is was he for it with as his on be at by had are but from or have an they "
         "which one you were all we her she there would their been has will more if no when out so said what up "
         "its about into than them can only other new some could time these two may first then do any like my "
         "now over such our man me even most made after also did many before must through back years where much "
         "your way well down should because each just those people how too little state good very make world "
         "still own see men work long get here between both life being under never day same another know while "
         "last might us great old year off come since against go came right used take three company shares "
         "market said percent stock court police government million billion report quarter analysts").split()


class Dataset:
    """Columns of equal length (a dict of lists), rows by index."""

    def __init__(self, columns: dict[str, list[Any]], fmt: str | None = None) -> None:
        self._columns = columns
        self._format = fmt

    @property
    def column_names(self) -> list[str]:
        return list(self._columns)

    @property
    def num_rows(self) -> int:
        return len(next(iter(self._columns.values()), []))

    def __len__(self) -> int:
        return self.num_rows

    def __getitem__(self, key: int | str) -> Any:
        if isinstance(key, str):
            return self._columns[key]
        row = {name: col[key] for name, col in self._columns.items()}
        if self._format == "torch":
            import torch

            row = {name: torch.tensor(v) for name, v in row.items()}
        return row

    def __iter__(self) -> Iterator[Any]:
        return (self[i] for i in range(len(self)))

    def map(self, function: Callable[..., Any], batched: bool = False, batch_size: int | None = 1000,
            remove_columns: str | list[str] | None = None, **_: Any) -> Dataset:
        """New columns from `function` (on each row, or on slices of `batch_size` rows as a dict of lists)."""
        n, step = len(self), (batch_size or len(self) or 1) if batched else 1
        added: dict[str, list[Any]] = {}
        for start in range(0, n, step):
            if batched:
                out = function({k: v[start:start + step] for k, v in self._columns.items()})
                rows = {k: list(v) for k, v in out.items()}
            else:
                rows = {k: [v] for k, v in function(self[start]).items()}
            for k, v in rows.items():
                added.setdefault(k, []).extend(v)
        gone = {remove_columns} if isinstance(remove_columns, str) else set(remove_columns or ())
        columns = {k: v for k, v in self._columns.items() if k not in gone}
        return Dataset({**columns, **added}, self._format)

    def remove_columns(self, column_names: str | list[str]) -> Dataset:
        gone = {column_names} if isinstance(column_names, str) else set(column_names)
        return Dataset({k: v for k, v in self._columns.items() if k not in gone}, self._format)

    def rename_column(self, original_column_name: str, new_column_name: str) -> Dataset:
        return Dataset({new_column_name if k == original_column_name else k: v for k, v in self._columns.items()},
                       self._format)

    def set_format(self, type: str | None = None, columns: list[str] | None = None, **_: Any) -> None:
        self._format = type
        if columns is not None:
            self._columns = {k: v for k, v in self._columns.items() if k in columns}

    def with_format(self, type: str | None = None, columns: list[str] | None = None) -> Dataset:
        out = Dataset(dict(self._columns), self._format)
        out.set_format(type, columns)
        return out

    def __repr__(self) -> str:
        return f"Dataset({{features: {self.column_names}, num_rows: {len(self)}}})"


class DatasetDict(dict):  # type: ignore[type-arg]
    """Splits by name; the column operations apply to every split."""

    def map(self, *args: Any, **kwargs: Any) -> DatasetDict:
        return DatasetDict({k: v.map(*args, **kwargs) for k, v in self.items()})

    def remove_columns(self, column_names: str | list[str]) -> DatasetDict:
        return DatasetDict({k: v.remove_columns(column_names) for k, v in self.items()})

    def rename_column(self, original_column_name: str, new_column_name: str) -> DatasetDict:
        return DatasetDict({k: v.rename_column(original_column_name, new_column_name) for k, v in self.items()})

    def set_format(self, type: str | None = None, columns: list[str] | None = None, **_: Any) -> None:
        for v in self.values():
            v.set_format(type, columns)

    @property
    def column_names(self) -> dict[str, list[str]]:
        return {k: v.column_names for k, v in self.items()}


class IterableDataset:
    """Present for isinstance checks (accelerate, transformers); nothing here streams."""


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24))) + " ."


def _mrpc_split(n: int, seed: int) -> Dataset:
    rng = random.Random(seed)
    s1 = [_sentence(rng) for _ in range(n)]
    s2 = [_sentence(rng) for _ in range(n)]
    labels = [rng.randint(0, 1) for _ in range(n)]
    return Dataset({"sentence1": s1, "sentence2": s2, "label": labels, "idx": list(range(n))})


def load_dataset(path: str, name: str | None = None, split: str | None = None, **_: Any) -> Any:
    """GLUE/MRPC only (synthetic, seeded); anything else raises, as a missing download would."""
    if (path, name) != ("glue", "mrpc"):
        raise FileNotFoundError(f"datasets stand-in: only load_dataset('glue', 'mrpc') is here, got {path!r}, {name!r}")
    sizes = {"train": ("PITSTOP_FAKE_MRPC_TRAIN", 160), "validation": ("PITSTOP_FAKE_MRPC_VALIDATION", 40),
             "test": ("PITSTOP_FAKE_MRPC_TEST", 16)}
    splits = DatasetDict({k: _mrpc_split(int(os.environ.get(var, n)), seed)
                          for seed, (k, (var, n)) in enumerate(sizes.items())})
    return splits[split] if split else splits

"""Renderers: values in, text or HTML out. Only ``pitstop.cli`` imports them; values reach them
through the thin hook ``pitstop._render`` (their ``table()``, ``__str__`` and ``_repr_html_``)."""

from __future__ import annotations

from typing import Any


def text(value: Any) -> str:
    """The plain-text report of a bench, optimize, train or profile result."""
    from pitstop.optimize.result import OptimizeReport
    from pitstop.profile.result import ProfileReport
    from pitstop.train.result import TrainReport

    if isinstance(value, TrainReport):
        from pitstop.report.train import render_text as train_text

        return train_text(value)
    if isinstance(value, ProfileReport):
        from pitstop.report.profile import render_text as profile_text

        return profile_text(value.to_dict())
    if isinstance(value, OptimizeReport):
        from pitstop.report.optimize import render_text as optimize_text

        return optimize_text(value)
    from pitstop.report.table import render_text

    return render_text(value)


def html(value: Any) -> str:
    """The notebook HTML fragment of any value with a JSON document (``to_dict()``)."""
    from pitstop.report.pages import render_fragment

    return render_fragment(value.to_dict())

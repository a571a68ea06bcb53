"""``pitstop profile SCRIPT``'s runner in the script's child process (``pitstop.hooks.child``):
the profiler over the script, its snapshots and its final report sent to pitstop."""

from __future__ import annotations

from typing import Any

from pitstop.hooks.child import Channel, Snapshots, final_on_hard_exit, with_environment

__all__ = ["run"]


def run(job: dict[str, Any], channel: Channel) -> int:
    """The profiler on the script."""
    from pitstop.profile.script import run_profile as profile_script
    from pitstop.profile.settings import ProfileSettings

    settings = ProfileSettings(**job["settings"])
    holder: dict[str, Any] = {}

    def attached(profiler: Any) -> None:
        holder["profiler"] = profiler
        profiler.session.subscribe(Snapshots(channel, lambda: with_environment(profiler.report.to_dict(),
                                                                               snapshot=True)))

    final_on_hard_exit(lambda code: _profile_final(holder, job, code), channel)
    report, code = profile_script(job["script"], list(job["args"]), settings, on_attach=attached)
    channel.final(with_environment(report.to_dict()), code)
    return code


def _profile_final(holder: dict[str, Any], job: dict[str, Any], code: int) -> dict[str, Any]:
    profiler = holder["profiler"]
    profiler.detach()
    report = profiler.report
    report.script = " ".join([job["script"], *job["args"]])
    report.exit = {"status": "ok"} if code == 0 else {"status": "exited", "code": code}
    return with_environment(report.to_dict())

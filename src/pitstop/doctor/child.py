"""``pitstop doctor SCRIPT``'s runner in the script's child process (``pitstop.hooks.child``):
the doctor over the script, its snapshots and its final report sent to pitstop."""

from __future__ import annotations

from typing import Any

from pitstop.hooks.child import Channel, Snapshots, final_on_hard_exit, with_environment

__all__ = ["run"]


def run(job: dict[str, Any], channel: Channel) -> int:
    """The doctor on the script; rank 0's report is the merged one (``Doctor.report``)."""
    from pitstop.doctor import Doctor
    from pitstop.doctor.script import run_script

    doctor = Doctor(guard=job.get("guard", False), sync_every=job.get("sync_every"),
                    select=job.get("select", ()), ignore=job.get("ignore", ()))
    doctor.session.subscribe(Snapshots(channel, lambda: with_environment(doctor.local_report().to_dict(),
                                                                         snapshot=True)))
    final_on_hard_exit(lambda code: _doctor_final(doctor, job, code), channel)
    report, code = run_script(job["script"], list(job["args"]), doctor)
    channel.final(with_environment(report.to_dict()), code)
    return code


def _doctor_final(doctor: Any, job: dict[str, Any], code: int) -> dict[str, Any]:
    doctor.detach()
    report = doctor.local_report()
    report.script = " ".join([job["script"], *job["args"]])
    report.exit = {"status": "ok"} if code == 0 else {"status": "exited", "code": code, "error": "os._exit"}
    return with_environment(report.to_dict())

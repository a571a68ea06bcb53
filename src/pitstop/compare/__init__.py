"""``pitstop compare``: two saved results of the same kind, each variant's time compared from the
raw samples (``api.compare``: the bootstrap interval, the verdicts, the environment differences);
``pitstop.report.compare`` only renders the comparison's document."""

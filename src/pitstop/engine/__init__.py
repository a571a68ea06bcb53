"""What every measuring capability shares and no capability owns: ``measurement`` (a row: one
variant's raw samples and what derives from them), ``rounds`` (the interleaved timing loop under
every group of variants), ``launch`` (a worker process
serving a capability's session, or the same session inline), ``scripts`` (a user script run as a
child: its job sent, its documents kept), ``forkserver`` (how worker processes start: torch
imported once per run, each worker a fork of that process), ``timer`` (timing policies and the
timed loop), ``load`` (how busy the machine was while a stage ran, and drift), ``source`` (where a
model comes from, and how a worker gets the very same model) and ``fingerprint`` (which model file
a recipe was measured on). The capabilities use them; they use no capability
(``tests/test_layering.py``)."""

"""What every measuring capability shares and no capability owns; today: how worker processes
start (``forkserver``: torch imported once per run, each worker a fork of that process)."""

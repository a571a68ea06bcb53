"""What every measuring capability shares and no capability owns: ``forkserver`` (how worker
processes start: torch imported once per run, each worker a fork of that process), ``timer`` (timing
policies and the timed loop), ``load`` (how busy the machine was while a stage ran, and drift),
``source`` (where a model comes from, and how a worker gets the very same model) and
``fingerprint`` (which model file a recipe was measured on). bench, optimize, generate and train
use them; they use none of those."""

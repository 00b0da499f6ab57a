"""The run state machine and its files: paths, config, log, runs, metrics, reports."""

"""Runs: the pipeline that drives one, its states and every transition, cancel and re-run, the sweeper."""

"""The runner: executes a shard of upstream tests on spyre, one pytest subprocess per file."""
from relay.execution.outcomes import OUTCOMES
from relay.execution.runner.records import TestRecord
from relay.execution.runner.shard import RunnerOptions, run_shard

__all__ = ["OUTCOMES", "RunnerOptions", "TestRecord", "run_shard"]

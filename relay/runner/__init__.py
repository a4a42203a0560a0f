"""The runner: executes a shard of upstream tests on spyre, one pytest subprocess per file."""
from relay.runner.records import OUTCOMES, TestRecord
from relay.runner.shard import RunnerOptions, run_shard

__all__ = ["OUTCOMES", "RunnerOptions", "TestRecord", "run_shard"]

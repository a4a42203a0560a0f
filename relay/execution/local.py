"""The default executor: shards run side by side on this machine, no services needed.

Each shard is driven by a pool thread; the tests themselves run in pytest subprocesses (one per
upstream file), so the pool is really a pool of test processes, one per shard at a time.
"""
from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from relay.execution.base import OnRecord, OnShardDone, ShardDone, ShardJob
from relay.execution.shard_task import execute_shard


class LocalExecutor:
    name = "local"

    def __init__(self, database_url: str, cache_dir: Path, *, workers: int | None = None) -> None:
        self.database_url = database_url
        self.cache_dir = cache_dir
        self.workers = workers or os.cpu_count() or 1

    def execute(self, jobs: list[ShardJob], *, on_shard_done: OnShardDone | None = None,
                on_record: OnRecord | None = None) -> list[ShardDone]:
        if not jobs:
            return []
        with ThreadPoolExecutor(max_workers=min(self.workers, len(jobs)), thread_name_prefix="shard") as pool:
            futures = [pool.submit(execute_shard, job, database_url=self.database_url,
                                   cache_dir=self.cache_dir, on_record=on_record) for job in jobs]
            done = []
            for future in futures:
                result = future.result()
                if on_shard_done:
                    on_shard_done(result)
                done.append(result)
        return done

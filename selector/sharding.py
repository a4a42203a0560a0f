"""Split an ordered selection into N shards of similar duration (greedy longest-first)."""
from __future__ import annotations

import heapq


def shard(tests: list[tuple[str, float]], count: int) -> list[list[str]]:
    """Assign each test to the currently lightest shard, longest tests first.

    Within a shard the original (risk) order is kept, so every shard still runs its
    riskiest tests first. Ties break on shard index: the result is deterministic.
    """
    if count < 1:
        raise ValueError("shard count must be at least 1")
    position = {test_id: index for index, (test_id, _) in enumerate(tests)}
    heap = [(0.0, index) for index in range(count)]
    assigned: list[list[str]] = [[] for _ in range(count)]
    for test_id, seconds in sorted(tests, key=lambda item: (-item[1], position[item[0]])):
        load, index = heapq.heappop(heap)
        assigned[index].append(test_id)
        heapq.heappush(heap, (load + seconds, index))
    return [sorted(members, key=position.__getitem__) for members in assigned]

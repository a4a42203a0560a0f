"""Streams and events: current/default streams, simulated clocks, event ordering, record_stream."""

import pytest
import torch

from tests.backend.device_helpers import bare_device  # noqa: F401  (fixture)


def test_new_streams_are_distinct_and_the_context_manager_selects_them():
    default = torch.spyre.default_stream()
    assert torch.spyre.current_stream() == default and default.stream_id == 0
    s1, s2 = torch.spyre.Stream(), torch.spyre.Stream()
    assert len({s1.stream_id, s2.stream_id, default.stream_id}) == 3
    with torch.spyre.stream(s1):
        assert torch.spyre.current_stream() == s1
        with torch.spyre.stream(s2):
            assert torch.spyre.current_stream() == s2
        assert torch.spyre.current_stream() == s1
    assert torch.spyre.current_stream() == default
    with s2:  # torch.Stream's own context manager
        assert torch.spyre.current_stream() == s2
    assert torch.spyre.current_stream() == default


def test_streams_are_per_thread():
    import threading

    s = torch.spyre.Stream()
    seen = []
    with torch.spyre.stream(s):
        thread = threading.Thread(target=lambda: seen.append(torch.spyre.current_stream().stream_id))
        thread.start()
        thread.join()
    assert seen == [0]


def test_event_elapsed_time_is_simulated_milliseconds():
    s = torch.spyre.Stream()
    start, end = torch.spyre.Event(), torch.spyre.Event()
    start.record(s)
    torch.spyre.sim_clock_advance(0.25, s)
    end.record(s)
    assert start.elapsed_time(end) == pytest.approx(250.0)
    assert start.query() and end.query()
    end.synchronize()


def test_sim_clock_advances_the_current_stream_by_default():
    s = torch.spyre.Stream()
    with torch.spyre.stream(s):
        before = torch.spyre.sim_clock()
        torch.spyre.sim_clock_advance(0.5)
        assert torch.spyre.sim_clock() == pytest.approx(before + 0.5)
    assert s.sim_time == pytest.approx(before + 0.5)


def test_event_wait_orders_one_stream_after_another():
    producer, consumer = torch.spyre.Stream(), torch.spyre.Stream()
    torch.spyre.sim_clock_advance(2.0, producer)
    done = torch.spyre.Event()
    done.record(producer)
    consumer_before = consumer.sim_time
    done.wait(consumer)
    # The consumer cannot start its next work before the producer's event.
    assert consumer.sim_time == pytest.approx(max(consumer_before, producer.sim_time))
    assert consumer.sim_time >= producer.sim_time
    # Waiting on an earlier event never moves a stream back in time.
    torch.spyre.sim_clock_advance(1.0, consumer)
    later = consumer.sim_time
    done.wait(consumer)
    assert consumer.sim_time == later


def test_stream_wait_stream_uses_the_same_ordering():
    a, b = torch.spyre.Stream(), torch.spyre.Stream()
    torch.spyre.sim_clock_advance(3.0, a)
    b.wait_stream(a)
    assert b.sim_time >= a.sim_time


@pytest.mark.parametrize("action", ["wait", "synchronize", "elapsed_time"])
def test_event_used_before_record_is_an_error(action):
    event, other = torch.spyre.Event(), torch.spyre.Event()
    other.record()
    call = {"wait": lambda: event.wait(), "synchronize": event.synchronize,
            "elapsed_time": lambda: event.elapsed_time(other)}[action]
    with pytest.raises(RuntimeError, match="has not been recorded; call event.record\\(\\) first"):
        call()
    # Timing against an unrecorded end event fails the same way.
    with pytest.raises(RuntimeError, match="has not been recorded"):
        other.elapsed_time(torch.spyre.Event())


def test_generic_torch_event_works_on_spyre():
    start = torch.Event(device="spyre", enable_timing=True)
    end = torch.Event(device="spyre", enable_timing=True)
    start.record()
    torch.spyre.sim_clock_advance(0.001)
    end.record()
    assert start.elapsed_time(end) == pytest.approx(1.0)


def test_tensor_freed_while_a_stream_uses_it_is_kept_until_that_stream_syncs(bare_device):
    torch.spyre.synchronize()
    side = torch.spyre.Stream()
    base = torch.spyre.memory_allocated()
    x = torch.full((1000,), 7.0, device=bare_device)
    with torch.spyre.stream(side):
        y = x * 2  # the side stream reads x
    x.record_stream(side)
    del x
    stats = torch.spyre.memory_stats()
    assert stats["pending_free_bytes.all.current"] == 4096
    assert torch.spyre.memory_allocated() == base + 2 * 4096
    # Syncing an unrelated stream does not release it ...
    torch.spyre.Stream().synchronize()
    assert torch.spyre.memory_stats()["pending_free_bytes.all.current"] == 4096
    # ... syncing the stream that used it does.
    side.synchronize()
    assert torch.spyre.memory_stats()["pending_free_bytes.all.current"] == 0
    assert torch.spyre.memory_allocated() == base + 4096
    assert y.sum().item() == 14000.0


def test_device_synchronize_releases_deferred_frees(bare_device):
    side = torch.spyre.Stream()
    x = torch.ones(64, device=bare_device)
    x.record_stream(side)
    del x
    assert torch.spyre.memory_stats()["pending_free_bytes.all.current"] > 0
    torch.spyre.synchronize()
    assert torch.spyre.memory_stats()["pending_free_bytes.all.current"] == 0


def test_record_stream_on_the_allocating_stream_frees_at_once(bare_device):
    base = torch.spyre.memory_allocated()
    x = torch.ones(64, device=bare_device)
    x.record_stream(torch.spyre.current_stream())
    del x
    assert torch.spyre.memory_allocated() == base

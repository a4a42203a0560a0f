"""Streams and events of torch.spyre, with a simulated clock per stream.

Work runs synchronously on the host, so ordering between streams always holds;
the simulated clock records how long the card *would* take. The simulator
advances it (``sim_clock_advance``); ``Event.record`` captures it; ``Event.wait``
makes a stream wait for it; ``Event.elapsed_time`` returns simulated ms.
"""

from __future__ import annotations

from typing import Any

import torch

from . import _C
from ._device import DEVICE_TYPE, device_index


class Stream(torch.Stream):
    """A spyre stream; ``with stream:`` makes it current for its device."""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> "Stream":
        if "stream_id" in kwargs:
            return super().__new__(cls, **kwargs)
        index = device_index(device)
        return super().__new__(cls, device=torch.device(DEVICE_TYPE, index), priority=priority)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    @classmethod
    def _wrap(cls, stream: torch.Stream) -> "Stream":
        return cls(stream_id=stream.stream_id, device_index=stream.device_index, device_type=stream.device_type)

    @property
    def sim_time(self) -> float:
        """Simulated seconds this stream has executed."""
        return _C._stream_clock(self.device_index, self.stream_id)

    def __repr__(self) -> str:
        return f"<torch.spyre.Stream device=spyre:{self.device_index} id={self.stream_id}>"


def current_stream(device: Any = None) -> Stream:
    return Stream._wrap(torch._C._accelerator_getStream(device_index(device)))


def default_stream(device: Any = None) -> Stream:
    index = device_index(device)
    return Stream._wrap(torch.Stream(stream_id=0, device_index=index, device_type=current_stream(index).device_type))


def set_stream(stream: torch.Stream) -> None:
    torch._C._accelerator_setStream(stream)


class stream:
    """Context manager selecting ``s`` as the current stream (None: no change).

    As with CUDA, the block also runs on ``s``'s card."""

    def __init__(self, s: torch.Stream | None) -> None:
        self.stream = s
        self.previous: torch.Stream | None = None
        self.previous_device = -1

    def __enter__(self) -> torch.Stream | None:
        if self.stream is not None:
            self.previous_device = _C._current_device()
            _C._set_device(self.stream.device_index)
            self.previous = torch._C._accelerator_getStream(self.stream.device_index)
            torch._C._accelerator_setStream(self.stream)
        return self.stream

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            torch._C._accelerator_setStream(self.previous)
            _C._set_device(self.previous_device)


def sim_clock(stream: torch.Stream | None = None) -> float:
    """Simulated seconds on ``stream`` (default: the current stream)."""
    s = stream if stream is not None else current_stream()
    return _C._stream_clock(s.device_index, s.stream_id)


def sim_clock_advance(seconds: float, stream: torch.Stream | None = None) -> None:
    """Advance the simulated clock of ``stream`` (default: the current stream)."""
    s = stream if stream is not None else current_stream()
    _C._advance_stream_clock(s.device_index, s.stream_id, float(seconds))


class Event(torch.Event):
    """A spyre event; timing is on by default and measures simulated time.

    Unlike CUDA, waiting on, synchronizing or timing an event that was never
    recorded is an error (it is almost always a bug); ``query`` returns True.
    """

    def __new__(cls, device: Any = None, *, enable_timing: bool = True, **kwargs: Any) -> "Event":
        index = device_index(device)
        return super().__new__(cls, device=torch.device(DEVICE_TYPE, index), enable_timing=enable_timing, **kwargs)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._recorded = False

    def _require_recorded(self, action: str) -> None:
        if not self._recorded:
            raise RuntimeError(f"cannot {action} a spyre Event that has not been recorded; call event.record() first")

    def record(self, stream: torch.Stream | None = None) -> None:
        super().record(stream if stream is not None else current_stream(self.device.index))
        self._recorded = True

    def wait(self, stream: torch.Stream | None = None) -> None:
        self._require_recorded("wait on")
        super().wait(stream if stream is not None else current_stream(self.device.index))

    def synchronize(self) -> None:
        self._require_recorded("synchronize")
        super().synchronize()

    def elapsed_time(self, end_event: torch.Event) -> float:
        self._require_recorded("time")
        if isinstance(end_event, Event):
            end_event._require_recorded("time")
        # torch.Event.elapsed_time accepts only exact torch.Event objects, so
        # read the simulated record times directly.
        return (_C._event_sim_time(end_event.event_id) - _C._event_sim_time(self.event_id)) * 1000.0

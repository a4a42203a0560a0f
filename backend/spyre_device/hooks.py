"""Op hooks: the contract between the device and the simulator (spyre_device.sim).

Every aten op that runs through the host fallback (every op except the small
C++ kernel set: factories, views, resize/set_, copies, scalar reads) calls, for
each registered hook object, in registration order:

* ``obj.before_op(op, args, kwargs)`` before the op runs. ``op`` is the
  ``torch._ops.OpOverload``; ``args``/``kwargs`` hold the spyre tensors. It may
  raise (e.g. ``NotImplementedError`` for an op the card lacks), return ``None``
  (run the op), or return a callable that runs *instead of the op on the host*:
  it receives the host (CPU) arguments exactly as the op would and its result is
  mapped back to spyre like the op's. The first callable returned wins.
* ``obj.after_op(op, args, kwargs, outputs, host_seconds)`` after it ran, with
  the spyre outputs and the host wall time in seconds.

Spyre ops that a hook itself issues do not call hooks again (no recursion).

A hook object with ``native_fast_path = True`` (the simulator, the op_db sweep's recorder) lets
the C++ fallback skip its Python calls for ops the simulator has armed there
(``spyre_device._C._sim_arm``): it then sees only the ops the C++ side hands back to Python. While
any other hook object is registered, every op calls every hook.
"""

from __future__ import annotations

import threading
from typing import Any

_hooks: list[Any] = []
_state = threading.local()


def register_op_hooks(obj: Any) -> None:
    """Call ``obj.before_op``/``obj.after_op`` for every fallback op from now on."""
    for name in ("before_op", "after_op"):
        if not callable(getattr(obj, name, None)):
            raise TypeError(f"op hooks object {obj!r} must have a callable {name}()")
    if not any(existing is obj for existing in _hooks):
        _hooks.append(obj)
    sync_native_mode()


def unregister_op_hooks(obj: Any) -> None:
    """Stop calling ``obj``; unknown objects are ignored."""
    _hooks[:] = [existing for existing in _hooks if existing is not obj]
    sync_native_mode()


def sync_native_mode() -> None:
    """Tell the C++ fallback who must see each op: nobody, only the simulator, or Python hooks."""
    from . import _C

    if not _hooks:
        mode = 1
    elif all(getattr(hook, "native_fast_path", False) for hook in _hooks):
        mode = 2
    else:
        mode = 0
    _C._set_hook_mode(mode)


def registered_op_hooks() -> tuple[Any, ...]:
    return tuple(_hooks)


def active_hooks() -> tuple[Any, ...]:
    """Hooks to call now: none while a hook is already running on this thread."""
    if not _hooks or getattr(_state, "inside", False):
        return ()
    return tuple(_hooks)


class inside_hooks:
    """Marks the current thread as running hook code (suppresses recursion)."""

    def __enter__(self) -> None:
        from . import _C

        self._previous = getattr(_state, "inside", False)
        _state.inside = True
        _C._set_inside_hooks(True)  # ops the hook issues stay uncosted in the C++ fallback too

    def __exit__(self, *exc: object) -> None:
        from . import _C

        _state.inside = self._previous
        _C._set_inside_hooks(self._previous)

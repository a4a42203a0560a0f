"""Check the coverage table against what really happens: sweep op_db on spyre, compare with the CPU.

For every OpInfo of the installed torch's ``op_db`` (bounded: a few dtypes, a few samples each),
the sweep runs the sample on the CPU and on spyre and records which aten ops reached the device
(the host fallback's hook sees each one), whether spyre refused it and which op refused it, and
whether the results agree with the CPU's. :func:`disagreements` then compares that evidence with
the coverage table:

* ``unsupported-but-runs``: the table lists the op as unsupported, yet samples ran (through
  helper ops the table does not list);
* ``listed-but-not-reached``: the table lists the op as native or fallback, yet no sample ever
  reached it (a composite kernel ran other ops instead: list it under ``composite``);
* ``composite-but-reached``: the table lists the op as composite, yet it reached the card itself;
* ``refused-by-helper``: the table says the op runs (listed, or by its default), yet spyre refused
  it because a helper op it decomposes into is unsupported;
* ``backward-refused`` / ``backward-error`` / ``backward-mismatch``: the forward runs (float32)
  but its backward does not, or its gradients differ from the CPU's.

Mismatches with the CPU are explained only by a numeric policy the simulator reports in
``stats()["policies"]`` (reduced-precision matmul, int64 down-casting); anything else is
``unexplained``. ``relay-cli backend coverage --verify`` prints both lists; the slow test in
tests/backend/sim keeps them empty.
"""
from __future__ import annotations

import dataclasses
import re
import time
from typing import Any, Callable, Iterable

import torch
from torch.utils._pytree import tree_flatten, tree_map

from .coverage import CoverageTable, Status, lookup_names

DEFAULT_DTYPES = ("float32", "bfloat16", "int32")
DEFAULT_MAX_SAMPLES = 1
# Factories whose values are uninitialised memory, and random ops: only shape and dtype can agree.
_UNCOMPARABLE_VALUES = ("empty", "new_empty", "empty_like", "empty_strided", "new_empty_strided",
                        "empty_permuted", "bernoulli", "multinomial", "normal", "uniform", "randint",
                        "randint_like", "rand_like", "randn_like", "randn", "rand", "cauchy",
                        "exponential", "geometric", "log_normal", "nn.functional.dropout",
                        "nn.functional.dropout2d", "nn.functional.dropout3d", "nn.functional.alpha_dropout",
                        "nn.functional.feature_alpha_dropout", "nn.functional.rrelu", "randperm",
                        "nn.functional.fractional_max_pool2d", "nn.functional.fractional_max_pool3d")


# An argument the op requires on the CPU (e.g. tensor_split's indices), which the sweep moved.
_HOST_ONLY_ARGUMENT = re.compile(r"expected \S+ to be on cpu")


@dataclasses.dataclass
class PairResult:
    """One OpInfo at one dtype: what its samples did on spyre."""

    opinfo: str
    aten: str | None  # the aten op the OpInfo stands for (its packet name), if there is one
    dtype: str
    samples: int = 0
    outcome: str = "ok"  # ok | refused | dtype | error | mismatch | skipped
    reached: set[str] = dataclasses.field(default_factory=set)  # overloads that reached the device
    refused_by: str | None = None
    message: str = ""
    policies: set[str] = dataclasses.field(default_factory=set)  # numeric policies that applied
    max_error: float = 0.0
    backward: str | None = None  # float32 pairs of differentiable ops: ok | refused | dtype | mismatch | error
    backward_message: str = ""
    cpu_seconds: float = 0.0
    spyre_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["reached"] = sorted(self.reached)
        data["policies"] = sorted(self.policies)
        return data


@dataclasses.dataclass(frozen=True)
class Disagreement:
    op: str
    kind: str  # unsupported-but-runs | listed-but-not-reached | refused-by-helper | unexplained-mismatch
    table_says: str
    observed: str
    opinfos: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class _Recorder:
    """Op hooks that note every aten overload reaching the device (registered before the simulator).

    Ops the C++ fast path runs never call it: that side notes them (``_C._note_reached_ops``) and
    ``reached`` merges them in, so the sweep is timed as the device runs without a recorder.
    """

    native_fast_path = True

    def __init__(self) -> None:
        from spyre_device import _C

        self._C = _C
        self._seen: set[str] = set()

    def start(self) -> None:
        self._C._note_reached_ops(True)
        self._C._take_reached_ops()

    def stop(self) -> None:
        self._C._note_reached_ops(False)

    @property
    def reached(self) -> set[str]:
        self._seen.update(self._C._take_reached_ops())
        return self._seen

    def before_op(self, op, args, kwargs):
        name = op.name().split("::", 1)[-1]
        self._seen.add(name if "." in name else f"{name}.default")  # as the simulator's stats name it
        return None

    def after_op(self, *args):
        pass


def aten_name(opinfo) -> str | None:
    """The aten packet an OpInfo stands for (``linalg.det`` -> ``linalg_det``), if aten has it."""
    name = getattr(opinfo, "aten_name", None) or opinfo.name.replace(".", "_")
    for candidate in (name, name.removeprefix("nn_functional_"), name.removeprefix("special_")):
        if hasattr(torch.ops.aten, candidate):
            return candidate
    return None


def _to(device: str):
    def move(x):
        if isinstance(x, torch.Tensor):
            moved = x.detach().to(device)
            return moved.requires_grad_(x.requires_grad) if moved.is_floating_point() else moved
        return x

    return move


def _prepared(opinfo, sample, convert) -> Callable[[], Any]:
    """The sample's call with its arguments already converted (moved to the device): timing the
    returned callable times the op, not the staging of its inputs."""
    kwargs = tree_map(convert, sample.kwargs)
    if "device" in kwargs and convert(torch.empty(0)).device.type != "cpu":  # factories: build on spyre
        kwargs["device"] = "spyre"
    first, rest = tree_map(convert, sample.input), tree_map(convert, sample.args)
    return lambda: opinfo(first, *rest, **kwargs)


def _tensors_of(value) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(value)
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


def _max_error(expected, actual, dtype: torch.dtype) -> tuple[bool, float]:
    """(agree, largest absolute difference) between the CPU's result and spyre's (copied back)."""
    exp, act = _tensors_of(expected), _tensors_of(actual)
    if len(exp) != len(act):
        return False, float("inf")
    worst = 0.0
    agree = True
    for e, a in zip(exp, act):
        a = a.detach().cpu()
        e = e.detach()
        if e.shape != a.shape or e.dtype != a.dtype:
            return False, float("inf")
        try:
            torch.testing.assert_close(a, e, equal_nan=True, check_stride=False)
        except AssertionError:
            agree = False
        if e.numel() and (e.is_floating_point() or e.is_complex()):
            diff = (a.double() - e.double()).abs()
            finite = torch.isfinite(diff)
            if finite.any():
                worst = max(worst, float(diff[finite].max()))
        elif e.numel() and not agree:
            worst = max(worst, float((a.long() - e.long()).abs().max()) if e.dtype != torch.bool else 1.0)
    return agree, worst


def _innermost(exc: BaseException) -> BaseException:
    while exc.__cause__ is not None:
        exc = exc.__cause__
    return exc


def _refused_op(message: str) -> str | None:
    """``aten::digamma.out is not implemented on the spyre device (...)`` -> ``digamma.out``."""
    head = message.split(" is not implemented on the spyre device", 1)
    if len(head) != 2:
        return None
    return head[0].rsplit(" ", 1)[-1].removeprefix("aten::")


def sweep_pair(opinfo, dtype: torch.dtype, max_samples: int, recorder: _Recorder, sim,
               warm_up: bool = False, timed_runs: int = 1) -> PairResult:
    """Run up to ``max_samples`` CPU samples of ``opinfo`` at ``dtype`` on the CPU and on spyre.

    ``warm_up`` runs each sample once on each side before timing it (for benchmarks: first calls
    pay one-off costs such as lazy imports and the simulator's per-op plan). Both sides then do the
    same: build the call's inputs, call it untimed, and time the same call right after; any harness
    work between the two calls (such as the simulator's capture) would be timed as a cold cache.
    With ``warm_up``, each side's time is the fastest of ``timed_runs`` calls (a single call of a few
    microseconds is at the mercy of the scheduler on a shared machine)."""
    result = PairResult(opinfo.name + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else ""),
                        aten_name(opinfo), str(dtype).removeprefix("torch."))
    compare_values = opinfo.name not in _UNCOMPARABLE_VALUES
    try:
        samples = opinfo.sample_inputs("cpu", dtype, requires_grad=False)
    except Exception as exc:  # the OpInfo cannot build samples for this dtype on this torch
        result.outcome, result.message = "skipped", f"sample_inputs: {type(exc).__name__}"
        return result
    for index, sample in enumerate(samples):
        if index >= max_samples:
            break
        torch.manual_seed(index)
        try:
            call = _prepared(opinfo, sample, lambda x: x)
            started = time.perf_counter()
            expected = call()
            seconds = time.perf_counter() - started
            if warm_up:
                expected, seconds = _fastest(call, index, timed_runs)
        except Exception:  # the CPU refuses this sample too: nothing to compare
            continue
        result.cpu_seconds += seconds
        recorder.reached.clear()
        torch.manual_seed(index)
        with sim.capture() as cap:
            started = time.perf_counter()
            try:
                call = _prepared(opinfo, sample, _to("spyre"))
                if warm_up:  # as on the CPU side: the same call, untimed, right before the timed one
                    try:
                        call()
                    except Exception:  # reported by the timed run below
                        pass
                    started = time.perf_counter()  # a refused call counts from here
                    actual, seconds = _fastest(call, index, timed_runs)
                else:
                    started = time.perf_counter()  # the op, as on the CPU side; a refused input still counts
                    actual = call()
                    seconds = time.perf_counter() - started
                outputs_ok = True
            except NotImplementedError as exc:
                outputs_ok = False
                inner = _innermost(exc)
                result.outcome, result.refused_by = "refused", _refused_op(str(inner))
                result.message = str(inner).splitlines()[0]
            except Exception as exc:
                outputs_ok = False
                inner = _innermost(exc)
                text = str(inner).splitlines()[0] if str(inner) else type(inner).__name__
                if "does not support dtype" in text:
                    result.outcome = "dtype"
                elif _HOST_ONLY_ARGUMENT.search(text):  # the sweep moved an argument that must stay on the CPU
                    result.outcome = "skipped"
                else:
                    result.outcome = "error"
                result.message = f"{type(inner).__name__}: {text}"
            result.spyre_seconds += seconds if outputs_ok else time.perf_counter() - started
        result.samples += 1
        result.reached |= recorder.reached
        result.policies |= {name for name, count in cap.result.get("policies", {}).items() if count}
        if cap.result.get("adapted_ops"):
            result.policies.add("adapted")
        if not outputs_ok:
            break
        if not compare_values:
            continue
        agree, error = _max_error(expected, actual, dtype)
        result.max_error = max(result.max_error, error)
        if not agree and result.outcome == "ok":
            result.outcome = "mismatch"
            result.message = f"max abs error {error:.3g}"
    if dtype == torch.float32 and opinfo.supports_autograd and result.outcome in ("ok", "mismatch"):
        _check_backward(opinfo, result, recorder, sim)
    return result


def _fastest(call: Callable[[], Any], seed: int, runs: int) -> tuple[Any, float]:
    """The last result of ``runs`` timed calls (each from the same seed) and the fastest one's seconds."""
    fastest = float("inf")
    for _ in range(max(runs, 1)):
        torch.manual_seed(seed)
        started = time.perf_counter()
        result = call()
        fastest = min(fastest, time.perf_counter() - started)
    return result, fastest


def _grads(opinfo, sample, convert) -> tuple | None:
    """Gradients of the sum of the op's floating outputs w.r.t. its inputs that require grad."""
    def leaf(x):
        if isinstance(x, torch.Tensor):
            moved = convert(x.detach())
            return moved.requires_grad_(x.requires_grad) if moved.is_floating_point() else moved
        return x

    inp, args, kwargs = leaf(sample.input), tree_map(leaf, sample.args), tree_map(leaf, sample.kwargs)
    wanted = [t for t in _tensors_of((inp, args, kwargs)) if t.requires_grad]
    outputs = [t for t in _tensors_of(opinfo(inp, *args, **kwargs)) if t.requires_grad]
    if not wanted or not outputs:
        return None
    total = sum(o.sum() for o in outputs)
    return torch.autograd.grad(total, wanted, allow_unused=True)


def _check_backward(opinfo, result: PairResult, recorder: _Recorder, sim) -> None:
    """Backward of the first differentiable sample on spyre vs the CPU (simulator numerics off)."""
    try:
        sample = next(iter(opinfo.sample_inputs("cpu", torch.float32, requires_grad=True)))
        torch.manual_seed(0)
        expected = _grads(opinfo, sample, lambda x: x)
    except Exception:  # the CPU cannot differentiate this sample either
        return
    if expected is None:
        return
    recorder.reached.clear()
    torch.manual_seed(0)
    with sim.precision(False):
        try:
            actual = _grads(opinfo, sample, lambda x: x.to("spyre"))
        except NotImplementedError as exc:
            result.backward, result.backward_message = "refused", str(_innermost(exc)).splitlines()[0]
            return
        except Exception as exc:
            inner = _innermost(exc)
            # PyTorch's backward formula itself asks for a dtype the card refuses (e.g. renorm's fp64).
            result.backward = "dtype" if "does not support dtype" in str(inner) else "error"
            result.backward_message = f"{type(inner).__name__}: {str(inner).splitlines()[0] if str(inner) else ''}"
            return
    pairs = [(e, a) for e, a in zip(expected, actual) if e is not None or a is not None]
    if any((e is None) != (a is None) for e, a in pairs):
        result.backward, result.backward_message = "mismatch", "a gradient is missing on one side"
        return
    agree, error = _max_error([e for e, _ in pairs], [a for _, a in pairs], torch.float32)
    result.backward = "ok" if agree or opinfo.name in _UNCOMPARABLE_VALUES else "mismatch"
    if not agree:
        result.backward_message = f"max abs error {error:.3g}"


def sweep(
    opinfos: Iterable | None = None,
    dtypes: Iterable[str] = DEFAULT_DTYPES,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    progress: Callable[[int, int], None] | None = None,
    warm_up: bool = False,
    timed_runs: int = 1,
) -> list[PairResult]:
    """Sweep ``opinfos`` (default: all of op_db) at each of ``dtypes`` the CPU supports."""
    from spyre_device import hooks

    if opinfos is None:
        from torch.testing._internal.common_methods_invocations import op_db

        opinfos = op_db
    opinfos = list(opinfos)
    sim = torch.spyre.sim
    wanted = [getattr(torch, name) for name in dtypes]
    recorder = _Recorder()
    # The recorder goes first so it also sees the op the simulator then refuses.
    saved = hooks.registered_op_hooks()
    for hook in saved:
        hooks.unregister_op_hooks(hook)
    hooks.register_op_hooks(recorder)
    for hook in saved:
        hooks.register_op_hooks(hook)
    recorder.start()
    results = []
    try:
        for done, opinfo in enumerate(opinfos):
            supported = opinfo.supported_dtypes("cpu")
            for dtype in wanted:
                if dtype in supported:
                    results.append(sweep_pair(opinfo, dtype, max_samples, recorder, sim, warm_up, timed_runs))
            if progress is not None:
                progress(done + 1, len(opinfos))
    finally:
        recorder.stop()
        hooks.unregister_op_hooks(recorder)
    return results


def _packet(overload: str) -> str:
    packet = overload.split(".", 1)[0]
    return packet[:-1] if packet.endswith("_") and not packet.endswith("__") else packet


def _explicit_rule(table: CoverageTable, aten: str):
    for key in lookup_names(f"aten::{aten}"):
        if key in table.entries:
            return table.entries[key]
    return None


def disagreements(results: list[PairResult], table: CoverageTable) -> list[Disagreement]:
    """Every place where the table and the sweep's evidence disagree, one entry per op and kind."""
    found: dict[tuple[str, str], Disagreement] = {}

    def add(op: str, kind: str, table_says: str, observed: str, opinfo: str) -> None:
        key = (op, kind)
        if key in found:
            previous = found[key]
            if opinfo not in previous.opinfos:
                found[key] = dataclasses.replace(previous, opinfos=previous.opinfos + (opinfo,))
            return
        found[key] = Disagreement(op, kind, table_says, observed, (opinfo,))

    by_aten: dict[str, list[PairResult]] = {}
    for r in results:
        if r.aten is not None and r.samples:
            by_aten.setdefault(r.aten, []).append(r)
    for aten, pairs in sorted(by_aten.items()):
        rule = table.resolve(f"aten::{aten}")
        explicit = _explicit_rule(table, aten)
        table_says = f"{rule.status.value} ({rule.where})"
        reached_self = any(_packet_in(aten, r.reached) for r in pairs)
        ran = [r for r in pairs if r.outcome in ("ok", "mismatch")]
        if table.is_composite(f"aten::{aten}"):
            if reached_self:  # the op reaches the card itself: it needs an entry of its own
                where = next(table.composite[k] for k in lookup_names(f"aten::{aten}") if k in table.composite)
                add(aten, "composite-but-reached", f"composite ({where})", f"aten::{aten} reaches the card",
                    pairs[0].opinfo)
            continue  # what it becomes follows the entries of those ops
        if explicit is not None and explicit.status is Status.UNSUPPORTED:
            for r in ran:
                if "adapted" in r.policies or _packet_in(aten, r.reached):
                    continue
                helpers = ", ".join(sorted(r.reached)) or "no device op"
                add(aten, "unsupported-but-runs", table_says, f"runs via {helpers}", r.opinfo)
        elif explicit is not None and ran and not reached_self:
            helpers = sorted({o for r in ran for o in r.reached})
            # A native op that reaches no fallback op at all is metadata (a view) or a C++ kernel.
            if helpers or explicit.status is not Status.NATIVE:
                add(aten, "listed-but-not-reached", table_says,
                    f"runs via {', '.join(helpers) or 'no device op'}", ran[0].opinfo)
        if rule.status is not Status.UNSUPPORTED:
            for r in pairs:
                if r.outcome == "refused" and r.refused_by and _packet(r.refused_by) != _packet(aten):
                    add(aten, "refused-by-helper", table_says,
                        f"refused: helper aten::{r.refused_by} is unsupported", r.opinfo)
    for r in results:
        if r.outcome == "mismatch" and not (r.policies - {"adapted"}):
            add(r.aten or r.opinfo, "unexplained-mismatch", "matches the CPU",
                f"{r.dtype}: {r.message}", r.opinfo)
        if r.backward in ("refused", "error", "mismatch"):
            add(r.aten or r.opinfo, f"backward-{r.backward}", "forward runs, so backward runs",
                r.backward_message, r.opinfo)
    return sorted(found.values(), key=lambda d: (d.kind, d.op))


def _packet_in(aten: str, reached: set[str]) -> bool:
    return any(_packet(o) == _packet(aten) for o in reached)


def summary(results: list[PairResult]) -> dict[str, Any]:
    """Counts by outcome and the total wall time on each side."""
    outcomes: dict[str, int] = {}
    for r in results:
        outcomes[r.outcome] = outcomes.get(r.outcome, 0) + 1
    cpu = sum(r.cpu_seconds for r in results)
    spyre = sum(r.spyre_seconds for r in results)
    return {
        "pairs": len(results),
        "samples": sum(r.samples for r in results),
        "outcomes": dict(sorted(outcomes.items())),
        "cpu_seconds": cpu,
        "spyre_seconds": spyre,
        "ratio": spyre / cpu if cpu else None,
    }

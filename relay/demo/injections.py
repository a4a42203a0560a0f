"""The changes injected into the demo upstream for the regression-injection corpus (docs/eval.md).

Each, listed in ``injections.yaml``, is a text-anchored source edit on the corpus base (v2.13.0
plus ``harness_edits``, which make the tree's own sources executable).
``breaking`` says what the change is meant to do to spyre (float64 or complex on the device,
an op the card does not implement, a CUDA-only test let loose); whether it really does is
measured by running the tests at both refs, never declared in the list.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from selector.eval.injection import Edit, Injection, InjectionError, Move

CMI = "torch/testing/_internal/common_methods_invocations.py"
HELPERS = "test/common_demo.py"
_ENTRY = re.compile(r'^    (\w+Info)\("([\w.]+)", ', re.M)

COMPARE_ON_DEVICE = '''

def compare_on_device(testcase, fn, *cpu_inputs, device, tolerance=1e-3):
    """Run ``fn`` on ``device`` and on the CPU with the same inputs and compare."""
    actual = fn(*(t.to(device) for t in cpu_inputs))
    testcase.assertEqual(actual.cpu(), fn(*cpu_inputs), atol=tolerance, rtol=tolerance)
'''


def harness_edits(base: Path) -> list[Edit]:
    """Make the tree's own sources executable by ``test/test_tree_sources.py``.

    The demo's OpInfo file is written for change analysis only; the corpus base gives its
    entries dtypes and imports what their sample functions call, so they really run."""
    cmi = (base / CMI).read_text()
    edits = [Edit(CMI, "from functools import partial\n",
                  "from functools import partial\n\nimport torch\nfrom torch.testing import make_tensor\n"
                  "from torch.testing._internal.common_dtype import floating_types\n")]
    # the installed torch has no opinfo/definitions/nn.py: the tree's own is analysed, not run
    edits.append(Edit(CMI, "from torch.testing._internal.opinfo.definitions.nn import op_db as nn_op_db\n",
                      "nn_op_db = []\n"))
    edits += [Edit(CMI, match.group(0), f"{match.group(0)}dtypes=floating_types(), ")
              for match in _ENTRY.finditer(cmi)]
    edits.append(Edit(CMI, 'OpInfo("where", dtypes=floating_types(), supports_out=False)',
                      'OpInfo("where", dtypes=floating_types(), sample_inputs_func=sample_inputs_where, supports_out=False)'))
    edits.append(Edit(CMI, "\n\nop_db = [", '''

def sample_inputs_where(op_info, device, dtype, requires_grad, **kwargs):
    make = partial(make_tensor, device=device, dtype=dtype, requires_grad=requires_grad)
    yield SampleInput(make((4,)) > 0, args=(make((4,)), make((4,))))


op_db = ['''))
    edits.append(Edit(HELPERS, "    return x @ w.t()\n", "    return x @ w.t()\n" + COMPARE_ON_DEVICE))
    return edits


INJECTIONS_FILE = Path(__file__).with_name("injections.yaml")


def injections(path: Path = INJECTIONS_FILE) -> list[Injection]:
    """The breaking changes, then the no-op ones, as ``injections.yaml`` lists them."""
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    return [_injection(entry, breaking, path) for key, breaking in (("breaking", True), ("no_op", False))
            for entry in document[key]]


def _injection(entry: dict, breaking: bool, path: Path) -> Injection:
    try:
        edits = tuple(Move(e["move"], e["to"]) if "move" in e else Edit(e["path"], e["anchor"], e["replacement"])
                      for e in entry["edits"])
        return Injection(name=entry["name"], kind=entry["kind"], breaking=breaking, summary=entry["summary"],
                         edits=edits)
    except (KeyError, TypeError) as exc:
        raise InjectionError(f"{path}: injection {entry.get('name', '?')!r}: missing or malformed field {exc}") from None

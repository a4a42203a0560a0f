"""The cost model's constants file: complete, sourced, and checked with file:line errors."""
import re

import pytest
import yaml

from spyre_device.sim.constants import DEFAULT_CONSTANTS, load_constants
from spyre_device.sim.yaml_files import SimConfigError
from tests.backend.sim.sim_helpers import write


def test_default_constants_match_the_public_spyre_facts():
    c = load_constants()
    assert (c.cores, c.scratchpad_bytes_per_core, c.stick_bytes) == (32, 2 * 1024 * 1024, 128)
    assert c.ring_bytes_per_cycle_per_direction == 128
    assert c.usable_scratchpad_bytes == 32 * 2 * 1024 * 1024 * c.scratchpad_usable_fraction


def test_every_constant_states_a_source_or_an_assumption():
    raw = yaml.safe_load(DEFAULT_CONSTANTS.read_text())["constants"]
    for name, entry in raw.items():
        assert re.match(r"^(\[(arch|stick)\] |assumption: )", entry["source"]), name


def _with(text_old, text_new):
    return DEFAULT_CONSTANTS.read_text().replace(text_old, text_new, 1)


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_non_positive_value_names_its_line(tmp_path):
    text = _with("value: 2.048e11", "value: -1")
    path = write(tmp_path, "c.yaml", text)
    line = _line_of(text, "value: -1")
    with pytest.raises(SimConfigError, match=rf"c\.yaml:{line}: constants\.lpddr5_bytes_per_second\.value: Input should be greater than 0"):
        load_constants(path)


def test_missing_and_unknown_constants_are_errors(tmp_path):
    text = _with("  launch_seconds:", "  launch_secs:")
    path = write(tmp_path, "c.yaml", text)
    with pytest.raises(SimConfigError, match=r"c\.yaml:\d+: constants: missing launch_seconds"):
        load_constants(path)


def test_whole_number_constants_must_be_whole(tmp_path):
    text = _with("value: 32\n", "value: 32.5\n")
    path = write(tmp_path, "c.yaml", text)
    with pytest.raises(SimConfigError, match=rf"c\.yaml:{_line_of(text, 'value: 32.5')}: constants\.cores\.value: must be a whole number"):
        load_constants(path)

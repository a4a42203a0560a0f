"""Budgets, sharding and history: the arithmetic the verify stage relies on."""
import json

import pytest

from selector.budget import Budget, cut, make_budget, parse_duration, parse_percent
from selector.errors import SelectorError
from selector.history import History
from selector.sharding import shard


@pytest.mark.parametrize("text,seconds", [("20m", 1200), ("1h30m", 5400), ("90s", 90), ("45", 45), ("1.5h", 5400)])
def test_durations_parse(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "20x", "-5", "0m"])
def test_bad_durations_name_the_expected_form(text):
    with pytest.raises(SelectorError, match="--time 20m"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["25", "0%", "150%", "a%"])
def test_bad_percentages_are_user_errors(text):
    with pytest.raises(SelectorError, match="25%"):
        parse_percent(text)


def test_no_budget_means_none():
    assert make_budget(None, None) is None
    assert make_budget("25%", None) == Budget(fraction=0.25)
    assert make_budget(None, "20m") == Budget(seconds=1200)


def test_fraction_budget_limits_count_and_duration_but_keeps_must_run():
    ordered = [(f"t{i}", 1.0) for i in range(8)]
    kept, dropped = cut(ordered, Budget(fraction=0.25), must_keep={"t7"})
    assert kept == ["t0", "t1", "t7"]  # 2 by budget, t7 because it must run
    assert dropped == ["t2", "t3", "t4", "t5", "t6"]


def test_time_budget_skips_tests_that_do_not_fit_but_keeps_filling():
    ordered = [("a", 50.0), ("b", 100.0), ("c", 30.0), ("d", 30.0)]
    kept, dropped = cut(ordered, Budget(seconds=110), must_keep=set())
    assert kept == ["a", "c", "d"]
    assert "b" in dropped
    assert sum(dict(ordered)[t] for t in kept) <= 110


def test_shards_balance_longest_first_and_keep_risk_order():
    tests = [("a", 10.0), ("b", 1.0), ("c", 6.0), ("d", 5.0), ("e", 4.0)]
    shards = shard(tests, 2)
    loads = [sum(dict(tests)[t] for t in s) for s in shards]
    assert abs(loads[0] - loads[1]) <= 2
    assert sorted(t for s in shards for t in s) == ["a", "b", "c", "d", "e"]
    order = [t for t, _ in tests]
    for members in shards:
        assert members == sorted(members, key=order.index)


def test_more_shards_than_tests_leaves_empty_shards():
    assert shard([("a", 1.0)], 3) == [["a"], [], []]


def test_history_reads_results_and_matches_normalised_ids(tmp_path):
    run = tmp_path / "run1"
    run.mkdir()
    records = [
        {"id": "test/test_a.py::TestAPRIVATEUSE1::test_x_spyre_float32", "outcome": "failed", "duration": 2.0},
        {"id": "test/test_a.py::TestAPRIVATEUSE1::test_x_spyre_float64", "outcome": "passed", "duration": 4.0},
        {"id": "test/test_a.py::TestAPRIVATEUSE1::test_y_spyre", "outcome": "passed", "duration": 1.0},
    ]
    (run / "results.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    history = History.load([run])
    assert history.estimate_seconds(records[0]["id"]) == (2.0, True)
    assert history.estimate_seconds("test/test_a.py::TestAPRIVATEUSE1::test_z_spyre") == (1.0, False)
    assert history.failure_rate("test/test_a.py::TestA::test_x") == 0.5
    assert history.previously_failed() == []  # the last record of test_x passed
    history.record(records[0]["id"], "failed", 2.0)
    assert history.previously_failed() == ["test/test_a.py::TestA::test_x"]


def test_history_bad_line_names_file_and_line(tmp_path):
    path = tmp_path / "results.jsonl"
    path.write_text('{"id": "a", "outcome": "passed"}\nnot json\n')
    with pytest.raises(SelectorError, match=r"results.jsonl:2: not a JSON record"):
        History.load([path])

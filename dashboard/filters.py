"""The filters each list accepts, parsed the same way for a page and its API twin."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.params import BadParam, bool_param, choices_param, int_param, text_param
from dashboard.queries import RUN_STATUSES, STAGES, TRIGGERS
from relay.execution.outcomes import OUTCOMES

SORTS = ("newest", "worst")


def run_list_filters(args: Mapping[str, str]) -> dict[str, Any]:
    sort = args.get("sort") or "newest"
    if sort not in SORTS:
        raise BadParam("sort", f"expected one of {', '.join(SORTS)}, got {sort[:40]!r}")
    return {"statuses": choices_param(args, "status", RUN_STATUSES),
            "triggers": choices_param(args, "trigger", TRIGGERS),
            "ref": text_param(args, "ref", 128), "sort": sort}


def result_filters(args: Mapping[str, str]) -> dict[str, Any]:
    return {"outcomes": choices_param(args, "outcome", OUTCOMES),
            "new_failures": bool_param(args, "new_failures"), "flaky": bool_param(args, "flaky"),
            "file": text_param(args, "file"), "text": text_param(args, "q")}


def explanation_filters(args: Mapping[str, str]) -> dict[str, Any]:
    return {"selected": bool_param(args, "selected"), "stages": choices_param(args, "stage", STAGES),
            "text": text_param(args, "q")}


def required_test_id(args: Mapping[str, str]) -> str:
    test_id = text_param(args, "id", 1000)
    if not test_id:
        raise BadParam("id", "required: a test id such as test/test_ops.py::TestCommon::test_add")
    return test_id


def matrix_filters(args: Mapping[str, str]) -> dict[str, Any]:
    return {"runs": int_param(args, "runs", 12, 1, 50), "ref": text_param(args, "ref", 128)}


def trend_filters(args: Mapping[str, str]) -> dict[str, Any]:
    return {"days": int_param(args, "days", 30, 1, 365)}

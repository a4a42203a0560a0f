"""Server-rendered pages: runs list, run, selection, test history, health."""
from __future__ import annotations

from flask import Blueprint, render_template, request, send_from_directory, url_for
from sqlalchemy.exc import OperationalError

from dashboard import charts, filters, queries
from dashboard.auth import authorized, token_required
from dashboard.db import get_session
from dashboard.params import PageRequest
from relay.execution.outcomes import OUTCOMES

blueprint = Blueprint("pages", __name__, template_folder="templates", static_folder="static",
                      static_url_path="/static/dashboard")


@blueprint.app_template_filter("when")
def when(value: str | None) -> str:
    """ISO timestamps as '2026-12-02 20:15 UTC'."""
    return f"{value[:10]} {value[11:16]} UTC" if value else "—"


@blueprint.app_template_filter("seconds")
def seconds(value: float | None) -> str:
    if value is None:
        return "—"
    minutes, secs = divmod(int(round(value)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s" if minutes else f"{value:.1f}s"


@blueprint.app_template_filter("percent")
def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


@blueprint.app_template_global()
def page_url(**changes) -> str:
    """The current URL with some query parameters changed (pagination, filter links); None drops one."""
    args = {**request.args.to_dict(), **changes}
    args = {k: v for k, v in args.items() if v not in (None, "")}
    return url_for(request.endpoint, **(request.view_args or {}), **args)


@blueprint.record_once
def _template_globals(state) -> None:
    # Globals, not a context processor: macros imported without context still see them.
    state.app.jinja_env.globals.update(
        outcome_class=charts.outcome_class, rate_class=charts.rate_class, cell_class=charts.cell_class,
        flat_stats=charts.flat_stats, timeline_chart=charts.timeline_chart, can_see_errors=authorized,
        OUTCOMES=OUTCOMES, RUN_STATUSES=queries.RUN_STATUSES, TRIGGERS=queries.TRIGGERS, STAGES=queries.STAGES)


@blueprint.get("/")
def runs():
    session = get_session()
    listing = queries.list_runs(session, PageRequest.from_args(request.args, 25),
                                **filters.run_list_filters(request.args))
    points = [{"label": f"{r['from_ref']} → {r['to_ref']}", "rate": r["pass_rate"],
               "href": url_for("pages.run", run_id=r["id"])} for r in reversed(listing["items"])]
    return render_template("runs.html", listing=listing, windows=queries.window_health(session),
                           chart=charts.rate_chart(points), args=request.args)


@blueprint.get("/runs/<run_id>")
def run(run_id: str):
    session = get_session()
    detail = queries.get_run(session, run_id)
    results = queries.run_results(session, run_id, PageRequest.from_args(request.args),
                                  **filters.result_filters(request.args))
    return render_template("run.html", run=detail, results=results, files=queries.run_files(session, run_id),
                           funnel=charts.funnel_chart(detail["funnel"]["stages"]), args=request.args)


@blueprint.get("/runs/<run_id>/selection")
def selection(run_id: str):
    session = get_session()
    detail = queries.get_run(session, run_id)
    decisions = queries.run_explanations(session, run_id, PageRequest.from_args(request.args),
                                         **filters.explanation_filters(request.args))
    return render_template("selection.html", run=detail, decisions=decisions,
                           funnel=charts.funnel_chart(detail["funnel"]["stages"]), args=request.args)


@blueprint.get("/runs/<run_id>/artifacts/<name>")
def artifact(run_id: str, name: str):
    path = queries.artifact_path(get_session(), run_id, name)
    return send_from_directory(path.parent, path.name, as_attachment=name.endswith(".yaml"),
                               mimetype="text/plain" if name.endswith((".yaml", ".jsonl")) else None)


@blueprint.get("/tests")
def test_history():
    history = queries.test_history(get_session(), filters.required_test_id(request.args),
                                   PageRequest.from_args(request.args))
    return render_template("test.html", history=history, timeline=charts.timeline_chart(history["timeline"]))


@blueprint.get("/matrix")
def matrix():
    return render_template("matrix.html", matrix=queries.matrix(get_session(), **filters.matrix_filters(request.args)),
                           args=request.args)


@blueprint.get("/trends")
def trends():
    data = queries.trends(get_session(), **filters.trend_filters(request.args))
    pass_rate = charts.rate_chart([{"label": p["day"], "rate": p["pass_rate"],
                                    "href": url_for("pages.runs")} for p in data["points"]])
    selected = charts.rate_chart([{"label": p["day"], "rate": p["selected_fraction"],
                                   "href": url_for("pages.runs")} for p in data["points"]],
                                 floor=0.0, grid=(1.0, 0.5), colour=lambda _: "muted")
    recall = charts.rate_chart([{"label": f"{e['from_ref']} → {e['to_ref']}", "rate": e["test_recall"],
                                 "href": url_for("pages.trends")} for e in data["evals"]], floor=0.0, grid=(1.0, 0.5))
    return render_template("trends.html", trends=data, pass_rate=pass_rate, selected=selected, recall=recall,
                           args=request.args)


@blueprint.get("/health")
@token_required
def health():
    try:
        state, status = queries.health(get_session()), 200
    except OperationalError as exc:
        state, status = queries.database_unreachable(exc), 503
    return render_template("health.html", health=state), status

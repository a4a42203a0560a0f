"""Every link on every page answers 200: pages, filters, pagination, histories and artifacts.

Crawls the dashboard over real HTTP from its front page, following every same-site link it finds.
One run's artifacts directory is stored relative, as relays before absolute paths stored it
(relative to where `relay-cli run` was started): it must still be served, from the data dir.
"""
from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from werkzeug.serving import make_server

from dashboard import create_app
from relay.config import Settings
from relay.storage import Run, session_scope
from tests.dashboard.dashboard_fixtures import seeded  # noqa: F401

LIMIT = 1500  # distinct URLs: far above what the seeded pages link to, a guard against a link loop


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag in ("a", "link") and href:
            self.hrefs.append(href)


@pytest.fixture(scope="module")
def relative_artifacts_server(seeded):  # noqa: F811 - the fixture imported above
    data_dir = Path(seeded.url.removeprefix("sqlite:///")).parent  # runs/<id>/ lives below it
    with session_scope(seeded.url) as session:
        run = session.get(Run, seeded.latest_run_id)
        assert run.output_dir and Path(run.output_dir).is_dir()
        run.output_dir = f"elsewhere/runs/{run.id}"  # as a relay started from another directory kept it
    server = make_server("127.0.0.1", 0, create_app(Settings(database_url=seeded.url, data_dir=data_dir)),
                         threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=10)


def test_every_link_of_every_page_answers_200(relative_artifacts_server, seeded):  # noqa: F811
    base = relative_artifacts_server
    seen, queue, broken, artifacts = {base + "/"}, deque([base + "/"]), [], 0
    while queue:
        url = queue.popleft()
        try:
            with urllib.request.urlopen(url, timeout=60) as response:
                kind, body = response.headers.get_content_type(), response.read()
        except urllib.error.HTTPError as exc:
            broken.append(f"{exc.code} {url}")
            continue
        artifacts += "/artifacts/" in url
        if kind != "text/html":
            continue
        parser = _Links()
        parser.feed(body.decode("utf-8"))
        for href in parser.hrefs:
            target = urldefrag(urljoin(url, href)).url
            if urlsplit(target).netloc == urlsplit(base).netloc and target not in seen:
                seen.add(target)
                queue.append(target)
        assert len(seen) < LIMIT, "the crawl does not end: a page links to ever new URLs"
    assert not broken, "\n".join(broken)
    assert artifacts >= 2  # the latest run's artifact links were among them, and answered
    assert any(f"/runs/{seeded.latest_run_id}/artifacts/testdefs-patch.yaml" in url for url in seen)

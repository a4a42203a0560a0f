"""Session fixtures for real services, shared by every area's tests (see tests/service_fixtures.py)."""
import sys
from pathlib import Path

from service_fixtures import celery_worker, postgres_url, redis_server, redis_url  # noqa: F401

# pytest put tests/ on sys.path to import this file. Left there, tests/relay, tests/selector, ...
# would shadow the real packages as empty namespace packages: take it off again, and forget any
# namespace package imported meanwhile.
_TESTS = str(Path(__file__).resolve().parent)
sys.path[:] = [p for p in sys.path if p and str(Path(p).resolve()) != _TESTS]
for _name, _module in list(sys.modules.items()):
    if getattr(_module, "__file__", "") is None and str(getattr(_module, "__path__", "")).find(_TESTS) >= 0:
        del sys.modules[_name]

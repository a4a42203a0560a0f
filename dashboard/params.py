"""Query-string parsing shared by the pages and the API: bad input names the parameter."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off", ""})
MAX_PER_PAGE = 200


class BadParam(ValueError):
    """A query parameter a user got wrong; becomes a 400 naming it."""

    def __init__(self, parameter: str, message: str) -> None:
        super().__init__(f"query parameter '{parameter}': {message}")
        self.parameter = parameter


def int_param(args: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadParam(name, f"expected an integer, got {raw[:40]!r}") from None
    if not low <= value <= high:
        raise BadParam(name, f"expected {low}..{high}, got {value}")
    return value


def bool_param(args: Mapping[str, str], name: str) -> bool | None:
    """None when absent, so a filter can be 'not applied' rather than 'false'."""
    raw = args.get(name)
    if raw is None:
        return None
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False if word else None
    raise BadParam(name, f"expected true or false, got {raw[:40]!r}")


def choices_param(args: Mapping[str, str], name: str, allowed: Iterable[str]) -> list[str]:
    """A comma-separated subset of ``allowed`` (empty list: no filter)."""
    allowed = tuple(allowed)
    raw = args.get(name) or ""
    values = [v.strip() for v in raw.split(",") if v.strip()]
    unknown = [v for v in values if v not in allowed]
    if unknown:
        raise BadParam(name, f"unknown value {unknown[0][:40]!r}; expected one of {', '.join(allowed)}")
    return values


def text_param(args: Mapping[str, str], name: str, max_length: int = 300) -> str | None:
    raw = (args.get(name) or "").strip()
    if len(raw) > max_length:
        raise BadParam(name, f"longer than {max_length} characters")
    return raw or None


@dataclass(frozen=True)
class PageRequest:
    page: int
    per_page: int

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.per_page

    @classmethod
    def from_args(cls, args: Mapping[str, str], default_per_page: int = 50) -> PageRequest:
        return cls(page=int_param(args, "page", 1, 1, 1_000_000),
                   per_page=int_param(args, "per_page", default_per_page, 1, MAX_PER_PAGE))


def page_info(request: PageRequest, total: int) -> dict:
    pages = max(1, -(-total // request.per_page))
    return {"page": request.page, "per_page": request.per_page, "total": total, "pages": pages,
            "has_next": request.page < pages, "has_prev": request.page > 1}

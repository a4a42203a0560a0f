"""One place that keeps credentials out of logs, the database, pages and the API.

Two layers, both applied by ``redact(text)``:
- every secret the process was configured with (``Settings`` registers them when built: tokens,
  the webhook secret, and the userinfo and query values of every configured URL) is replaced
  wherever it appears verbatim, e.g. inside an exception message that quotes a request URL;
- any URL's ``user:password@`` and the values of credential-looking query parameters
  (``?token=``, ``key``, ``secret``, ``password``, ``sig``...) are masked even when unknown.

``redact_url`` is the display form of one configured URL. Callers: the ``RedactedText`` column
type (relay.storage.models), the log filter installed by ``install_log_filter``, ``Settings``'
repr, the dashboard's health views.
"""
from __future__ import annotations

import logging
import re
import threading
from urllib.parse import parse_qsl, urlsplit

MASK = "***"
MIN_SECRET = 4  # shorter values would mask ordinary words
_SENSITIVE_KEY = r"(?:[a-z_]*(?:token|key|secret|password|passwd|pwd|sig|signature|auth|credential)[a-z_]*)"
_USERINFO = re.compile(r"(?P<scheme>[a-z][a-z0-9+.-]*://)(?P<userinfo>[^/\s@:]*(?::[^/\s@]*)?)@", re.IGNORECASE)
_QUERY_SECRET = re.compile(rf"(?P<key>[?&;]{_SENSITIVE_KEY}=)(?P<value>[^&#\s'\"]+)", re.IGNORECASE)

_lock = threading.Lock()
_secrets: set[str] = set()


def url_secrets(url: str | None) -> set[str]:
    """The credential parts of one URL: username, password and every query value."""
    if not url or "://" not in url:
        return set()
    try:
        parts = urlsplit(url)
        found = {parts.username or "", parts.password or ""}
    except ValueError:  # a malformed port, say: the regex layer still masks the userinfo
        return set()
    found |= {value for _key, value in parse_qsl(parts.query, keep_blank_values=False)}
    return {value for value in found if len(value) >= MIN_SECRET}


def register(*values: str | None, urls: tuple[str | None, ...] = ()) -> None:
    """Remember secret values (and the credential parts of ``urls``) so ``redact`` masks them."""
    found = {v for v in values if v and len(v) >= MIN_SECRET}
    for url in urls:
        found |= url_secrets(url)
    if found - _secrets:
        with _lock:
            _secrets.update(found)


def redact(text: str | None) -> str | None:
    """``text`` with every known secret and every URL credential masked; None stays None."""
    if not text:
        return text
    for secret in sorted(_secrets, key=len, reverse=True):  # longest first: a secret may contain another
        if secret in text:
            text = text.replace(secret, MASK)
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    return _QUERY_SECRET.sub(lambda m: f"{m['key']}{MASK}", text)


def redact_url(url: str | None) -> str | None:
    """The display form of a configured URL: userinfo and every query value masked."""
    if not url or "://" not in url:
        return url
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", url)
    if "?" in text:
        base, _, rest = text.partition("?")
        query, hash_mark, fragment = rest.partition("#")
        masked = "&".join(f"{pair.partition('=')[0]}={MASK}" if "=" in pair else pair for pair in query.split("&"))
        text = f"{base}?{masked}{hash_mark}{fragment}"
    return redact(text)


class RedactingFilter(logging.Filter):
    """Formats each record's message once and masks it, so neither the message nor its args leak."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message or record.args:
            record.msg, record.args = cleaned, None
        if record.exc_info and record.exc_info[1] is not None:
            # Tracebacks quote exception messages: format them here, masked, instead of in the handler.
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
            record.msg = f"{record.msg}\n{record.exc_text}"
            record.exc_text = None
        return True


def install_log_filter(logger: logging.Logger | None = None) -> None:
    """Mask secrets in every record that reaches the handlers of ``logger`` (default: the root)."""
    logger = logger or logging.getLogger()
    for handler in logger.handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())

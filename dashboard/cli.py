"""`relay-cli dashboard`: serve the dashboard pages and JSON API over the relay database."""
from __future__ import annotations

import argparse
import socket
from pathlib import Path
from urllib.parse import urlsplit

from relay.config import DEFAULT_DASHBOARD_ADDRESS, load_settings
from relay.errors import UserError

DEFAULT_HOST, DEFAULT_PORT = DEFAULT_DASHBOARD_ADDRESS


def register(subparsers) -> None:
    parser = subparsers.add_parser("dashboard", help="serve the dashboard web UI and JSON API",
                                   description=__doc__.splitlines()[0].split(": ", 1)[1])
    parser.add_argument("--host", default=None,
                        help=f"address to bind (default: the host of RELAY_DASHBOARD_URL, else {DEFAULT_HOST})")
    parser.add_argument("--port", type=int, default=None,
                        help=f"port to bind (default: the port of RELAY_DASHBOARD_URL, else {DEFAULT_PORT})")
    parser.set_defaults(handler=serve_dashboard)


def bind_address(host: str | None, port: int | None, dashboard_url: str | None) -> tuple[str, int]:
    """Flags win; otherwise the configured public URL says where the dashboard lives."""
    parts = urlsplit(dashboard_url) if dashboard_url else None
    try:
        url_port = parts.port if parts else None
    except ValueError:
        raise UserError(f"RELAY_DASHBOARD_URL {dashboard_url!r} has an invalid port",
                        hint="expected http://HOST:PORT") from None
    host = host or (parts.hostname if parts and parts.hostname else DEFAULT_HOST)
    port = port if port is not None else url_port or DEFAULT_PORT
    if not 0 <= port <= 65535:
        raise UserError(f"--port must be 0..65535, got {port}")
    return host, port


def _listen(host: str, port: int) -> socket.socket:
    """Bind here rather than in werkzeug, which exits on a busy port instead of raising."""
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(128)
    except socket.gaierror as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}", hint="check --host") from None
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror}",
                        hint="pick another --port or stop what uses it") from None
    return listener


def serve_dashboard(args: argparse.Namespace) -> int:
    from werkzeug.serving import make_server

    from dashboard import create_app
    from relay.storage import init_db

    settings = load_settings(Path(args.config) if args.config else None)
    host, port = bind_address(args.host, args.port, settings.dashboard_url)
    init_db(settings.resolved_database_url)  # an unreachable database is one line now, not a 503 later
    app = create_app(settings)
    listener = _listen(host, port)
    server = make_server(host, port, app, threaded=True, fd=listener.fileno())
    print(f"dashboard: serving http://{host}:{listener.getsockname()[1]}/ "
          f"(database {settings.resolved_database_url.split('@')[-1]}; Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        listener.close()
    return 0

"""docker-compose.yml runs only commands and WSGI entry points that exist in this project."""
import importlib.util
import shlex
from pathlib import Path

import yaml

from relay.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]


def compose_commands() -> dict[str, list[str]]:
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    return {name: spec["command"] for name, spec in services.items() if "command" in spec}


def test_every_relay_cli_command_parses() -> None:
    parser = build_parser()
    relay_commands = [c for c in compose_commands().values() if c[0] == "relay-cli"]
    assert relay_commands, "the compose file should start workers with relay-cli"
    for command in relay_commands:
        args = parser.parse_args(command[1:])  # exits 2 on an unknown verb or flag
        assert callable(args.handler), shlex.join(command)


def test_every_gunicorn_target_is_a_module_here() -> None:
    targets = [c[-1] for c in compose_commands().values() if c[0] == "gunicorn"]
    assert sorted(targets) == ["dashboard.wsgi:app", "relay.intake.wsgi:app"]
    for target in targets:
        module, attribute = target.split(":")
        spec = importlib.util.find_spec(module)
        assert spec is not None, f"{module} does not exist"
        assert f"{attribute}" in Path(spec.origin).read_text(), f"{module} defines no {attribute}"


def test_the_image_installs_what_the_services_run() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "gunicorn" in dockerfile
    assert "torch==2.13.0" in dockerfile
    assert "-e backend" in dockerfile  # the device's C++ extension is built in the image

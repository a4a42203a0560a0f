"""Settings precedence: flag > RELAY_* environment > relay.yaml > default; secrets stay hidden."""
from pathlib import Path

import pytest

from relay.config import load_settings
from relay.errors import UserError


def test_precedence_flag_over_env_over_file(tmp_path: Path) -> None:
    config = tmp_path / "relay.yaml"
    config.write_text("shards: 3\nexecutor: celery\nupstream: /from/file\n")
    settings = load_settings(config, overrides={"shards": 5},
                             environ={"RELAY_EXECUTOR": "local", "RELAY_SHARDS": "4"})
    assert settings.shards == 5  # flag wins
    assert settings.executor == "local"  # env beats file
    assert settings.upstream == "/from/file"  # file beats default
    assert settings.budget is None  # default


def test_default_database_lives_in_data_dir(tmp_path: Path) -> None:
    settings = load_settings(None, environ={"RELAY_DATA_DIR": str(tmp_path)})
    assert settings.resolved_database_url == f"sqlite:///{tmp_path.resolve() / 'relay.db'}"


def test_secret_from_file_and_never_in_repr(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("s3cr3t\n")
    settings = load_settings(None, environ={"RELAY_WEBHOOK_SECRET_FILE": str(secret)})
    assert settings.webhook_secret == "s3cr3t"
    assert "s3cr3t" not in repr(settings)


def test_bad_yaml_names_file_and_line(tmp_path: Path) -> None:
    config = tmp_path / "relay.yaml"
    config.write_text("shards: 2\nexecutor: [unclosed\n")
    with pytest.raises(UserError, match=r"relay.yaml:\d+: not valid YAML"):
        load_settings(config, environ={})


def test_bad_value_names_the_field(tmp_path: Path) -> None:
    config = tmp_path / "relay.yaml"
    config.write_text("shards: many\n")
    with pytest.raises(UserError, match="setting 'shards'"):
        load_settings(config, environ={})


def test_unknown_setting_is_rejected(tmp_path: Path) -> None:
    config = tmp_path / "relay.yaml"
    config.write_text("shardz: 2\n")
    with pytest.raises(UserError, match="shardz"):
        load_settings(config, environ={})


def test_missing_config_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        load_settings(tmp_path / "nope.yaml", environ={})


def test_runner_settings_come_from_env_and_file_and_are_checked(tmp_path: Path) -> None:
    config = tmp_path / "relay.yaml"
    config.write_text("reruns: 3\ntest_timeout: 45\ntrigger_policy: policy.yaml\n")
    settings = load_settings(config, environ={"RELAY_SHARD_TIMEOUT": "600"})
    assert (settings.reruns, settings.test_timeout, settings.shard_timeout) == (3, 45.0, 600.0)
    assert settings.trigger_policy == Path("policy.yaml")
    assert load_settings(config, environ={"RELAY_TRIGGER_POLICY": "/etc/relay/policy.yaml"}).trigger_policy == \
        Path("/etc/relay/policy.yaml")
    with pytest.raises(UserError, match="setting 'shard_timeout'.*greater than 0"):
        load_settings(config, environ={"RELAY_SHARD_TIMEOUT": "0"})

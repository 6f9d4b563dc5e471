"""Settings precedence: defaults < config file < env < flags."""

from __future__ import annotations

import pytest

from kbagent.errors import BadInputError
from kbagent.settings import Settings


def test_precedence(kb_home, monkeypatch):
    assert Settings.load().max_steps == 5
    kb_home.mkdir(parents=True)
    (kb_home / "config.toml").write_text("max_steps = 7\nchunk_tokens = 150\n")
    assert Settings.load().max_steps == 7
    monkeypatch.setenv("KBAGENT_MAX_STEPS", "9")
    s = Settings.load()
    assert s.max_steps == 9 and s.chunk_tokens == 150
    assert Settings.load(max_steps=3, chunk_tokens=None).max_steps == 3


def test_bad_config_is_a_clear_error(kb_home, monkeypatch):
    kb_home.mkdir(parents=True)
    (kb_home / "config.toml").write_text("max_steps = [\n")
    with pytest.raises(BadInputError, match="not valid TOML"):
        Settings.load()
    (kb_home / "config.toml").write_text("colour = 'red'\n")
    with pytest.raises(BadInputError, match="unknown setting 'colour'"):
        Settings.load()
    (kb_home / "config.toml").write_text("")
    monkeypatch.setenv("KBAGENT_MAX_STEPS", "many")
    with pytest.raises(BadInputError, match="must be int"):
        Settings.load()


def test_every_setting_type_has_a_validator():
    import dataclasses

    from kbagent.settings import VALIDATORS

    for f in dataclasses.fields(Settings):
        assert f.type in VALIDATORS, f.name


@pytest.mark.parametrize(("raw", "expected"), [
    ("false", False), ("False", False), ("0", False), ("no", False), ("", False),
    ("TRUE", True), ("1", True), ("yes", True), ("on", True)])
def test_a_bool_from_the_environment_is_a_bool(kb_home, monkeypatch, raw, expected):
    monkeypatch.setenv("KBAGENT_CODE_TOOLS", raw)
    assert Settings.load().code_tools is expected


def test_a_bool_from_the_config_file_is_a_bool(kb_home):
    kb_home.mkdir(parents=True)
    (kb_home / "config.toml").write_text("code_tools = false\n")
    assert Settings.load().code_tools is False
    (kb_home / "config.toml").write_text("code_tools = true\n")
    assert Settings.load().code_tools is True


@pytest.mark.parametrize(("key", "toml", "kind"), [
    ("code_tools", "'maybe'", "bool"), ("code_tools", "[1]", "bool"),
    ("max_steps", "'abc'", "int"), ("max_steps", "true", "int"), ("max_steps", "2.5", "int"),
    ("time_limit", "'soon'", "float"), ("time_limit", "false", "float"),
    ("llm_url", "false", "str"), ("llm_url", "['a']", "str"), ("home", "3", "Path")])
def test_a_wrongly_typed_config_value_is_a_one_line_error(kb_home, key, toml, kind):
    kb_home.mkdir(parents=True)
    (kb_home / "config.toml").write_text(f"{key} = {toml}\n")
    with pytest.raises(BadInputError) as e:
        Settings.load()
    message = str(e.value)
    assert f"setting {key!r}" in message and f"must be {kind}" in message
    assert "\n" not in message


def test_an_int_from_the_environment_is_checked(kb_home, monkeypatch):
    monkeypatch.setenv("KBAGENT_MAX_STEPS", "abc")
    with pytest.raises(BadInputError, match=r"^setting 'max_steps' from environment must be "
                                            r"int, got 'abc'$"):
        Settings.load()
    monkeypatch.setenv("KBAGENT_MAX_STEPS", " 8 ")
    assert Settings.load().max_steps == 8
    monkeypatch.setenv("KBAGENT_TIME_LIMIT", "12.5")
    assert Settings.load().time_limit == 12.5


def test_typed_values_from_the_config_file_keep_their_type(kb_home):
    kb_home.mkdir(parents=True)
    (kb_home / "config.toml").write_text("max_steps = 6\ntime_limit = 30\nseed = 7.0\n"
                                         "llm_server_model = 'm'\n")
    s = Settings.load()
    assert (s.max_steps, s.time_limit, s.seed, s.llm_server_model) == (6, 30.0, 7, "m")
    assert type(s.time_limit) is float and type(s.seed) is int


def test_defaults_have_one_source():
    from kbagent.agent.run.state import AgentConfig
    from kbagent.settings import default

    cfg, s = AgentConfig(), Settings()
    for name in ("max_steps", "token_budget", "time_limit", "max_tokens_per_step",
                 "search_first", "code_tools"):
        assert getattr(cfg, name) == getattr(s, name) == default(name), name

"""Settings precedence: defaults < config file < env < flags."""

from __future__ import annotations

import pytest

from kbagent.defaults import EmbeddingPrecision, EmbeddingRuntime, SearchFirst
from kbagent.errors import BadInputError
from kbagent.settings import Settings, SettingsError, default


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


def test_every_setting_has_one_default_and_a_checked_type():
    """Each field but home and the keymap takes its default from kbagent.defaults, and
    each is a strict type (a check before pydantic's lax one) or an enum."""
    from enum import Enum

    from kbagent.defaults import DEFAULTS

    names = set(Settings.model_fields) - {"home", "tui_keymap"}
    assert names == set(type(DEFAULTS).__dataclass_fields__)
    for name, f in Settings.model_fields.items():
        assert f.metadata or issubclass(f.annotation, Enum), name
        if name in names:
            assert f.default == getattr(DEFAULTS, name), name


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
    ("llm_url", "false", "str"), ("llm_url", "['a']", "str"), ("home", "3", "Path"),
    ("tui_keymap", "3", "a table of binding id"),
    ("tui_keymap", "{'ask.submit' = 1}", "a table of binding id"),
    ("search_first", "'bogus'", "one of question, model, off"),
    ("embedding_runtime", "'gpu'", "one of auto, onnx, torch"),
    ("embedding_precision", "16", "one of fp32, int8")])
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


def test_only_the_capitalised_variable_names_a_setting(kb_home, monkeypatch):
    """KBAGENT_MAX_STEPS, exactly: pydantic-settings would also read kbagent_max_steps
    or Kbagent_Grounded, so a stray variable could change (or break) every command."""
    monkeypatch.delenv("KBAGENT_GROUNDED", raising=False)  # conftest's
    monkeypatch.setenv("kbagent_max_steps", "abc")
    monkeypatch.setenv("Kbagent_Grounded", "no")
    monkeypatch.setenv("KBAGENT_max_steps", "9")
    settings = Settings.load()
    assert settings.max_steps == default("max_steps")
    assert settings.grounded is default("grounded") is True
    monkeypatch.setenv("KBAGENT_MAX_STEPS", "7")
    assert Settings.load().max_steps == 7


def test_typed_values_from_the_config_file_keep_their_type(kb_home):
    kb_home.mkdir(parents=True)
    (kb_home / "config.toml").write_text("max_steps = 6\ntime_limit = 30\nseed = 7.0\n"
                                         "llm_server_model = 'm'\n")
    s = Settings.load()
    assert (s.max_steps, s.time_limit, s.seed, s.llm_server_model) == (6, 30.0, 7, "m")
    assert type(s.time_limit) is float and type(s.seed) is int


def test_defaults_have_one_source():
    from kbagent.agent.run.state import AgentConfig

    cfg, s = AgentConfig(), Settings()
    for name in ("max_steps", "token_budget", "time_limit", "max_tokens_per_step",
                 "search_first", "code_tools"):
        assert getattr(cfg, name) == getattr(s, name) == default(name), name


def test_precedence_of_each_source_field_by_field(kb_home, monkeypatch):
    """defaults < file < env < flags, each source winning only for the keys it sets."""
    kb_home.mkdir(parents=True)
    (kb_home / "config.toml").write_text(
        "search_first = 'model'\nembedding_runtime = 'torch'\ntime_limit = 60\n"
        "[tui_keymap]\n'ask.submit' = 'ctrl+s'\n")
    monkeypatch.setenv("KBAGENT_EMBEDDING_RUNTIME", "onnx")
    monkeypatch.setenv("KBAGENT_TIME_LIMIT", "30")
    s = Settings.load(time_limit=10.0, max_steps=None)
    assert s.search_first is SearchFirst.MODEL  # file over default
    assert s.embedding_runtime is EmbeddingRuntime.ONNX  # env over file
    assert s.time_limit == 10.0  # flag over env
    assert s.max_steps == default("max_steps") and s.grounded is False  # None flag: unset
    assert s.tui_keymap == {"ask.submit": "ctrl+s"}
    assert s.embedding_precision is EmbeddingPrecision.FP32  # default


@pytest.mark.parametrize(("origin", "field", "value"), [
    ("environment", "search_first", "first"), ("environment", "embedding_runtime", "cuda"),
    ("environment", "embedding_precision", "fp16"), ("flags", "search_first", "first"),
    ("flags", "embedding_runtime", "cuda"), ("flags", "embedding_precision", "fp16")])
def test_each_enum_setting_refuses_a_bad_value_by_name(kb_home, monkeypatch, origin, field,
                                                       value):
    if origin == "environment":
        monkeypatch.setenv(f"KBAGENT_{field.upper()}", value)
        flags = {}
    else:
        flags = {field: value}
    with pytest.raises(SettingsError) as e:
        Settings.load(**flags)
    assert isinstance(e.value, BadInputError) and e.value.exit_code == 2
    message = str(e.value)
    assert message.startswith(f"setting {field!r} from {origin} must be one of ")
    assert message.endswith(f", got {value!r}") and "\n" not in message


@pytest.mark.parametrize(("toml", "expected"), [
    # the table form: quoted ids, or unquoted dotted ids (a nested table)
    ("[tui_keymap]\n'ask.submit' = 'ctrl+s'\n'screen.search' = 'f6'\n",
     {"ask.submit": "ctrl+s", "screen.search": "f6"}),
    ("[tui_keymap]\nask.submit = 'ctrl+s'\nscreen.search = 'f6'\n",
     {"ask.submit": "ctrl+s", "screen.search": "f6"}),
    ("tui_keymap = {'ask.submit' = 'ctrl+s'}\n", {"ask.submit": "ctrl+s"}),
    # the older string form, blanks and parts without '=' skipped as before
    ("tui_keymap = 'ask.submit=ctrl+s; screen.search = f6;junk;=x;y='\n",
     {"ask.submit": "ctrl+s", "screen.search": "f6"}),
    ("tui_keymap = ''\n", {})])
def test_the_keymap_from_the_config_file(kb_home, toml, expected):
    kb_home.mkdir(parents=True)
    (kb_home / "config.toml").write_text(toml)
    assert Settings.load().tui_keymap == expected


def test_the_keymap_from_the_environment_and_by_assignment(kb_home, monkeypatch):
    monkeypatch.setenv("KBAGENT_TUI_KEYMAP", "ask.submit=ctrl+s;app.quit=ctrl+x")
    s = Settings.load()
    assert s.tui_keymap == {"ask.submit": "ctrl+s", "app.quit": "ctrl+x"}
    s.tui_keymap = "ask.new=ctrl+t"  # assignments are validated too
    assert s.tui_keymap == {"ask.new": "ctrl+t"}


def test_an_unknown_key_in_the_config_file_is_an_error_and_unknown_env_is_ignored(
        kb_home, monkeypatch):
    monkeypatch.setenv("KBAGENT_NO_SUCH_SETTING", "1")  # like KBAGENT_CONFIG, not a setting
    assert Settings.load().max_steps == default("max_steps")
    kb_home.mkdir(parents=True)
    (kb_home / "config.toml").write_text("max_step = 3\n")
    with pytest.raises(SettingsError, match=r"^unknown setting 'max_step' in config file .*"
                                            r"config\.toml$"):
        Settings.load()
    (kb_home / "config.toml").write_text("MAX_STEPS = 3\n")  # keys are the names exactly
    with pytest.raises(SettingsError, match=r"^unknown setting 'MAX_STEPS' in config file "):
        Settings.load()
    (kb_home / "config.toml").write_text("")
    with pytest.raises(SettingsError, match=r"^unknown setting 'colour' in flags$"):
        Settings.load(colour="red")
    with pytest.raises(SettingsError, match=r"^unknown setting 'MAX_STEPS' in flags$"):
        Settings.load(MAX_STEPS=3)


def test_kbagent_config_names_another_file(kb_home, tmp_path, monkeypatch):
    other = tmp_path / "elsewhere.toml"
    other.write_text("max_steps = 4\n")
    monkeypatch.setenv("KBAGENT_CONFIG", str(other))
    s = Settings.load()
    assert s.max_steps == 4 and s.config_path == other and s.home == kb_home


@pytest.mark.parametrize(("args", "field", "value", "choices"), [
    (["search", "x"], "embedding_runtime", "gpu", "auto, onnx, torch"),
    (["kbs"], "embedding_runtime", "gpu", "auto, onnx, torch"),
    (["ask", "--mode", "rag", "hello"], "embedding_runtime", "gpu", "auto, onnx, torch"),
    (["kbs"], "embedding_precision", "fp16", "fp32, int8"),
    (["ask", "--mode", "rag", "hello"], "search_first", "first", "question, model, off")])
def test_a_bad_setting_fails_the_cli_in_one_line(kb_home, monkeypatch, args, field, value,
                                                 choices):
    from typer.testing import CliRunner

    from kbagent.cli import app

    monkeypatch.setenv(f"KBAGENT_{field.upper()}", value)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert lines == [f"kbagent: error: setting {field!r} from environment must be one of "
                     f"{choices}, got {value!r}"]
    assert "Traceback" not in res.output


def test_a_bad_mode_flag_is_refused_by_the_cli(kb_home):
    from typer.testing import CliRunner

    from kbagent.cli import app

    res = CliRunner().invoke(app, ["ask", "--mode", "fast", "hello"])
    assert res.exit_code == 2 and "fast" in res.stderr and "Traceback" not in res.output


def test_agent_config_takes_the_enums_and_their_strings():
    from kbagent.agent.kinds import AskMode, ToolSet
    from kbagent.agent.run.state import AgentConfig

    cfg = AgentConfig(mode="rag", tools="full", search_first="off")  # type: ignore[arg-type]
    assert (cfg.mode, cfg.tools, cfg.search_first) == (AskMode.RAG, ToolSet.FULL,
                                                       SearchFirst.OFF)
    assert type(cfg.mode) is AskMode and type(cfg.search_first) is SearchFirst
    with pytest.raises(ValueError, match="'fast' is not a valid AskMode"):
        AgentConfig(mode="fast")  # type: ignore[arg-type]


def test_help_imports_the_defaults_but_not_pydantic():
    """``kbagent --help`` shows defaults from kbagent.defaults; the pydantic settings
    (about 100 ms of imports) load only when a command runs."""
    import json
    import subprocess
    import sys

    code = ("import sys, json\nfrom kbagent.cli import app\n"
            "print(json.dumps([m for m in ('kbagent.defaults', 'kbagent.settings', "
            "'pydantic', 'pydantic_settings') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert json.loads(out.stdout) == ["kbagent.defaults"]


def test_kbagent_home_finds_the_config_file_which_may_move_home(kb_home, tmp_path,
                                                                 monkeypatch):
    kb_home.mkdir(parents=True)
    assert Settings.load().home == kb_home
    (kb_home / "config.toml").write_text(f"home = {str(tmp_path / 'data')!r}\n")
    assert Settings.load().home == tmp_path / "data"
    assert Settings.load(home=tmp_path / "flag").home == tmp_path / "flag"  # no config there
    monkeypatch.setenv("KBAGENT_HOME", "")  # empty: the platform's default, not "."
    monkeypatch.setenv("KBAGENT_CONFIG", str(tmp_path / "none.toml"))  # not the user's
    assert Settings.load().home.is_absolute()

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

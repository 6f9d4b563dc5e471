"""Helpers shared by the CLI commands: error mapping, consoles, settings."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

from kbagent.errors import BadInputError, ExitCode, KbagentError

if TYPE_CHECKING:  # pydantic is imported when a command runs, not for --help
    from kbagent.kb.access import Principal
    from kbagent.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])


def _safe_console_class() -> Any:
    """A rich Console that writes no control sequence it did not make itself: the text
    of every segment (documents, file names, model output, messages quoting them) goes
    through :func:`kbagent.safe_text.clean` just before it is styled and written, so
    ``ESC ]52;…`` (clipboard), ``ESC ]0;…`` (title) or ``ESC [2J`` inside a document
    reach the terminal as nothing. Rich's own styles and cursor moves (progress bars)
    are kept. Markup inside text is escaped where the text is put into markup."""
    from rich.console import Console
    from rich.segment import Segment

    from kbagent.safe_text import clean

    class SafeConsole(Console):
        def _render_buffer(self, buffer: Any) -> str:
            return str(super()._render_buffer(
                seg if seg.control else Segment(clean(seg.text), seg.style, None)
                for seg in buffer))

    return SafeConsole


def stderr_console() -> Any:
    return _safe_console_class()(stderr=True, highlight=False, soft_wrap=True)


def stdout_console() -> Any:
    return _safe_console_class()(highlight=False, soft_wrap=True)


def literal(text: object) -> str:
    """``text`` for a rich markup string: shown as written (``[bold]`` or ``[link=…]``
    in a document stay text) and without control sequences."""
    from rich.markup import escape

    from kbagent.safe_text import clean

    return escape(clean(str(text)))


def fail(message: str, code: int = ExitCode.ERROR) -> NoReturn:
    stderr_console().print(f"[bold red]kbagent: error:[/] {literal(message)}")
    raise typer.Exit(code)


class _BytesOk:
    """Marks a text argument (``Annotated[str, typer.Argument(…), BYTES_OK]``) whose bytes
    that are not UTF-8 are no error: free text searched by meaning (they become U+FFFD)
    or a file path (the file system takes them)."""


BYTES_OK = _BytesOk()


def _undecodable(value: object) -> str | None:
    """The first character of ``value`` (a str or a list of them) no UTF-8 encoder can
    write: a byte of an argument that is not UTF-8 (``surrogateescape``), else None."""
    for text in value if isinstance(value, list | tuple) else [value]:
        if isinstance(text, str):
            for ch in text:
                if "\ud800" <= ch <= "\udfff":
                    return ch
    return None


def _refuse_undecodable(fn: Callable[..., Any], kwargs: dict[str, Any]) -> None:
    """Refuse (exit 2) a name, symbol, path or option value holding bytes that are not
    UTF-8: nothing stored or indexed can match it, and no encoder can write it. A
    ``Path`` and a text marked :data:`BYTES_OK` keep them."""
    bad = {k: ch for k, v in kwargs.items() if (ch := _undecodable(v)) is not None}
    if not bad:
        return
    import typing

    hints = typing.get_type_hints(fn, include_extras=True)
    command = getattr(kwargs.get("ctx"), "command", None)  # click's Context, as Typer passes it
    params = {p.name: p for p in getattr(command, "params", [])}
    for key, ch in bad.items():
        if BYTES_OK in getattr(hints.get(key), "__metadata__", ()):
            continue
        param = params.get(key)
        if getattr(param, "param_type_name", "") == "option" and (
                opts := getattr(param, "opts", None)):
            what = f"option {max(opts, key=len)}"
        else:
            what = f"argument {getattr(param, 'metavar', None) or key.upper()}"
        byte = f"byte 0x{ord(ch) - 0xDC00:02x}" if "\udc80" <= ch <= "\udcff" else (
            f"U+{ord(ch):04X}")
        raise BadInputError(f"{what} is not UTF-8 text ({byte}); kbagent reads "
                            "names, symbols and options as UTF-8")


def handles_errors(fn: F) -> F:
    """Turn KbagentError / Ctrl-C raised by a command into one line + exit code, and
    refuse arguments that are not UTF-8 text (see :func:`_refuse_undecodable`)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            _refuse_undecodable(fn, kwargs)
            return fn(*args, **kwargs)
        except KbagentError as e:
            fail(str(e), e.exit_code)
        except KeyboardInterrupt:
            fail("interrupted; nothing stored was changed", ExitCode.INTERRUPTED)

    return wrapper  # type: ignore[return-value]


def settings_from(ctx: typer.Context, **overrides: Any) -> Settings:
    """The settings of a command: its flags (``overrides``; ``None``: not given) over
    the environment, the config file and the defaults; a bad value is a one-line
    :class:`~kbagent.settings.SettingsError` (exit 2) through :func:`handles_errors`."""
    from kbagent.settings import Settings

    home = (ctx.find_root().obj or {}).get("home")
    return Settings.load(home=home, **overrides)


def warn(message: str) -> None:
    stderr_console().print(f"[yellow]warning:[/] {literal(message)}")


AS_HELP = "Act as USER from the users file (default $KBAGENT_HOME/users.toml)."
GROUPS_HELP = "Act as a member of these groups (comma-separated), e.g. hr,executives."
# who is asking, the same two options on every command that reads documents
AsOpt = Annotated[str | None, typer.Option("--as", help=AS_HELP, show_default=False)]
GroupsOpt = Annotated[str | None, typer.Option("--groups", help=GROUPS_HELP, show_default=False)]


def principal_from(settings: Settings, as_user: str | None, groups: str | None) -> Principal:
    """``--as USER`` / ``--groups a,b`` -> a Principal; neither: anonymous (public documents)."""
    from kbagent.kb.access import resolve_principal

    return resolve_principal(settings.users_path, as_user, groups)

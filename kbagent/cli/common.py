"""Helpers shared by the CLI commands: error mapping, consoles, settings."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Annotated, Any, NoReturn, TypeVar

import typer

from kbagent.errors import ExitCode, KbagentError

F = TypeVar("F", bound=Callable[..., Any])


def stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True, highlight=False, soft_wrap=True)


def stdout_console() -> Any:
    from rich.console import Console

    return Console(highlight=False, soft_wrap=True)


def fail(message: str, code: int = ExitCode.ERROR) -> NoReturn:
    from rich.markup import escape

    stderr_console().print(f"[bold red]kbagent: error:[/] {escape(message)}")
    raise typer.Exit(code)


def handles_errors(fn: F) -> F:
    """Turn KbagentError / Ctrl-C raised by a command into one line + exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except KbagentError as e:
            fail(str(e), e.exit_code)
        except KeyboardInterrupt:
            fail("interrupted; nothing stored was changed", ExitCode.INTERRUPTED)

    return wrapper  # type: ignore[return-value]


def settings_from(ctx: typer.Context, **overrides: Any) -> Any:
    from kbagent.settings import Settings

    home = (ctx.find_root().obj or {}).get("home")
    return Settings.load(home=home, **overrides)


def warn(message: str) -> None:
    from rich.markup import escape

    stderr_console().print(f"[yellow]warning:[/] {escape(message)}")


AS_HELP = "Act as USER from the users file (default $KBAGENT_HOME/users.toml)."
GROUPS_HELP = "Act as a member of these groups (comma-separated), e.g. hr,executives."
# who is asking, the same two options on every command that reads documents
AsOpt = Annotated[str | None, typer.Option("--as", help=AS_HELP, show_default=False)]
GroupsOpt = Annotated[str | None, typer.Option("--groups", help=GROUPS_HELP, show_default=False)]


def principal_from(settings: Any, as_user: str | None, groups: str | None) -> Any:
    """``--as USER`` / ``--groups a,b`` -> a Principal; neither: anonymous (public documents)."""
    from kbagent.kb.access import resolve_principal

    return resolve_principal(settings.users_path, as_user, groups)

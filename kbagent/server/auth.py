"""Bearer tokens for the HTTP server, mapped to principals; stored hashed.

The tokens file (default ``$KBAGENT_HOME/tokens.toml``, mode 0600) holds one table
per token, named for people; only the token's SHA-256 is kept, so the file can
show who may call but not how::

    [tokens.maya-laptop]
    sha256 = "9f2c..."
    user = "maya"            # groups from the users file, read when the server starts
    [tokens.build-bot]
    sha256 = "41d0..."
    groups = ["engineering"]

``kbagent serve token add NAME (--as USER | --groups a,b)`` makes a random token,
stores its hash and prints the token once. A request without a token is anonymous;
a token that is not in the file is refused (HTTP 401).

Whoever can write the tokens file (or the users file it names users from) can make
themselves any caller, so the server refuses to start, as ssh does, when either is
writable by its group or by others, or owned by someone else.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
from dataclasses import dataclass
from pathlib import Path

from kbagent.errors import BadInputError, NotFoundError
from kbagent.kb.access import Principal, load_users, parse_group_list, read_toml

TOKENS_FILE = "tokens.toml"
TOKEN_PREFIX = "kba_"
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenEntry:
    name: str
    sha256: str
    user: str | None = None
    groups: tuple[str, ...] = ()


def read_entries(path: Path) -> list[TokenEntry]:
    """The entries of a tokens file; a malformed file is a one-line error."""
    data = read_toml(path, "tokens file",
                     "add a token with 'kbagent serve token add NAME --groups ...'")
    tokens = data.get("tokens", {})
    if not isinstance(tokens, dict):
        raise BadInputError(f"tokens file {path}: [tokens] must be a table")
    out = []
    for name, entry in tokens.items():
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not isinstance(digest, str) or not re.fullmatch(r"[0-9a-f]{64}", digest):
            raise BadInputError(f"tokens file {path}: token {name!r} needs a sha256 = "
                                "\"<64 hex digits>\"")
        user, groups = entry.get("user"), entry.get("groups", [])
        if user is not None and not isinstance(user, str):
            raise BadInputError(f"tokens file {path}: token {name!r}: user must be a string")
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise BadInputError(f"tokens file {path}: token {name!r}: groups must be a list "
                                "of strings")
        out.append(TokenEntry(name, digest, user, tuple(groups)))
    return out


def check_private(path: Path, what: str) -> None:
    """Refuse a file that others could rewrite: writable by its group or by everyone,
    or owned by another user (root aside)."""
    try:
        st = path.stat()
    except OSError:
        return  # a missing file is reported by the reader, with its hint
    mode = st.st_mode & 0o777
    if mode & 0o022:
        raise BadInputError(f"{what} {path} is writable by other users (mode {mode:04o}); "
                            f"anyone could make themselves a caller: run 'chmod go-w {path}'")
    uid = os.getuid() if hasattr(os, "getuid") else None
    if uid is not None and st.st_uid not in (uid, 0):
        raise BadInputError(f"{what} {path} belongs to another user (uid {st.st_uid}); "
                            "the server trusts only its own user's files")


class TokenStore:
    """Token hash -> principal, built once when the server starts."""

    def __init__(self, principals: dict[str, Principal]) -> None:
        self._by_hash = principals

    @classmethod
    def load(cls, path: Path, users_file: Path) -> TokenStore:
        check_private(path, "tokens file")
        users: dict[str, frozenset[str]] | None = None
        out: dict[str, Principal] = {}
        for e in read_entries(path):
            if e.user is not None:
                if users is None:
                    check_private(users_file, "users file")
                    users = load_users(users_file)
                if e.user not in users:
                    raise NotFoundError(f"tokens file {path}: token {e.name!r} names unknown "
                                        f"user {e.user!r} (not in {users_file})")
                out[e.sha256] = Principal(e.user, users[e.user])
            else:
                groups = parse_group_list(",".join(e.groups), f"tokens file {path}")
                out[e.sha256] = Principal(f"token:{e.name}", groups)
        return cls(out)

    def __len__(self) -> int:
        return len(self._by_hash)

    def principal(self, token: str) -> Principal | None:
        """The principal of ``token``, or ``None`` when it is not a known token."""
        return self._by_hash.get(token_hash(token))


def add_token(path: Path, name: str, *, user: str | None = None,
              groups: frozenset[str] | None = None) -> str:
    """Store a new random token under ``name``; return the token (shown once)."""
    if not NAME_RE.match(name):
        raise BadInputError(f"invalid token name {name!r}: use letters, digits, '.', '_', '-'")
    if (user is None) == (groups is None):
        raise BadInputError("give the token's caller: --as USER or --groups a,b")
    entries = read_entries(path) if path.exists() else []
    if any(e.name == name for e in entries):
        raise BadInputError(f"a token named {name!r} already exists in {path}; remove it "
                            "first with 'kbagent serve token rm'")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    entries.append(TokenEntry(name, token_hash(token), user, tuple(sorted(groups or ()))))
    write_entries(path, entries)
    return token


def remove_token(path: Path, name: str) -> None:
    entries = read_entries(path)
    kept = [e for e in entries if e.name != name]
    if len(kept) == len(entries):
        raise NotFoundError(f"no token named {name!r} in {path}")
    write_entries(path, kept)


def write_entries(path: Path, entries: list[TokenEntry]) -> None:
    import json

    lines = ["# kbagent serve tokens: only SHA-256 hashes are stored "
             "(add with 'kbagent serve token add')"]
    for e in entries:
        lines += ["", f"[tokens.{json.dumps(e.name)}]", f"sha256 = {json.dumps(e.sha256)}"]
        if e.user is not None:
            lines.append(f"user = {json.dumps(e.user)}")
        else:
            lines.append(f"groups = {json.dumps(list(e.groups))}")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)

"""Who may read what: principals, access declarations and the one rule that decides.

A document's *groups* come from its front-matter (``access: [executives, hr]``)
or, when the front-matter says nothing about access, from the last matching
line of a ``.kbaccess`` file at the KB source root (gitignore-style patterns,
like CODEOWNERS). Front-matter wins whenever it has an ``access`` key, even
``access: all``. A document with no groups is open to everyone.

Declarations fail closed: an ``access`` value that is not one group name, a
comma-separated string of them or a non-empty list of them (broken YAML, empty,
a number, a mapping, ``[]``, ``[executives, all]``, an invalid name) is a
:class:`MalformedAccess`; ingest then stores the document readable by nobody
(:data:`HIDDEN_GROUP`) and says so. ``all`` (``everyone``, ``public``) is reserved:
it opens a document only on its own, and no caller can claim it as a group.

A :class:`Principal` is the caller: a user name (or ``None``) and the groups
it belongs to. The anonymous principal has no groups and sees only documents
open to everyone. :func:`may_read` is the only place that decides; the BM25
filter (:func:`index_tokens` / :func:`allowed_tokens`), the vector filter,
file views, agent tools and the CLI all go through it or through tokens
derived from the same sets.

Nothing here authenticates anyone: the harness (CLI flags, a session) says who
is asking, and no document text or tool argument can change that.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbagent.errors import BadInputError, NotFoundError

if TYPE_CHECKING:  # pathspec is imported where rules are parsed: not on the search path
    import pathspec

ACCESS_FILE = ".kbaccess"
GROUP_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
OPEN_WORDS = frozenset({"all", "everyone", "public"})
# Tokens in the BM25 index's ``groups`` field: a group name can never contain
# ':' (GROUP_RE), so no declared group can collide with the public token.
PUBLIC_TOKEN = "open:"
GROUP_PREFIX = "g:"
# The groups of a document whose access declaration could not be read: '!' is not in
# GROUP_RE, so no caller (flags, users file) can ever hold it: readable by nobody.
HIDDEN_GROUP = "!malformed-access"


class MalformedAccess(BadInputError):
    """An access declaration that cannot be read; the message says why."""


@dataclass(frozen=True)
class Principal:
    """Who is asking: a user name (``None`` when anonymous) and its groups."""

    user: str | None = None
    groups: frozenset[str] = field(default_factory=frozenset)

    @property
    def label(self) -> str:
        """For people: ``maya (executives)``, ``groups hr,it`` or ``anonymous``."""
        groups = ",".join(sorted(self.groups))
        if self.user:
            return f"{self.user} ({groups})" if groups else self.user
        return f"groups {groups}" if groups else "anonymous"

    @property
    def key(self) -> str:
        """A file-name-safe key: two principals with the same groups share what they may see."""
        if not self.groups:
            return "anonymous"
        digest = hashlib.sha256(",".join(sorted(self.groups)).encode()).hexdigest()
        return f"g-{digest[:16]}"


ANONYMOUS = Principal()


def may_read(principal: Principal, doc_groups: Iterable[str]) -> bool:
    """THE rule: a document with no groups is open to everyone; otherwise the
    caller must belong to at least one of its groups."""
    groups = list(doc_groups)
    return not groups or not principal.groups.isdisjoint(groups)


def index_tokens(doc_groups: Iterable[str]) -> list[str]:
    """What a chunk carries in the BM25 index's ``groups`` field."""
    groups = sorted(set(doc_groups))
    return [GROUP_PREFIX + g for g in groups] if groups else [PUBLIC_TOKEN]


def allowed_tokens(principal: Principal) -> list[str]:
    """The terms a chunk's ``groups`` field must contain one of for ``principal``:
    matching exactly the documents :func:`may_read` allows."""
    return [PUBLIC_TOKEN, *(GROUP_PREFIX + g for g in sorted(principal.groups))]


# ----------------------------------------------------------------- principals
def parse_group_list(text: str, origin: str) -> frozenset[str]:
    """``"hr, it"`` -> {"hr", "it"}; a bad name is a one-line error."""
    return _groups([g for g in text.split(",") if g.strip()], origin)


def _groups(values: Iterable[object], origin: str) -> frozenset[str]:
    out = set()
    for v in values:
        if not isinstance(v, str) or not GROUP_RE.match(v.strip().lower()):
            raise BadInputError(f"invalid group {v!r} in {origin}: use 1-64 lowercase letters, "
                                "digits, '.', '_' or '-'")
        if v.strip().lower() in OPEN_WORDS:
            raise BadInputError(f"group {v.strip()!r} in {origin} is reserved (it means "
                                "everyone); no caller can belong to it")
        out.add(v.strip().lower())
    return frozenset(out)


def declared_groups(names: list[str], origin: str) -> list[str]:
    """A declaration's group names (``.kbaccess`` line or front-matter) -> sorted groups,
    ``[]`` for open. ``all``/``everyone``/``public`` must stand alone; a bad name is a
    :class:`MalformedAccess`. The one parser both ways of declaring go through."""
    if not names:
        raise MalformedAccess(f"{origin}: no group given (write 'all' to open it to everyone)")
    opened = [g for g in names if g in OPEN_WORDS]
    if opened:
        if len(set(names)) > 1:
            raise MalformedAccess(f"{origin}: '{opened[0]}' cannot be combined with groups")
        return []
    try:
        return sorted(_groups(names, origin))
    except BadInputError as e:
        raise MalformedAccess(str(e)) from None


def front_matter_groups(value: object, origin: str = "front-matter access") -> list[str]:
    """A front-matter ``access`` value -> groups (``[]``: open to everyone).

    Accepted: a group name or ``all`` (``access: executives``), a comma-separated
    string (``access: "hr, it"``) or a non-empty list of names. Anything else
    (nothing, a number, a boolean, a mapping, ``[]``, a list holding a non-string)
    raises :class:`MalformedAccess`."""
    if isinstance(value, str):
        names = [g.strip().lower() for g in value.split(",")]
        if any(not g for g in names) and len(names) > 1:
            raise MalformedAccess(f"{origin}: empty group name in {value!r}")
        return declared_groups([g for g in names if g], origin)
    if isinstance(value, list):
        if not value:
            raise MalformedAccess(f"{origin}: an empty list (write 'all' to open it to "
                                  "everyone, or name the groups)")
        bad = [v for v in value if not isinstance(v, str)]
        if bad:
            raise MalformedAccess(f"{origin}: {bad[0]!r} is not a group name")
        return declared_groups([str(v).strip().lower() for v in value], origin)
    shown = "nothing" if value is None else f"{type(value).__name__} {value!r}"
    raise MalformedAccess(f"{origin}: expected a group name or a list of them, got "
                          f"{shown[:80]}")


def read_toml(path: Path, what: str, missing_hint: str) -> dict[str, Any]:
    """A TOML file kbagent reads for access (the users file, the server's tokens file):
    missing, unreadable and malformed are one-line errors naming ``what``."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise NotFoundError(f"no {what} at {path}; {missing_hint}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise BadInputError(f"cannot read {what} {path}: {e}") from e
    except tomllib.TOMLDecodeError as e:
        raise BadInputError(f"{what} {path} is not valid TOML: {e}") from e


def load_users(path: Path) -> dict[str, frozenset[str]]:
    """Read a users file::

        [users]
        maya = ["executives"]
        sam = []
    """
    data = read_toml(path, "users file", "create it (see 'Access control' in the README) "
                     "or use --groups")
    users = data.get("users")
    if not isinstance(users, dict):
        raise BadInputError(f"users file {path} needs a [users] table (user = [groups])")
    out: dict[str, frozenset[str]] = {}
    for user, groups in users.items():
        if not isinstance(groups, list):
            raise BadInputError(f"users file {path}: {user} must be a list of groups")
        out[user] = _groups(groups, f"users file {path}")
    return out


def resolve_principal(users_file: Path, user: str | None = None,
                      groups: str | None = None) -> Principal:
    """``--as USER`` (looked up in ``users_file``) or ``--groups a,b``; neither: anonymous."""
    if user is not None and groups is not None:
        raise BadInputError("use --as USER or --groups, not both")
    if groups is not None:
        return Principal(None, parse_group_list(groups, "--groups"))
    if user is None:
        return ANONYMOUS
    users = load_users(users_file)
    if user not in users:
        raise NotFoundError(f"unknown user {user!r} (not in {users_file})")
    return Principal(user, users[user])


# ---------------------------------------------------------------- .kbaccess
@dataclass
class AccessRules:
    """The parsed ``.kbaccess`` of a source folder: ``pattern group [group ...]`` per
    line (``#`` comments); the last matching line decides, ``all`` opens a path."""

    text: str = ""
    rules: list[tuple[pathspec.GitIgnoreSpec, list[str]]] = field(default_factory=list)

    def groups_for(self, path: str) -> list[str] | None:
        """Groups for ``path``, or ``None`` when no line matches."""
        found: list[str] | None = None
        for spec, groups in self.rules:
            if spec.match_file(path):
                found = groups
        return found


def parse_access_rules(text: str, origin: str = ACCESS_FILE) -> AccessRules:
    rules = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) < 2:
            raise MalformedAccess(f"{origin} line {number}: expected 'PATTERN GROUP [GROUP ...]'")
        names = [g.lower() for p in parts[1:] for g in p.split(",") if g]
        groups = declared_groups(names, f"{origin} line {number}")
        import pathspec

        try:
            spec = pathspec.GitIgnoreSpec.from_lines([parts[0]])
        except Exception as e:  # pathspec raises its own pattern errors
            raise MalformedAccess(f"{origin} line {number}: bad pattern {parts[0]!r}: {e}") from e
        rules.append((spec, groups))
    return AccessRules(text, rules)


def load_access_rules(source: Path) -> AccessRules:
    """The ``.kbaccess`` at the root of ``source`` (none: no rules)."""
    path = source / ACCESS_FILE
    if not path.is_file():
        return AccessRules()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise MalformedAccess(f"cannot read {path}: {e}") from e
    return parse_access_rules(text, str(path))


def effective_groups(front_matter: list[str] | None, rules: AccessRules, path: str) -> list[str]:
    """Front-matter wins when it declares access (``None``: it does not); then
    ``.kbaccess``; otherwise open to everyone."""
    if front_matter is not None:
        return sorted(set(front_matter))
    return rules.groups_for(path) or []

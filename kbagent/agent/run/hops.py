"""Follow-up searches for multi-hop questions, built from what earlier searches found.

A small model re-sends the question as its only query, so a question that needs two
documents ("the woman who portrayed Corliss Archer in Kiss and Tell": first the film,
then the actress) finds only the first. The harness proposes what the next search
should be:

* **Comparisons** ("Who is older, A or B?", "Were A and B both ...?", "Which X, A
  or B?"): one query per compared entity that no hit's title names yet.
* **Bridges** (a question of several content words that no single hit covers): the
  *first-hop* document is the hit whose title the question names
  (else the best hit); a name in its text that the question does not contain (the
  actress in the film's article) is the bridge, searched together with the words of
  the question that document does not match ("Shirley Temple government position
  held"). Names are ranked by how close they stand to the question's words in that
  text; a name sharing words with the question or the title ranks last.
* **Named documents**: a name of several words (or a quoted one) that the question
  gives and no hit's title is ("Virginia Commonwealth University").

Everything here is a pure function over the question and the hits (title and text);
:mod:`kbagent.agent.run.loop` decides when to use a proposal (a model query that repeats
the question or an earlier search is replaced by one; a model that would answer before
any follow-up is asked for one more search first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from kbagent.agent.answer.citations import STOPWORDS, content_tokens
from kbagent.agent.answer.evidence import QUESTION_WORDS

NEAR_DUPLICATE = 0.6  # share of an earlier query's words a repeat keeps
MAX_BRIDGES = 2  # bridge queries proposed per first-hop document
MAX_QUERY_WORDS = 12
COPIED_WORDS = 8  # a query this long found word for word in a hit was pasted from it
MIN_HOP_WORDS = 4  # a question with fewer content words is not taken for a multi-hop one
LONG_QUESTION = 7  # content words from which a question is taken to hop whatever hits show
COVERED = 0.8  # share of the question's words one hit holds when it needs no second hop

# Words a question uses to ask, compare or point, not what it is about.
_ASKING = QUESTION_WORDS | content_tokens(
    "older younger oldest youngest first earlier later more less larger smaller bigger "
    "higher lower longer shorter both also same either name called known other another "
    "located based whose this these that those type kind use used uses using")
# capitalised words that begin sentences or name calendar things, never a bridge alone
_NOT_NAMES = frozenset(
    "the a an in on at of for and or but by to from with as it its he she they his her their "
    "this that these those there here which who what when where why how is was were are "
    "after before during since while although however also despite following "
    "january february march april may june july august september october november december "
    "monday tuesday wednesday thursday friday saturday sunday".split())
# nationalities describe, they do not name what a question turns on
_DEMONYMS = frozenset(
    "american british english french german italian spanish canadian australian irish "
    "scottish welsh japanese chinese korean indian russian mexican dutch swedish danish "
    "norwegian finnish polish greek turkish brazilian argentine portuguese austrian swiss "
    "belgian african european asian soviet roman christian jewish muslim".split())
_CONNECT = frozenset("of the and de da del della di la le les von van der den du & "
                     "y e".split())
_WORD = re.compile(r"\w(?:[\w'’&/-]|\.(?=\w))*|&")
_QUOTED = re.compile(r"[\"“”]([^\"“”]{2,80})[\"“”]")
_COMPARE_OR = re.compile(
    r"(?:,|\b(?:older|younger|first|earlier|later|larger|bigger|smaller|longer|shorter|"
    r"higher|taller|more|less|fewer)\b)\s*(?P<a>[^,?]+?),?\s+or\s+(?P<b>[^,?]+?)\s*(?:[,?]|$)",
    re.IGNORECASE)
_COMPARE_AND = re.compile(
    r"^\s*(?:are|were|is|was|do|did|does|have|has)\s+(?:both\s+)?(?P<a>.+?)\s+and\s+"
    r"(?P<b>.+?)\s+(?:both|each|the same|from the same|of the same|located|in the same|"
    r"(?-i:[a-z]+)(?:\s|\?|$))",
    re.IGNORECASE)
# "a university that is located in ...": the question describes a second thing
_RELATIVE = re.compile(r"\b(?:who|that|which|whose|whom|where)\b", re.IGNORECASE)
_COMMON = re.compile(r"\b(?:what do|which do|do)\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+have in "
                     r"common\b", re.IGNORECASE)


@dataclass(frozen=True)
class Hit:
    """What a search showed: the document's title and the chunk's text."""

    title: str
    text: str


def title_of(path: str, heading: str = "") -> str:
    """A hit's title: the first heading of its trail, else the file name's stem."""
    head = heading.split(" > ")[0].strip() if heading else ""
    if head:
        return head
    stem = PurePosixPath(path).stem.split("~")[0]
    return stem.replace("_", " ").strip()


def words_of(text: str) -> set[str]:
    """Content words of ``text`` that say what it is about (stemmed)."""
    return content_tokens(text) - _ASKING


def near_duplicate(query: str, earlier: list[str]) -> bool:
    """True when ``query`` adds nothing to an earlier query (or the question): most of
    its words and nothing new, or all but a little of them and one word more. A query
    that adds a name or a period ("Q3" after "Q2") is a new search."""
    q = words_of(query)
    if not q:
        return True
    for e in earlier:
        w = words_of(e)
        if not w:
            continue
        shared, added = len(q & w), len(q - w)
        if (added == 0 and shared >= NEAR_DUPLICATE * len(w)) or (
                added == 1 and len(w) >= 4 and shared >= 0.8 * len(w)):
            return True
    return False


def copied(query: str, texts: list[str], min_words: int = COPIED_WORDS) -> bool:
    """True when ``query`` is a passage pasted from ``texts`` (what was already found),
    not a query: at least ``min_words`` words, found word for word in one of them."""
    words = _WORD.findall(query.casefold())
    if len(words) < min_words:
        return False
    needle = " ".join(words)
    return any(needle in " ".join(_WORD.findall(t.casefold())) for t in texts)


def names_in(text: str) -> list[tuple[str, int]]:
    """Capitalised names (and quoted titles) in ``text`` with their word positions,
    in order: "Shirley Temple", "University of Kansas", "Kiss and Tell". A name does
    not run across punctuation ("Usher, Sean Garrett" is two names)."""
    words = [(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]

    def joined(k: int) -> bool:  # word k follows word k - 1 with only spaces between
        return not text[words[k - 1][2]:words[k][1]].strip()

    out: list[tuple[str, int]] = []
    i = 0
    while i < len(words):
        if not _capital(words[i][0]):
            i += 1
            continue
        j = end = i
        while j + 1 < len(words) and joined(j + 1):
            nxt = words[j + 1][0]
            if _capital(nxt):
                j = end = j + 1
            elif nxt.lower() in _CONNECT:
                j += 1
            else:
                break
        span = [w for w, _, _ in words[i:end + 1]]
        while span and span[0].lower() in _NOT_NAMES:
            span.pop(0)
        while span and (span[-1].lower() in _CONNECT or span[-1].lower() in _NOT_NAMES):
            span.pop()
        name = " ".join(span)
        if name and not (len(span) == 1 and (name.lower() in STOPWORDS or len(name) < 3
                                             or name.lower() in _DEMONYMS)):
            out.append((name, i))
        i = end + 1
    for m in _QUOTED.finditer(text):
        out.append((m.group(1).strip(), len(_WORD.findall(text[:m.start()]))))
    return out


def _capital(word: str) -> bool:
    return bool(word) and (word[0].isupper() or (word[0].isdigit() and any(
        c.isupper() for c in word)))


def compared(question: str) -> list[str]:
    """The entities a comparison question compares ([] if it is not one)."""
    for pattern in (_COMMON, _COMPARE_OR, _COMPARE_AND):
        m = pattern.search(question)
        if m is None:
            continue
        a, b = _entity(m.group("a"), last=True), _entity(m.group("b"), last=False)
        if a and b and a.lower() != b.lower():
            return [a, b]
    return []


def _entity(text: str, last: bool) -> str:
    """The name in a compared phrase: the whole phrase when it is one name, else the
    name nearest the "or"/"and" ("which band, Dream Theater or ..." -> Dream Theater)."""
    text = text.strip(" ,?\"“”")
    names = [n for n, _ in names_in(text)]
    if not names:
        return ""
    return names[-1] if last else names[0]


def bare(title: str) -> str:
    """A title without its parenthesis ("Alien (film)" -> "Alien")."""
    return re.sub(r"\(.*?\)", "", title).strip()


def _bare(title: str) -> set[str]:
    """A title's content words without its parenthesis ("Alien (film)" -> alien)."""
    return content_tokens(bare(title))


def covered(entity: str, titles: list[str]) -> bool:
    """A hit's title is ``entity`` ("Keith Bostic (American football)" is Keith Bostic;
    "Lady Gaga x Terry Richardson" is not Terry Richardson)."""
    e = content_tokens(entity)
    return bool(e) and any(e == _bare(t) for t in titles)


def first_hop(question: str, hits: list[Hit]) -> Hit | None:
    """The hit the question starts from: the first whose title the question names
    (all of the title's words outside parentheses are in the question), else the best."""
    q = content_tokens(question)
    for h in hits:
        t = _bare(h.title)
        if t and t <= q:
            return h
    return hits[0] if hits else None


def needs_bridge(question: str, hits: list[Hit]) -> bool:
    """A question that may need a second document: a long one, one with a relative
    clause ("a university that is located in ..."), or one no single hit covers (most
    of its words in one document means the answer is likely there: no follow-up)."""
    q = words_of(question)
    if len(q) < MIN_HOP_WORDS or not hits:
        return False
    if len(q) >= LONG_QUESTION or _RELATIVE.search(question.strip(), 1):
        return True
    best = max(len(q & content_tokens(f"{h.title} {h.text}")) for h in hits)
    return best < COVERED * len(q)


def bridges(question: str, hits: list[Hit]) -> list[str]:
    """Names in the first-hop hit that the question does not contain, best first:
    near the question's words in that text, longer names before single words."""
    hop = first_hop(question, hits)
    if hop is None:
        return []
    q = content_tokens(question)
    own = content_tokens(hop.title)
    text_words = [m.group() for m in _WORD.finditer(hop.text)]
    anchors = [i for i, w in enumerate(text_words) if content_tokens(w) & q - _ASKING]
    ranked: dict[str, tuple[float, str]] = {}
    for name, pos in names_in(hop.text):
        toks = content_tokens(name)
        if not toks or toks <= q | own:
            continue
        distance = min((abs(pos - a) for a in anchors), default=50)
        # a name sharing words with the question or the title is most likely the
        # document's own subject under another name ("Roger Olaf Egeberg")
        score = (distance + (0 if len(toks) > 1 else 4) + pos / 100
                 + (10 if toks & (q | own) else 0))
        key = name.lower()
        if key not in ranked or score < ranked[key][0]:
            ranked[key] = (score, name)
    return [name for _, name in sorted(ranked.values())[:MAX_BRIDGES]]


def _rest(question: str, entity: str, hop: Hit | None) -> str:
    """The question's words that neither ``entity`` nor the first-hop hit matches."""
    drop = content_tokens(entity) | (content_tokens(hop.text + " " + hop.title) if hop else set())
    seen: set[str] = set()
    kept = []
    for w in _WORD.findall(question):
        toks = content_tokens(w)
        if not toks or toks & drop or toks <= _ASKING or toks & seen:
            continue
        seen |= toks
        kept.append(w.strip(".,;:'’\"“”"))
    return " ".join(kept)


def followups(question: str, hits: list[Hit], searched: list[str]) -> list[str]:
    """Follow-up queries for ``question`` given the ``hits`` shown so far (best
    first), none a near-duplicate of a query in ``searched`` (the question counts as
    searched). Comparisons first, then bridges."""
    done = [question, *searched]
    titles = [h.title for h in hits]
    out: list[str] = []

    def add(query: str) -> None:
        query = " ".join(query.split()[:MAX_QUERY_WORDS])
        if query and not near_duplicate(query, done + out) and query not in out:
            out.append(query)

    entities = compared(question)
    for e in entities:
        if not covered(e, titles):
            add(f"{e} {_rest(question, ' '.join(entities), None)}")
    if entities or not needs_bridge(question, hits):
        return out
    hop = first_hop(question, hits)
    found = [b for b in bridges(question, hits) if not covered(b, titles)]
    for b in found[:1]:
        add(f"{b} {_rest(question, b, hop)}")
    for e in named(question):  # a name the question gives whose document is not found
        if not covered(e, titles):
            add(e)
    for b in found[1:]:
        add(f"{b} {_rest(question, b, hop)}")
    return out


def named(question: str) -> list[str]:
    """Names the question itself gives (several words, or quoted): what its first hop
    may be."""
    return [n for n, _ in names_in(question) if len(n.split()) > 1 or f'"{n}"' in question]

"""Routing for ``--mode auto``: small talk -> direct answer (no retrieval); a simple
factoid -> single retrieval (rag); a composite question -> the full agent loop; a
multi-hop question (:func:`multi_hop`: a bridge or a comparison) -> the agent route,
where a grounded run answers it with the harness's own searches
(:mod:`kbagent.agent.harness.bridge`), no ReAct step of the model."""

from __future__ import annotations

import re
from typing import Literal

from kbagent.agent.answer.focus import asking_sentence
from kbagent.agent.kinds import AskMode
from kbagent.agent.run.about import about_kind
from kbagent.agent.run.hops import compared, names_in

HopKind = Literal["bridge", "comparison"]

# small talk: a message made only of courtesy phrases, in any order and number ("hi",
# "thanks!", "great, thanks a lot", "ok, cheers, that's all for today", "thanks, that was
# helpful", "no more questions, have a nice day"): nothing to search. A message with
# anything else in it ("thanks, now what is the TTL?") is a question.
_PRAISE = r"(?:very |really |so |super )?(?:helpful|useful|great|perfect|nice|good|clear)"
_ADDRESS = r"(?:\s+(?:there|kbagent|again|so much|a lot|very much|you|mate|everyone))*"
_SEGMENT = (
    r"(?:hi|hello|hey|hiya|howdy|yo|greetings|good (?:morning|afternoon|evening|night|day)|"
    r"thanks?(?: (?:a lot|so much|very much|again|a million|a bunch|heaps|loads|a ton))?"
    r"(?: for (?:the|your|all the|all your) (?:help|answers?|info(?:rmation)?|time))?|"
    r"thank you(?: (?:so much|very much|again))?"
    r"(?: for (?:the|your|all the|all your) (?:help|answers?|info(?:rmation)?|time))?|"
    r"many thanks|thx|ty|cheers|ok(?:ay)?|k|cool|great|nice|perfect|awesome|excellent|"
    r"brilliant|wonderful|fine|got it|understood|noted|sounds good|all good|all clear|"
    r"bye|goodbye|bye bye|see you(?: (?:later|soon|tomorrow|around))?|later|"
    r"take care|have a (?:nice|good|great) (?:day|evening|weekend|one|night)|"
    r"that(?:'s| is| was| will be|'ll be) (?:all|it|everything)(?: for (?:today|now|me))?|"
    r"nothing else|no more questions|no further questions|i'?m (?:done|good|all set)|"
    r"(?:that|this|it)(?: was|'s| is) " + _PRAISE + r"|you(?:'re| are| were) " + _PRAISE +
    r"|(?:that|this|it|you)(?: has| have|'s)? (?:sorted|fixed|solved|did|worked|helped|works"
    r"|helps)(?: it(?: out)?| the (?:trick|problem|issue)| my problem)?(?: for me)?" +
    r"|how are you(?: doing)?|how(?:'s| is) it going|how are things|how have you been|"
    r"what'?s up|who are you|what are you|what can you do|what do you do|"
    # well-wishing: "hope your day is going well", "hope you're well"
    r"(?:i )?hope (?:you(?:'re| are) (?:well|doing well|good|having a (?:good|nice|great) "
    r"(?:day|week|one))|your (?:day|week) is going (?:well|great|fine|ok)|all is well|"
    r"you had a (?:good|nice|great) (?:day|weekend|week))|"
    r"help|are you there)" + _ADDRESS)
_CHITCHAT = re.compile(rf"^\s*(?:{_SEGMENT})(?:(?:\s*[,.!;:)-]+\s*|\s+)(?:and\s+)?"
                       rf"(?:{_SEGMENT}))*[\s!.?,:;)]*$", re.IGNORECASE)
_COMPOSITE = re.compile(
    r"\b(?:compare|comparison|versus|vs\.?|differ(?:ence|ent|s)?|change[ds]?|why|explain|"
    r"relationship|interact|both|between|trend|over time|calculate|compute|how many more|"
    r"how much more|total|sum|combined|ratio|percent(?:age)? (?:change|increase|decrease)|"
    r"grow(?:th)?|increase|decrease|and then|step by step|list all|all of the)\b",
    re.IGNORECASE,
)

# --- bridge questions: the thing asked about is described, not named, so its document
# must be found first ("the woman who portrayed Corliss Archer in Kiss and Tell").
_DET = r"(?:the|a|an|this|that|these|his|her|its|their|another)"
# a described thing: "the woman who portrayed ...", "a president that served ...",
# "the arena where ... played" (the pronoun followed by more words, not "change that?")
_DESCRIBED = re.compile(
    rf"\b{_DET}\s+(?:[\w'’.&,-]+\s+){{0,6}}?(?<!, and )(?<!, or )(?:who|that|which|whose|whom|"
    r"where)\s+(?=\w)"
    r"|\b[A-Z][\w'’.&-]*,?\s+(?:which|who)\s+(?:is|was|were|are|has|had)\b",
    re.IGNORECASE)
# a thing known by what was done with it: "a film starring ...", "the novel on which ...
# was based", "an album recorded at ..."
_PARTICIPLE = re.compile(
    rf"\b{_DET}\s+(?:[\w'’.&-]+\s+){{0,3}}?(?:starring|featuring|written|directed|produced|"
    r"founded|created|designed|based|released|recorded|composed|published|inspired|owned|"
    r"named|led|formed|hosted|presented)\s+(?:by|in|on|at|after|from|as|\w+)",
    re.IGNORECASE)
# who or what stands in a relation to a named thing: "the director of the film ...",
# "the father of Kasper Schmeichel", "Bill Cosby's third album"
_ROLES = (r"(?:director|author|writer|creator|founder|co-?founder|owner|father|mother|son|"
          r"daughter|brother|sister|wife|husband|spouse|widow|star|singer|composer|"
          r"producer|coach|manager|captain|president|leader|designer|architect|publisher|"
          r"developer|album|film|movie|novel|song|single|band|team|company|university|"
          r"college|school|city|town|country|county|state|arena|stadium|show|series|group|"
          r"player|actor|actress|character|host|successor|predecessor|headquarters|holder|"
          r"winner|champion|recipient|member|inventor)")
_ROLE_OF = re.compile(rf"\bthe\s+(?:[\w'’-]+\s+){{0,2}}?{_ROLES}s?\s+of\s+", re.IGNORECASE)
_POSSESSIVE = re.compile(rf"\b[A-Z][\w.-]*[’']s\s+(?:[\w-]+\s+){{0,2}}?{_ROLES}s?\b")
# ... but "Who is the CEO of Kestrel Systems?" asks for the role itself: one document
_ROLE_ITSELF = re.compile(rf"^\s*(?:who|what)\s+(?:is|was|are|were)\s+the\s+"
                          rf"(?:[\w'’-]+\s+){{0,2}}?{_ROLES}s?\s+of\s+(?:\S+\s*){{1,4}}$",
                          re.IGNORECASE)
# "The Argentine PGA Championship record holder has won ...": a role the question starts with
_ROLE_FIRST = re.compile(rf"^\s*the\s+(?:[\w'’.-]+\s+){{0,5}}?{_ROLES}s?\s+(?:has|had|is|was|"
                         r"were|are|of|in|from)\b", re.IGNORECASE)
# "What nationality were A and B?": two named things asked about together
_TWO_NAMED = re.compile(
    r"^\s*(?i:what|which|where)\b(?:\s+[a-z-]+){0,3}\s+(?:were|are|was|is|do|did|does)\s+"
    r"(?:[a-z-]+\s+){0,3}(?P<a>[A-Z][^?,]*?)\s+and\s+(?P<b>[A-Z][^?,]*?)"
    r"(?=\s*\?|\s*$|\s+(?:both|have|had|share|shared|located)\b)")
# "this singer of ...", "this first round draft pick": a thing the question describes
_THIS = re.compile(r"\bthis\s+(?!is\b|was\b|year\b|month\b|week\b|quarter\b)[a-z]",
                   re.IGNORECASE)
# "Brown State Fishing Lake is in a country that ...", "Ellie Goulding worked with what
# other writers ...": a statement about a named thing that asks in its middle
_ASKS_INSIDE = re.compile(
    r"^\s*(?!(?:what|which|who|whom|whose|how|when|where|why|is|are|was|were|do|does|did|"
    r"can|in|on|at|by|for|from|over|during|after|before|if|once|unless|until|till|since|"
    r"with|without|within|under|out|assuming|given|suppose|whenever|while|as|upon|using|"
    r"per|via|up|about|around|through)\b)[A-Z0-9][^?.!]*?\s(?:what|which|who|"
    r"whom|whose|how many|how much|when|where)\b(?![^?]*[.?!]\s+[A-Z])", re.IGNORECASE)
# a question about software or asked as its user: a code term (an identifier, a dotted
# setting, a call, a command-line option) or "I"/"we"/"my"/"you" ("can I chain",
# "If I run PRAGMA integrity_check"): documentation, where what the question describes
# is an attribute or a setting ("the minimum length that core.abbrev ..."), not an
# entity whose own document must be found first
_CODE_TERM = re.compile(r"(?<![\w/.-])(?:[A-Za-z]\w*_\w+|[a-z]\w*\.[a-z]\w*|\w+\((?:[^()]{0,40})\)"
                        r"|--?[a-z][\w-]*)")
# ("We still have a few Windows 7 PCs": a team asks as one user does; "Here We Go
# Round the Mulberry Bush" is a title)
_AS_USER = re.compile(r"\b(?:my|me|you|your)\b|\b(?:I|[Ww]e)(?:'m|'re|'ve|'d)?\s+(?!and\b|or\b)"
                      r"[a-z]")
_OF_OF = re.compile(r"\bof\s+(?:the|a|an)\s+[^?]*\bof\s+(?:the|a|an)\s+\w", re.IGNORECASE)


def is_chitchat(question: str) -> bool:
    """Small talk, or a short question about kbagent itself ("which model are you?")."""
    if _CHITCHAT.match(question) or not re.search(r"\w", question):
        return True
    short = len(question.split()) <= 8
    return short and about_kind(question) in ("model", "kbs", "identity", "capabilities")


def pair(question: str) -> list[str]:
    """The two named things a comparison question compares ([] if it is not one):
    "Who is older, A or B?", "Were A and B both ...?", "What nationality were A and B?"."""
    found = compared(question)
    if found:
        return found
    m = _TWO_NAMED.search(question)
    if m is None:
        return []
    a, b = names_in(m.group("a")), names_in(m.group("b"))
    if a and b and a[-1][0].lower() != b[0][0].lower():
        return [a[-1][0], b[0][0]]
    return []


def documentation_style(question: str) -> bool:
    """Does the question ask about software, in code terms or as its user? (Its
    answer is one document's fact: no bridge to cross, no two entities to compare.)"""
    return bool(_CODE_TERM.search(question) or _AS_USER.search(question))


def multi_hop(question: str) -> HopKind | None:
    """``"comparison"`` for a question that compares two named things ("Who is older,
    A or B?", "Were A and B both ...?"), ``"bridge"`` for one about a thing it describes
    rather than names ("the woman who portrayed Corliss Archer in the film Kiss and
    Tell", "the director of the film that ...", "Bill Cosby's third album"), else None."""
    if is_chitchat(question) or documentation_style(question):
        return None
    if pair(question):
        return "comparison"
    # the sentence that asks decides: "Wireshark tagged a packet as a fast retransmission.
    # One of its conditions is that the last ACK was seen a moment before. Within how many
    # milliseconds?" describes its setting first, the thing asked about is not described
    asked = asking_sentence(question)
    role_of = bool(_ROLE_OF.search(asked)) and not (
        _ROLE_ITSELF.search(asked) and not _OF_OF.search(asked))
    if (_DESCRIBED.search(asked) or _PARTICIPLE.search(asked) or role_of
            or _ROLE_FIRST.search(asked) or _POSSESSIVE.search(asked)
            or _THIS.search(asked) or _ASKS_INSIDE.search(asked)):
        return "bridge"
    return None


def route(question: str) -> AskMode:
    """Pick ``direct``, ``rag`` or ``agent`` for ``--mode auto``."""
    if is_chitchat(question):
        return AskMode.DIRECT
    if (_COMPOSITE.search(question) or question.count("?") > 1
            or multi_hop(question) is not None):
        return AskMode.AGENT
    return AskMode.RAG

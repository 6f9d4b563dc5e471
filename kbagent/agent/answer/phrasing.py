"""How users word documentation questions, for :mod:`~kbagent.agent.answer.focus`: the
default in a user's words, a length asked as "how long", the class a name question asks
for ("which environment variable ...").

Rules about English questions only, none about a document set.
"""

from __future__ import annotations

import re

# a question about what happens when nobody chose: the default, in a user's words ("out
# of the box", "unless I tell it otherwise", "when I pass no option", "if I never set X")
# a question word (not an auxiliary: "is", "does" also open statements' clauses)
WH_WORD = re.compile(r"\b(?:what|which|who|whom|whose|when|where|why|how)\b", re.I)
DEFAULT_INTENT = re.compile(
    r"\bout of the box\b|\bunless (?:(?:i|you|we|someone|it is|it's|they are|you've|i've)\s+)?"
    r"(?:tell|told|say|said|configure|configured|specify|specified|set|change|changed|"
    r"ask|asked|choose|chosen|override|overridden)\w*\s+(?:it\s+|so\s+)?(?:otherwise|"
    r"something|anything|differently)\b|"
    r"\bwhen (?:i|you|we) (?:pass|give|set|specify|choose) no\b|\bwith no (?:option|flag|"
    r"setting|value)s? (?:given|set|passed|chosen)\b|\bif (?:i|you|we) (?:never|don't|do not) "
    r"(?:set|specify|pass|give|choose|pick|select|provide|change|configure|touch)\b|"
    r"\bleft (?:at|to) (?:its|the) (?:defaults?|own devices)\b|"
    r"\bwithout (?:any )?(?:configuration|configuring|options?|"
    r"parameters?|arguments?|settings?|flags?)\b|\bstock (?:settings?|configuration|config|"
    r"values?|options?|parameters?)\b|"
    r"\b(?:is|are)(?: not|n't) (?:set|configured|specified|given)\b|\b(?:i|you|we) "
    r"(?:haven't|have not|didn't|did not) (?:configured|set|specified|changed)\b|"
    # "I ... and never gave it a name in conf.py": what it is when never set
    r"\b(?:i|you|we|and) never (?:gave|set|specified|configured|changed|touched|passed|chose|"
    r"picked|named)\b", re.I)
AUX = (r"is|are|was|were|does|do|did|can|could|will|would|should|shall|has|have|had|may|"
       r"might|must|isn't|aren't|doesn't|don't|didn't|can't|won't")
# "What race track hosts ...", "What American company sells ...": a thing named (not
# "what is", "what happens", nor "what kind of", whose answer is seldom a name)
WHAT_NOUN = re.compile(rf"^\s*what\s+(?!(?:{AUX}|happens?|happened|kind|type|sort|if|about|"
                       r"steps|ways|reasons|changes|differences|benefits|advantages|drawbacks|"
                       r"problems|things|options|consequences)\b)[A-Za-z][\w-]*,?\s+"
                       rf"(?:[\w-]+,?\s+){{0,8}}?(?:{AUX}|hosts?|sells?|makes?|owns?|runs?|won|"
                       r"wrote|directed|founded|contains?|holds?|lies|located|based)\b", re.I)
# "formerly known as what", "this gospel singer": the answer is what it is called
KNOWN_AS = re.compile(r"\b(?:known|referred to|named|called) as what\b|\b(?:in|of|at|from|by|"
                      r"for|on|with) what\s+[a-z]+\s*\?\s*$|^(?!.*\b(?:what|which|"
                      r"who|when|where|why|how)\b).*\bthis\s+(?:[\w-]+\s+){0,3}?(?:singer|"
                      r"actor|actress|author|writer|director|band|group|company|city|film|"
                      r"person|player|man|woman)\b", re.I)
ENDS_WHEN = re.compile(r"\bwhen\s*\?\s*$", re.I)
# a negative question ("isn't", "not"): a source sentence that is negative too says yes
NEGATED = re.compile(r"\b(?:not|never|no)\b|n't\b", re.I)
# "... without restarting it?": negative where the source speaks of restarting ("it is
# not necessary to restart"), not where it does not ("you can store a longer string");
# the doing only ("without a password" names a thing an affirmative source names too)
WITHOUT = re.compile(r"\bwithout\s+(\w+ing)\b", re.I)


def names_a_thing(q: str) -> bool:
    """Is a question without a kind of its own asking for a thing by name ("What race
    track hosts ...", "formerly known as what", "located in what county?")?"""
    return bool(WHAT_NOUN.match(q) or KNOWN_AS.search(q))


# "how long can a password be?", "how long may one line get once ...": a length (a
# number), not a duration ("how long does it take", "how long is a session kept")
LENGTH = re.compile(
    r"\bhow long (?:may|can|could|should|must|might|will|is|are)\s+(?:(?:a|an|the|one|my|"
    r"each|any|your)\s+)?(?:(?:[\w-]+\s+){0,6}(?:be|get)(?=\s*(?:[?,]|$|\b(?:if|when|once|"
    r"before|after|in|on|under|with)\b))|(?:[\w-]+\s+)?(?:line|password|name|string|header|"
    r"key|path|file ?name|url|uri|message|value|field|label|title|comment|identifier|word|"
    r"text|query|argument|list|queue|tag)s?\b(?!\s+(?:be\s+)?(?:kept|stored|valid|cached|"
    r"idle|open|alive|held|retained)))", re.I)


# "Which hash does htpasswd use ...": the class the answer belongs to ("hash")
_CLASS_WORD = re.compile(r"\b(?:which|what)\s+(?:[\w-]+\s+)?([\w-]+)\s+(?:does|do|did|is|are|"
                         r"was|were|will|would|can|could|should|has|have|gets?)\b", re.I)
_WHICH_PHRASE = re.compile(r"\b(?:which|what)\s+((?:[\w-]+\s+){0,2}[\w-]+)", re.I)
# nouns that name a class of things a name answers ("which environment variable sets")
CLASS_NOUNS = frozenset(
    "name person company team city country tool package module function class method setting "
    "variable field column table role product service kind type mode strategy algorithm "
    "format protocol code keyword header string engine backend parameter argument statement "
    "clause operator encoding character symbol hash cipher directive option flag command "
    "program file extension handler filter plugin library language signal model".split())


_FUNCTION_WORDS = frozenset("is are was were does do did the a an of can could will would "
                            "should has have had may might must".split())
GENERIC_HEADS = frozenset("model type kind name mode format version sort".split())
# nouns after a class noun that make it an attribute's qualifier ("file permissions")
# (nouns only: "Which setting limits the number ...": "limits" is the verb)
_ATTRIBUTE_HEADS = frozenset("permissions permission owner ownership mode modes".split())


def class_word(question: str) -> str:
    """The class a name question asks for: "variable" in "Which environment variable
    sets ...", "hash" in "Which hash does ...", "MPM" in "which MPM is ..."; "" when none."""
    if there := is_there_class(question):
        return there
    m = _WHICH_PHRASE.search(question)
    if m is not None:
        # "What was the name of ...": function words are no class
        words = [w for w in str(m.group(1)).split() if w.lower() not in _FUNCTION_WORDS]
        for i, w in enumerate(words):
            if w.lower().rstrip("s") in CLASS_NOUNS or w.lower() in CLASS_NOUNS:
                # "GPU model", "hash type": the word before a generic head is the class;
                # a generic head alone ("the name of the film") names none
                if w.lower().rstrip("s") in GENERIC_HEADS:
                    return words[i - 1] if i else ""
                return w
    m = _CLASS_WORD.search(question)
    return str(m.group(1)) if m else ""


# "Is there a std function that sorts ...": the thing's name is wanted, not yes or no
_IS_THERE = re.compile(r"^\s*(?:is|are)\s+there\s+(?:a|an|any|some|one)\s+((?:[\w.-]+\s+){0,3}?)"
                       r"([\w-]+?)s?\s+(?:that|which|who|to|for|i|we|you)\b", re.I)


# the classes whose members are called or run by name ("std.querysort(...)")
CALLED = frozenset("function method procedure routine macro command".split())


def is_there_class(q: str) -> str:
    """The class noun of an "Is there a <class> that ...?" question whose members are
    called by name ("function", "command"), or "" (an "Is there a setting to ...?" is
    answered yes or no: a setting is often a value of one)."""
    m = _IS_THERE.match(q)
    if m is None or m.group(2).lower() not in CALLED:
        return ""
    return m.group(2)


def asks_class(q: str) -> bool:
    """Does the question open with "which/what" and a class noun in its first two words
    ("Which environment variable ...", "What directive ...")?"""
    m = re.match(r"^\s*(?:which|what)\s+((?:[\w-]+\s+)?[\w-]+)\s+(?!of\b)", q, re.I)
    if m is None:
        return False
    words = [w.lower() for w in m.group(1).split()] + [""]
    # a code may be a number ("which exit code"): the other rules decide; in "what file
    # permissions" the class noun only qualifies the attribute asked for
    return any(w.rstrip("s") in CLASS_NOUNS - {"code"} and words[i + 1] not in _ATTRIBUTE_HEADS
               for i, w in enumerate(words[:-1]))


# a word after "with", "using", "via", "through", "into", "onto": the tool used or the
# place a thing goes ("with certbot", "into prometheus"), a name even in lower case when
# it is no ordinary word (not after "in", "on", "to", "for": "in read-only mode", "on
# shutdown" are a user's wording, no names)
_TOOL_NAME = re.compile(r"\b(?:with|using|via|through|into|onto)\s+"
                        r"([a-z][a-z0-9]+(?:[-.][a-z0-9]+)*)\b", re.I)


def tool_names(question: str) -> list[str]:
    """Words a question puts where a tool's name goes ("with certbot", "using docker",
    "into prometheus")."""
    return list(dict.fromkeys(m.group(1) for m in _TOOL_NAME.finditer(question)))


# a protocol's reply codes are numbers: the question asks for one of those
PROTOCOL_CODE = re.compile(r"\b(?:SMTP|LMTP|HTTP|HTTPS|FTP|IMAP|POP3?|NNTP|SIP)\b[^?]*\b(?:code|"
                            r"status|reply|response)s?\b|\b(?:status|reply|response) codes?\b",
                            re.IGNORECASE)
REPLY_CODE = re.compile(r"(?<![\w.])[1-5]\d\d(?:[ -][245]\.\d{1,3}\.\d{1,3})?(?![\w.])")

# "How much memory/RAM/disk space ...": a size, in bytes or a multiple of them
HOW_MUCH_MEMORY = re.compile(r"\bhow much (?:\w+ )?(?:memory|ram|disk|storage)\b|\bhow much "
                             r"(?:\w+ )?(?:disk|storage) space\b", re.I)

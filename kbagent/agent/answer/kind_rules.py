"""The kinds of answer a question may ask for (:class:`AnswerType`) and the question
patterns that tell them (:data:`KIND_RULES`, first match wins), read by
:func:`~kbagent.agent.answer.focus.focus_of`. Rules about English questions, tuned to no
document set."""

from __future__ import annotations

import re
from enum import StrEnum


class AnswerType(StrEnum):
    NUMBER = "number"
    DURATION = "duration"
    DATE = "date"
    NAME = "name"
    ERROR = "error"
    PATH = "path"
    YESNO = "yesno"
    DEFAULT = "default"
    VERSION = "version"
    PRICE = "price"
    PERCENT = "percent"
    CHOICE = "choice"
    OTHER = "other"


TIME_UNITS = (r"(?:milliseconds?|msecs?|ms|microseconds?|us|µs|seconds?|secs?|s|minutes?|mins?|"
              r"hours?|hrs?|h|days?|d|weeks?|months?|years?|yrs?)")
SIZE_UNITS = r"(?:bytes?|[KMGT]i?B|kilobytes?|megabytes?|gigabytes?|terabytes?|bits?)"
MEASURE_UNIT = re.compile(rf"(?:{TIME_UNITS}|{SIZE_UNITS})", re.I)  # a unit of time or size

# (question pattern, answer type): the first that matches wins
EXPLAIN = re.compile(r"^\s*(?:why|how (?:does|do|did|is|are|can|could|should|would|to)\b)|"
                      r"\b(?:explain|describe|summari[sz]e|what happen(?:s|ed))\b", re.I)
KIND_RULES: list[tuple[re.Pattern[str], AnswerType]] = [
    (EXPLAIN, AnswerType.OTHER),
    # an exit status is a number ("return 125"), not an error's name
    (re.compile(r"\bexit (?:code|status)(?:es|s)?\b", re.I), AnswerType.NUMBER),
    (re.compile(r"\b(?:which|what)\s+(?:\w+\s+){0,2}(?:error|exception|result code|error code|"
                r"status code|return code|exit code|signal|warning|message code|message id|"
                r"response code|reply code)s?\b"
                r"(?!\s+(?:rate|ratio|count|budget|threshold|level|percentage|share)s?\b)|"
                r"\b(?:raises?|throws?)\b|\berror (?:code|name)\b|"
                r"\b(?:what|which)\s+HTTP (?:status|response|code)\b|"
                # "what reply does the server send": a status code (and its text)
                r"\b(?:what|which)\s+(?:\w+\s+)?(?:reply|response)\s+(?:does|do|will|would)\b"
                r"[^?]*\b(?:send|return|give)s?\b", re.I),
     AnswerType.ERROR),
    (re.compile(r"\b(?:what|which)(?:'s|\s+is|\s+was)?\s+(?:the\s+)?(?:\w+\s+){0,3}(?:version|release)s?"
                r"\b(?!\s+(?:prefix|"
                r"name|string|tag|key|id|notes?|date|day)\b)|"
                r"\bsince (?:which|what)(?!\s+(?:year|date|day|month|time)\b)"
                r"\b|\bversion number\b|\bintroduced in\b", re.I), AnswerType.VERSION),
    (re.compile(r"\bhow much (?:does|do|did|is|are|will)\b.*\b(?:cost|charge|pay|price|fee)|"
                r"\b(?:price|cost|fee|fees|salary|budget|revenue|spend|charge|pay|payment|"
                r"stipend|compensation|wages?|allowance|reimburse[sd]?|reimbursement)\b", re.I),
     AnswerType.PRICE),
    (re.compile(r"\b(?:what|which)\s+(?:percent(?:age)?|share|proportion|fraction)\b|"
                r"\bpercent(?:age)?\b|%", re.I), AnswerType.PERCENT),
    (re.compile(r"\bhow (?:long|often|soon|frequently)\b|\bhow much time\b|\b(?:shortest|longest|"
                r"minimum|maximum|least|most)\s+(?:[\w'-]+\s+){0,3}(?:time|wait|pause|gap|break)\b|"
                r"\b(?:what|which)\s+(?:[\w'-]+\s+){0,5}(?:time-?out\b|"
                r"interval|duration|delay|period|lifetime|ttl|backoff|window)\b|"
                rf"\bhow many\s+{TIME_UNITS}\b|\bfor how (?:many|much) (?:time)\b", re.I),
     AnswerType.DURATION),
    (re.compile(r"^\s*when\b|\b(?<!of )(?:what|which)\s+(?:[\w'-]+\s+){0,4}(?<!per )(?<!a )"
                r"(?<!each )(?<!every )(?:date|day|year|month|decade|century|deadline)\b"
                r"(?!\s+(?:of\s+)?(?:PTO|off|leave|pass|rate|limit)\b)|"
                r"\bin (?:which|what) year\b|\bwhen (?:was|were|did|does|is)\b", re.I),
     AnswerType.DATE),
    # a question that opens asking for a number asks for one, whatever "where ... scripts"
    # follows ("What number decides where it lands in the loading order ...?")
    (re.compile(r"^\s*(?:what|which)\s+(?:\w+\s+)?(?:number|count|amount)\b(?!\s+of\s+(?:the\s+)?"
                r"(?:file|dir|path|folder))|^\s*how many\b", re.I), AnswerType.NUMBER),
    (re.compile(r"\b(?:what|which)\s+(?:\w+\s+){0,2}(?:path|directory|folder|file ?name|"
                # "what file permissions", "which file size": an attribute, no path
                r"file(?!\s+(?:permissions?|modes?|size|sizes|owner|ownership|format|type)\b)|"
                r"extension|suffix|command|shell|binary|executable|url|endpoint|flag|option|"
                r"switch)\b|\bwhere (?:\w+\s+){0,4}(?:stored|kept|saved|written|put|placed|go|goes|"
                r"end up|ends up|land|lands|live|lives)\b|"
                r"\bwhere\b.*\b(?:file|folder|directory|log|logs|config|cache|data|socket|"
                r"database|binary|script)s?\b", re.I), AnswerType.PATH),
    (re.compile(r"\bwhat(?:'s| is| are| was)? (?:the )?(?:defaults?\b|[\w.$-]+ (?:by default|"
                r"normally)\??$)|\bdefault (?:value|setting|size|limit|mode|behaviou?r|level|"
                r"port|path|location|encoding|format)\b|\bdefaults? to\b|\bdoes \S+ default\b|"
                r"\bif (?:you )?(?:don't|do not) (?:set|specify|pass|give)\b|\bout of the box\b",
                re.I), AnswerType.DEFAULT),
    (re.compile(r"\bhow (?:many|much)\b|\b(?:what|which)(?:'s| is| was| are| were)? (?:the )?"
                r"(?:[\w'-]+ ){0,4}(?:number|count|maximum|minimum|max|min|limit|size|length|"
                r"depth|amount|total|capacity|threshold|quota|rate|margin|revenue|headcount|"
                r"ratio|growth|score|balance|population|value|speed|latency|throughput|uptime|"
                r"temperature|weight|height|age|distance|percentage|share|level|sales|income|"
                r"profit|loss|volume|density|frequency|ceiling|cap|floor|index|port|"
                r"(?<=file )permissions|permission bits)\b|"
                r"\bhow (?:large|big|deep(?:ly)?|far|high|low|small|wide|tall|old|heavy|fast|"
                r"many times)\b|\b(?:what|which)(?:'s| is| was| are| were)? (?:the )?"
                r"(?:lowest|highest|fewest)\b|\b(?:biggest|largest|smallest)\s+(?:[\w'-]+\s+){0,2}"
                r"(?:message|e-?mail|mail|file|attachment|request|body|header|line|packet|"
                r"buffer|payload|upload|object|page|batch|chunk|value|size|number)s?\b", re.I),
     AnswerType.NUMBER),
    (re.compile(r"^\s*who\b|\bwhose\b|\b(?:what|which)\s+(?:[\w'-]+\s+){0,2}(?:name|person|people|"
                r"company|team|city|country|state|town|place|author|owner|group|band|film|"
                r"movie|book|album|song|organization|organisation|university|school|club|"
                r"language|library|tool|package|module|function|class|method|setting|"
                r"variable|field|column|table|role|position|nationality|product|service|"
                r"kind|type|sort|mode|strategy|algorithm|format|tokenizer|affinity|protocol|"
                r"code|keyword|header|string|line|word|engine|backend|parameter|argument|"
                r"statement|clause|operator|encoding|character|symbol)\b|"
                r"\bwhat (?:is|was|are|were) (?:it|he|she|they|this|that) called\b|"
                r"^\s*where\b|"
                r"\b(?:called|named)\b", re.I), AnswerType.NAME),
]

"""The structured results of the served tools (pydantic: the MCP SDK derives each
tool's output JSON schema from these, and the ACP agent reuses them)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SearchHit(BaseModel):
    """One chunk found by ``search``: where it lies, what it says, why it ranked."""

    kb: str
    path: str
    start_line: int
    end_line: int
    heading: str
    excerpt: str
    uri: str = Field(description="kbagent://KB/path: the document as a resource")
    score: float = Field(description="fused score (reciprocal rank fusion, or the reranker's)")
    bm25_rank: int | None = None
    bm25_score: float | None = None
    vector_rank: int | None = None
    vector_score: float | None = None
    location: str = Field("", description="the place in the source's own terms: 'p.2 l.3-9', "
                          "'slide 3', 'Budget!A2:C9', 'cell 4' ('' for plain text)")


class SearchResult(BaseModel):
    query: str
    mode: str
    hits: list[SearchHit]
    failed_kbs: dict[str, str] = Field(default_factory=dict,
                                       description="KB -> why it could not be searched")


class Reference(BaseModel):
    """A numbered reference ``[n]`` of an answer: a line range of one document."""

    n: int
    kb: str
    path: str
    start_line: int
    end_line: int
    where: str = Field(description="path:start-end")
    uri: str
    excerpt: str
    location: str = Field("", description="page, slide, sheet cells or cell ('' for plain text)")


class AskResult(BaseModel):
    question: str
    answer: str = Field(description="the answer, citing references as [n]")
    status: str = Field(description="answered | limit | cancelled | error")
    mode: str
    references: list[Reference]
    steps: int
    abstained: bool = False


class NumberedLine(BaseModel):
    number: int
    text: str


class ReadResult(BaseModel):
    """Numbered lines of one document (the same rule as the agent's ``kb_cat``)."""

    kb: str
    path: str
    title: str
    start_line: int
    end_line: int
    total_lines: int
    next_line: int | None = Field(None, description="where to continue; null at the end")
    lines: list[NumberedLine]


class KbInfo(BaseModel):
    name: str
    documents: int = Field(description="documents the caller may read")
    chunks: int = Field(description="chunks the caller may read")
    embedding_model: str = ""


class KbList(BaseModel):
    kbs: list[KbInfo]
    failed_kbs: dict[str, str] = Field(default_factory=dict)


class SymbolLocation(BaseModel):
    kb: str
    path: str
    line: int
    end_line: int
    name: str
    kind: str = Field(description="definition kind, or call / ref")
    qualname: str = ""
    text: str = ""
    uri: str


class SymbolResult(BaseModel):
    symbol: str
    results: list[SymbolLocation]
    missing_index: list[str] = Field(default_factory=list,
                                     description="KBs without a symbol index")

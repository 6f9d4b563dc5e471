"""What makes an answer trustworthy, whichever policy writes it.

``citations`` (the ledger: badge -> chunk -> lines on disk), ``units`` and
``unit_lines`` (chunks cut into sentences, table rows, entries, signatures),
``focus`` with ``kind_rules``, ``named`` and ``phrasing`` (the question read once:
content terms, named things, the answer type), ``evidence`` (units scored against
the question: the ranking both policies show), ``support`` (is a sentence supported
by the chunks it cites), ``sentences`` and ``processor`` (the answer checked sentence
by sentence as it streams; the small-model policy's repairs are passed in),
``claims`` and ``figures`` (the model-authored policy's check of every sentence).
The small-model policy's rules are a room of their own, :mod:`kbagent.agent.harness`.
"""

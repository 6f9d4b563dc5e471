"""What makes an answer trustworthy, independent of how the run got there.

``citations`` (the ledger: badge -> chunk -> lines on disk), ``evidence`` (chunks
cut into sentences and table rows, scored against a question), ``support`` (is a
sentence supported by the chunks it cites), ``processor`` (the answer checked
sentence by sentence as it streams) and ``grounding`` (what the processor does
with a sentence whose facts are not in its sources, and when to abstain).
"""

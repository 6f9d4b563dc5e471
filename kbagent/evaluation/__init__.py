"""Quality measurement on a user's own data: retrieval metrics over BEIR-format
data sets (``kbagent eval retrieval``) and the answer metrics QA evaluation uses.

UI-neutral like ``kb/``: the CLI renders what these modules return.
"""

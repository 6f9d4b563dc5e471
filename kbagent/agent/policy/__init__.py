"""Answer policies (issue 44): how an answer is planned, composed and checked.

The model-authored policy lets a model that can read write the whole answer from the
gathered evidence; :mod:`~kbagent.agent.policy.check` is its check stage, which reads
each sentence against the chunks it cites and words what fails for the model.
"""

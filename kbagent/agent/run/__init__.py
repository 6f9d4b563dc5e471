"""How one question is run: the ReAct loop and everything that happens between
the question and the ``Final`` event, for either answer policy.

``loop`` (the :class:`~kbagent.agent.run.loop.Agent` and its bounded generator of
events; it hands the answer to a policy), ``state`` (the configuration and one run's
state), ``generation`` (one streamed LLM call), ``act`` (the model's Action carried
out), ``harness_steps`` (searches and calculations taken without an LLM call),
``endings`` (how a run ends), ``router`` and ``about`` (``--mode auto`` and what
kbagent says about itself), ``hops``, ``search_memory`` and ``gather`` (follow-up
searches for multi-hop questions, what was already searched, the plan stage in front
of the model), ``prompts`` and ``react`` (what the model is told and the text
protocol it answers in), ``conversation`` (a follow-up's earlier turns: its search
and prompts), ``policy`` (which policy answers, by the model's declared size),
``authored`` and ``decline`` (the model-authored policy: compose, search again,
check, ask again once, flag; the explicit choice to decline). The small-model
policy is :mod:`kbagent.agent.harness`.
"""

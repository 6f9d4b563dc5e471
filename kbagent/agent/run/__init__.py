"""How one question is run: the ReAct loop and everything that happens between
the question and the ``Final`` event.

``loop`` (the :class:`~kbagent.agent.run.loop.Agent` and its bounded generator of
events), ``state`` (the configuration and one run's state), ``generation`` (one
streamed LLM call), ``act`` (the model's Action carried out), ``harness_steps``
(searches and calculations the harness takes itself), ``final_turn`` (the
grounded final answer), ``endings`` (how a run ends), ``hops`` and
``search_memory`` (follow-up searches for multi-hop questions, and what was
already searched), ``decompose`` (multi-part and arithmetic questions taken
apart), ``calc_plan``, ``quantities`` and ``calculation`` (the arithmetic a
question asks for, units of measure, the calculation and its answer),
``router`` and ``about`` (``--mode auto`` and what kbagent says about itself),
``prompts`` and ``react`` (what the model is told and the text protocol it
answers in), ``conversation`` (a follow-up's earlier turns: its search and prompts).
"""

"""The small-model answer policy (``answer_policy = harness``): the rules that write an
answer for a model too small to write one, frozen (issue 44: no rule is added for a
phrasing).

They run after the shared stages (the question's reading and the evidence ranking in
:mod:`kbagent.agent.answer`, the searches in :mod:`kbagent.agent.run`), in this order:

* plan: ``decompose``, ``clauses``, ``calc_plan`` and ``quantities`` (a question of
  parts, comparisons or arithmetic taken apart), ``bridge``, ``second_hop``,
  ``compare`` and ``hop_answer`` (the multi-hop path);
* follow-up searches: a search per part or operand (``final_turn``, ``calculation``),
  the hops' searches (``bridge``);
* compose: ``final_turn`` (the grounded final turn: part by part, or the model's
  answer from the best units, checked and repaired), ``calculation`` and ``totals``
  (the arithmetic's answer), ``short``, ``span_rules``, ``name_spans``, ``defaults`` and
  ``unit_links`` (the short answer and the lead's unit), ``short_turn`` and ``judge``
  (the model's one-word pick among the harness's candidates);
* check: ``grounding`` (abstention, and the repairs of a model sentence whose facts are
  not in its sources, which the answer processor is handed).

The loop sees the room as ``policy.HarnessPolicy``, one of the answer policies behind
the seam (:class:`kbagent.agent.run.state.Policy`). Nothing in the package outside this
room imports it but the loop (:mod:`kbagent.agent.run.loop`), which builds the
harness's grounding and hands the policy the final turn; the model-authored policy gets
the harness's abstention test passed in (``grounding.abstention_reason``).
``tests/test_import_graph.py`` keeps it so.
"""

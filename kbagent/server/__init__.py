"""kbagent served to other programs: an MCP server (stdio and streamable HTTP) and an
ACP agent. A surface like the CLI and TUI: everything goes through the session layer
(:mod:`kbagent.session`), one loaded model and KB set serve every client, and each
call runs as the caller's principal (who that is depends on the transport: see
:mod:`kbagent.server.auth` and the README)."""

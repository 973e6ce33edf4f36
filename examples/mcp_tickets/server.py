"""A small ticketing service as an MCP server over stdio: the example for ``seal/MCP-v0``.

Run it the way the env does: ``python examples/mcp_tickets/server.py`` (it speaks MCP on
stdin/stdout). Written with the MCP SDK's high-level server, which mcp 2.x calls ``MCPServer``
and mcp 1.x ``FastMCP``; both build each tool's JSON Schema from its signature. State lives in
this process; ``reset`` puts it back to the start (the task file names it, so an episode needs
no new process) and ``dump_state`` returns it (the task file's ``state_tool``): the env hides
both from the agent.
"""

from __future__ import annotations

import copy
from typing import Literal, Optional

try:  # mcp 2.x
    from mcp.server.mcpserver import MCPServer as Server
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import FastMCP as Server
from mcp.types import ToolAnnotations

READ = ToolAnnotations(readOnlyHint=True)
Priority = Literal["low", "normal", "high", "urgent"]

AGENTS = ("alice", "bob", "chen", "dana")
INITIAL = {
    "next_id": 107,
    "tickets": {
        "T-101": {"title": "Login page times out", "status": "open", "priority": "high", "assignee": "alice", "comments": []},
        "T-102": {"title": "Password reset email never arrives", "status": "open", "priority": "urgent", "assignee": None, "comments": []},
        "T-103": {"title": "Dark mode colours are wrong", "status": "in_progress", "priority": "low", "assignee": "bob", "comments": []},
        "T-104": {"title": "Export to CSV drops the last row", "status": "blocked", "priority": "normal", "assignee": "chen", "comments": ["waiting on the data team"]},
        "T-105": {"title": "Typo on the pricing page", "status": "closed", "priority": "low", "assignee": "dana", "comments": [], "resolution": "fixed"},
        "T-106": {"title": "Mobile app crashes on start", "status": "open", "priority": "urgent", "assignee": "bob", "comments": []},
    },
}
state = copy.deepcopy(INITIAL)
app = Server("tickets")


def _ticket(ticket_id: str) -> dict:
    if ticket_id not in state["tickets"]:
        raise ValueError(f"ticket {ticket_id} not found")
    return state["tickets"][ticket_id]


def _open(ticket_id: str) -> dict:
    ticket = _ticket(ticket_id)
    if ticket["status"] == "closed":
        raise ValueError(f"ticket {ticket_id} is closed; reopen it first")
    return ticket


def _agent(name: str) -> str:
    if name not in AGENTS:
        raise ValueError(f"no agent named {name}; agents: {', '.join(AGENTS)}")
    return name


def _summary(ticket_id: str) -> dict:
    t = state["tickets"][ticket_id]
    return {"id": ticket_id, "title": t["title"], "status": t["status"], "priority": t["priority"],
            "assignee": t["assignee"]}


@app.tool(annotations=READ)
def list_tickets(status: Optional[Literal["open", "in_progress", "blocked", "closed"]] = None,
                 assignee: Optional[str] = None) -> list:
    """List tickets, optionally only those with a status or an assignee."""
    return [_summary(i) for i, t in state["tickets"].items()
            if (status is None or t["status"] == status) and (assignee is None or t["assignee"] == assignee)]


@app.tool(annotations=READ)
def search_tickets(query: str) -> list:
    """Tickets whose title contains the query (case-insensitive)."""
    return [_summary(i) for i, t in state["tickets"].items() if query.lower() in t["title"].lower()]


@app.tool(annotations=READ)
def get_ticket(ticket_id: str) -> dict:
    """One ticket with its comments."""
    return {"id": ticket_id, **_ticket(ticket_id)}


@app.tool(annotations=READ)
def list_agents() -> list:
    """The support agents a ticket can be assigned to."""
    return list(AGENTS)


@app.tool()
def create_ticket(title: str, priority: Priority = "normal", assignee: Optional[str] = None) -> dict:
    """Open a new ticket; returns its id."""
    ticket_id = f"T-{state['next_id']}"
    state["next_id"] += 1
    state["tickets"][ticket_id] = {"title": title, "status": "open", "priority": priority,
                                   "assignee": None if assignee is None else _agent(assignee), "comments": []}
    return {"id": ticket_id}


@app.tool()
def assign_ticket(ticket_id: str, assignee: str) -> dict:
    """Give an open ticket to a support agent."""
    _open(ticket_id)["assignee"] = _agent(assignee)
    return _summary(ticket_id)


@app.tool()
def set_priority(ticket_id: str, priority: Priority) -> dict:
    """Change a ticket's priority."""
    _open(ticket_id)["priority"] = priority
    return _summary(ticket_id)


@app.tool()
def update_status(ticket_id: str, status: Literal["open", "in_progress", "blocked"]) -> dict:
    """Move an open ticket to another status (use close_ticket to close it)."""
    _open(ticket_id)["status"] = status
    return _summary(ticket_id)


@app.tool()
def close_ticket(ticket_id: str, resolution: Literal["fixed", "wont_fix", "duplicate"]) -> dict:
    """Close a ticket with a resolution. A blocked ticket cannot be closed."""
    ticket = _open(ticket_id)
    if ticket["status"] == "blocked":
        raise ValueError(f"ticket {ticket_id} is blocked; unblock it before closing it")
    ticket["status"], ticket["resolution"] = "closed", resolution
    return _summary(ticket_id)


@app.tool()
def reopen_ticket(ticket_id: str) -> dict:
    """Reopen a closed ticket."""
    ticket = _ticket(ticket_id)
    if ticket["status"] != "closed":
        raise ValueError(f"ticket {ticket_id} is not closed")
    ticket["status"] = "open"
    ticket.pop("resolution", None)
    return _summary(ticket_id)


@app.tool()
def add_comment(ticket_id: str, text: str) -> dict:
    """Add a comment to a ticket."""
    _ticket(ticket_id)["comments"].append(text)
    return {"id": ticket_id, "comments": len(state["tickets"][ticket_id]["comments"])}


@app.tool()
def reset() -> str:
    """Back to the initial tickets (the env calls it between episodes; hidden from the agent)."""
    state.clear()
    state.update(copy.deepcopy(INITIAL))
    return "ok"


@app.tool(annotations=READ)
def dump_state() -> dict:
    """Every ticket (the verifier's state tool; hidden from the agent)."""
    return state


if __name__ == "__main__":
    app.run()

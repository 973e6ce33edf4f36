"""A task's ``check`` function: ``"check": "checks:has_ticket_titled"`` in tasks.jsonl.

Called at the episode's end with the state (the ``state_tool`` result, here ``dump_state``'s)
and the trajectory (``{"calls": [...], "answers": [...]}``); returns True/False or
``(passed, detail)``. Use one where comparing states exactly is too strict: here any priority
and assignee pass, as long as exactly one new ticket has the title.
"""


def has_ticket_titled(state, trajectory, title="Search is slow"):
    titles = [t["title"] for t in state["tickets"].values()]
    if titles.count(title) != 1:
        return False, f"expected one ticket titled {title!r}, found {titles.count(title)}"
    return len(state["tickets"]) == 7, "exactly one ticket was created"

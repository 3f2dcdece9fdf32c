"""ktune.errors — the one exception the client raises for the service's answers."""


class KtuneError(Exception):
    """An error answer of the ktune API (or the server could not be reached).

    status: the HTTP status (0 when there was no HTTP answer: refused, timed out, not JSON);
    code: the API's error code ("no_best", "bad_problem", ..., or "unreachable");
    message, hint: the API's text (hint may be None)."""

    def __init__(self, status, code, message, hint=None):
        self.status = status
        self.code = code
        self.message = message
        self.hint = hint
        text = "%s (%s, HTTP %s)" % (message, code, status)
        if hint:
            text += "\n  hint: " + hint
        super().__init__(text)

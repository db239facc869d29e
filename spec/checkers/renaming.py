"""Tokens up to renaming, for ``tokens=opaque``: the model's numbers and a scheduler's own tokens.

Under ``tokens=opaque`` a scheduler chooses its tokens (an SQS receipt handle
is 185 random letters), so a file cannot name them. Files name them the way
the model issues its own: ``token = N`` is the token of the N-th distinct
token handed out in this run (the model's N). ``Renaming`` keeps the
correspondence for one run: every lease's token is numbered when first seen
(``saw``); a step's int token N is sent to the scheduler as the token it
handed out as N (``to_scheduler``), and an N no lease had yet as a fresh
token no lease carried (a str, or an int while the scheduler's are ints), so "a token never issued" stays never issued. A str
in a step is sent as it is. Under ``tokens=int`` no renaming happens: the
checkers do not build one.

Pure bookkeeping: O(1) per token.
"""

from __future__ import annotations

#: How a token never issued is spelled when sent to a scheduler under
#: ``tokens=opaque``: this prefix and the number the file gave it.
NEVER_ISSUED = "never-issued-"


class Renaming:
    """The model's token numbers (1, 2, 3... in the order first seen) and a scheduler's tokens, both ways."""

    def __init__(self) -> None:
        self.tokens: list[object] = []  # the scheduler's tokens, the N-th at N - 1
        self.numbers: dict[object, int] = {}  # the scheduler's token -> its number

    def saw(self, token: object) -> int:
        """Number a token a lease carried (its first number if seen before); return the number."""
        key = _key(token)
        if key not in self.numbers:
            self.tokens.append(token)
            self.numbers[key] = len(self.tokens)
        return self.numbers[key]

    def known(self, token: object) -> bool:
        """Whether a lease carried ``token`` already."""
        return _key(token) in self.numbers

    def number_of(self, token: object) -> object:
        """A scheduler's token as the model's number; a token no lease carried as it is."""
        return self.numbers.get(_key(token), token)

    def to_scheduler(self, token: object) -> object:
        """A step's token as sent to the scheduler: the N-th token seen for an int N, else a fresh one or ``token``.

        A fresh one is a str no lease carried, or while every token seen is an
        int (a scheduler may refuse a str it never issues), an int above them all.

        Only a plain ``int`` is renamed; a bool, float, list or str is sent as
        it is (a wrong type stays wrong; a str is a token the file chose).
        """
        if type(token) is not int:
            return token
        if 1 <= token <= len(self.tokens):
            return self.tokens[token - 1]
        if not any(isinstance(t, str) for t in self.tokens):
            # a scheduler whose tokens are ints may refuse a str: a fresh int, above every one it issued
            return max((t for t in self.tokens if type(t) is int), default=0) + token
        fresh = f"{NEVER_ISSUED}{token}"
        while _key(fresh) in self.numbers:
            fresh += "x"
        return fresh

    def args_to_scheduler(self, op: str, args: dict) -> dict:
        """``args`` with every token (``token``, and the pairs of ``complete_many``/``fail_many``) sent as ``to_scheduler`` says."""
        if "token" not in args and "reports" not in args:
            return args
        out = dict(args)
        if "token" in out:
            out["token"] = self.to_scheduler(out["token"])
        if isinstance(out.get("reports"), (list, tuple)):
            out["reports"] = [
                [pair[0], self.to_scheduler(pair[1])] if isinstance(pair, (list, tuple)) and len(pair) == 2 else pair
                for pair in out["reports"]
            ]
        return out

    def args_to_numbers(self, args: dict) -> dict:
        """``args`` with every scheduler's token replaced by its number (the inverse of ``args_to_scheduler``)."""
        if "token" not in args and "reports" not in args:
            return args
        out = dict(args)
        if "token" in out:
            out["token"] = self.number_of(out["token"])
        if isinstance(out.get("reports"), (list, tuple)):
            out["reports"] = [
                [pair[0], self.number_of(pair[1])] if isinstance(pair, (list, tuple)) and len(pair) == 2 else pair
                for pair in out["reports"]
            ]
        return out


def _key(token: object) -> tuple[str, object]:
    """A dict key that keeps ``1`` and ``"1"`` (and ``True``) apart; an unhashable value by its repr."""
    try:
        hash(token)
    except TypeError:
        return (type(token).__name__, repr(token))
    return (type(token).__name__, token)

"""Tokens for queues whose handles are not 1, 2, 3...: opaque and composite tokens.

A lease's token is what a worker shows to complete, fail or renew that one
assignment. The contract's rule is that every lease gets a token never handed
out before; under ``tokens=opaque`` the token may be any non-empty ``str`` or
``int`` the queue chooses (checkers compare them up to renaming).

What to use as the token: **what the queue itself takes to act on the
assignment, plus whatever the queue records that tells one assignment of the
job from the next.** SQS's receipt handle is new at every receive: it is the
token. A queue whose ack takes only a job id has a token that is never fresh
(litequeue, pgqueuer): say so, use the id, and let the check find it; do not
invent freshness the queue does not have. A queue that records who holds a
job and how often it was handed out (Redis Streams' pending entries:
id, consumer, times delivered; procrastinate's job row: id, worker id,
attempts) names an assignment by all of those together: a ``CompositeToken``.

Then decide, and write down, what the adapter passes to the queue: a queue
whose ack takes only the job id is given only the job id, even when the token
names more. The adapter must not fence on the queue's behalf (compare the
token's other parts itself and refuse): the check would then judge the
adapter, not the queue. Refuse without a call only what no call could mean:
a token that does not parse, or one this adapter handed out for another task
(the queue would act on the other task's job).
"""

from __future__ import annotations

from collections.abc import Mapping

#: What separates a composite token's parts (``1699-0/w1/2``): not a character any part may hold.
SEPARATOR = "/"


class CompositeToken:
    """A token made of named parts, written ``part/part/part`` (``SEPARATOR``).

    ``CompositeToken("entry", "consumer", "delivered")`` makes and reads tokens
    such as ``"1700000000000-0/w1/2"``. Parts are ``str`` (an ``int`` is
    written in decimal) and may not hold the separator. Immutable.

    Complexity: ``make`` and ``parse`` O(length of the token).
    """

    __slots__ = ("fields",)

    def __init__(self, *fields: str) -> None:
        """Raises ValueError: fewer than two fields, a repeated one, or one that is not a non-empty str."""
        if len(fields) < 2 or len(set(fields)) != len(fields) or not all(isinstance(f, str) and f for f in fields):
            raise ValueError(f"a composite token needs two or more distinct, non-empty field names, not {fields!r}")
        self.fields = fields

    def make(self, **parts: object) -> str:
        """The token of these parts, one for each field.

        Raises:
            ValueError: a field is missing or unknown, or a part is empty or holds ``SEPARATOR``.
        """
        if set(parts) != set(self.fields):
            raise ValueError(f"a token needs exactly the parts {', '.join(self.fields)}, not {', '.join(sorted(parts))}")
        texts = []
        for name in self.fields:
            value = parts[name]
            text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
            if not isinstance(text, str) or not text or SEPARATOR in text:
                raise ValueError(f"token part {name} must be a non-empty str or int without {SEPARATOR!r}, not {value!r}")
            texts.append(text)
        return SEPARATOR.join(texts)

    def parse(self, token: object) -> Mapping[str, str] | None:
        """The parts of ``token`` by field name, or None when it is not a token of this shape.

        None is not an error: a report whose token does not parse names no
        assignment the queue ever made, so the adapter refuses it (an
        ``Outcome``) without calling the queue. Never raises.
        """
        if not isinstance(token, str):
            return None
        texts = token.split(SEPARATOR)
        if len(texts) != len(self.fields) or not all(texts):
            return None
        return dict(zip(self.fields, texts))

    def __repr__(self) -> str:
        return f"CompositeToken{self.fields!r}"

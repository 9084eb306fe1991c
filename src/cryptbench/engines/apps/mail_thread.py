"""mail-thread (study 001): open a thread of 42 replies in a mail store.

The store is one file per message plus an SQLite index, as Maildir-style
clients keep it; thousands of messages, the thread's spread among them. It
is made once per run outside the targets and copied onto each target before
its first trial (outside the clock). Each trial, with caches dropped: the
index is queried for the thread, and each message read and parsed.
"""

from __future__ import annotations

import email
import email.policy
import shutil
import sqlite3
from dataclasses import dataclass
from email.message import EmailMessage
from typing import ClassVar

from cryptbench.engines.apps.base import (
    AppEnv,
    AppResult,
    AppWorkload,
    PhaseClock,
    durable,
    inputs_ready,
    mark_inputs_ready,
    remove_tree,
)
from cryptbench.engines.apps.data import lognormal_sizes, rng, text
from cryptbench.engines.apps.params import Params
from cryptbench.model.json_types import JsonObject, TomlTable
from cryptbench.model.metrics import MetricInfo

REPLIES = 42  # study 001's thread
MEDIAN_MESSAGE = 8 << 10  # bytes of body; log-normal, sigma 1.0
MIN_MESSAGES = 200
THREAD_ID = 1


@dataclass(frozen=True)
class MailThread(AppWorkload):
    app: ClassVar[str] = "mail-thread"
    writes: ClassVar[bool] = False
    primary: ClassVar[str] = "seconds"
    rate_metric: ClassVar[str | None] = "messages_per_second"
    metrics: ClassVar[tuple[MetricInfo, ...]] = (
        MetricInfo("messages_per_second", "messages/s", True, "messages per second"),
    )
    summary: ClassVar[str] = "a mail store (a file per message, an SQLite index): open a thread of 42 replies"

    name: str
    replies: int = REPLIES  # messages in the thread after the first

    @classmethod
    def from_table(cls, name: str, params: TomlTable, where: str) -> MailThread:
        p = Params(params, where)
        replies = p.integer("replies", REPLIES, 1, 10_000)
        p.done()
        return cls(name, replies)

    def bodies(self, size: int, seed: int) -> list[int]:
        sizes = lognormal_sizes(seed, size, MEDIAN_MESSAGE, 1.0, 256, 4 << 20)
        while len(sizes) < max(MIN_MESSAGES, self.replies + 1):
            sizes.append(MEDIAN_MESSAGE)
        return sizes

    def target_bytes(self, size: int) -> int:
        return 2 * size + (size // MEDIAN_MESSAGE + MIN_MESSAGES + self.replies) * 8192

    def input_bytes(self, size: int) -> int:
        return self.target_bytes(size)

    def describe(self, size: int) -> JsonObject:
        return {**super().describe(size), "replies": self.replies}

    def make_inputs(self, env: AppEnv) -> None:
        if inputs_ready(env.inputs):
            return
        store = env.inputs / "Mail"
        remove_tree(store)
        (store / "cur").mkdir(parents=True)
        bodies = self.bodies(env.size, env.seed)
        r = rng(env.seed, "mailbox")
        # The thread's messages land at random places among the others.
        thread_at = set(r.sample(range(len(bodies)), self.replies + 1))
        index = sqlite3.connect(store / "index.sqlite", isolation_level=None)
        try:
            index.execute(
                "CREATE TABLE messages (id INTEGER PRIMARY KEY, thread INTEGER, date INTEGER,"
                " sender TEXT, subject TEXT, path TEXT)"
            )
            index.execute("CREATE INDEX by_thread ON messages(thread, date)")
            index.execute("BEGIN")
            reply = 0
            for i, n in enumerate(bodies):
                if i in thread_at:
                    thread, subject = THREAD_ID, ("Re: " * min(reply, 1)) + "Quarterly plan"
                    reply += 1
                else:
                    thread, subject = 2 + r.randrange(len(bodies)), f"Subject {i}"
                msg = EmailMessage()
                sender = f"person{r.randrange(500)}@example.org"
                msg["From"], msg["To"], msg["Subject"] = sender, "me@example.org", subject
                msg["Message-ID"] = f"<{i}@example.org>"
                msg.set_content(text(env.seed, n, "message", i).decode("ascii"))
                path = f"cur/{i:07d}.eml"
                (store / path).write_bytes(msg.as_bytes())
                index.execute(
                    "INSERT INTO messages (id, thread, date, sender, subject, path) VALUES (?,?,?,?,?,?)",
                    (i, thread, 1_700_000_000 + i, sender, subject, path),
                )
            index.execute("COMMIT")
        finally:
            index.close()
        mark_inputs_ready(env.inputs)

    def setup(self, env: AppEnv) -> None:
        store = env.root / "Mail"
        if inputs_ready(store):
            return
        remove_tree(store)
        shutil.copytree(env.inputs / "Mail", store)
        durable()
        mark_inputs_ready(store)

    def run(self, env: AppEnv) -> AppResult:
        store = env.root / "Mail"
        clock = PhaseClock()
        with clock.phase("open-thread") as c:
            index = sqlite3.connect(store / "index.sqlite")
            try:
                paths = [
                    p
                    for (p,) in index.execute(
                        "SELECT path FROM messages WHERE thread=? ORDER BY date", (THREAD_ID,)
                    )
                ]
            finally:
                index.close()
            for path in paths:
                raw = (store / path).read_bytes()
                msg = email.message_from_bytes(raw, policy=email.policy.default)
                body = msg.get_body(preferencelist=("plain",))
                if body is None:
                    raise OSError(f"message {path} has no text body")
                body.get_content()
                c.bytes += len(raw)
                c.items += 1
        stored = len(self.bodies(env.size, env.seed))
        return AppResult(tuple(clock.phases), len(paths), {"messages": len(paths), "store_messages": stored})

    def clean(self, env: AppEnv) -> None:
        pass  # the trial only reads; the store stays for the next one

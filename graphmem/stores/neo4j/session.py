"""The driver, sessions and transactions of the Neo4j store: connecting, retrying transient
failures, and turning driver errors into graphmem's (naming the server and what to do)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, TypeVar

from neo4j import (
    READ_ACCESS,
    WRITE_ACCESS,
    AsyncDriver,
    AsyncGraphDatabase,
    AsyncManagedTransaction,
    AsyncSession,
    Bookmarks,
    Driver,
    GraphDatabase,
    ManagedTransaction,
    NotificationMinimumSeverity,
    Record,
    Session,
)
from neo4j import exceptions as neo4j_errors

from ...config import StoreConfig, display_uri
from ...errors import (
    ConfigError,
    ConflictError,
    GraphmemError,
    InvalidInputError,
    StoreError,
    StoreUnavailableError,
)
from ...sansio import adrive as adrive_steps
from .bookmarks import SharedBookmarks
from .statements import Job, Statements, adrive, drive, run

T = TypeVar("T")

BOLT_SCHEMES: Final = frozenset({"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"})


@contextmanager
def conflicts() -> Iterator[None]:
    """A second memory or entity with the same identity (its uniqueness constraint): a concurrent
    writer created it first, so this write's plan is out of date."""
    try:
        yield
    except (neo4j_errors.ConstraintError, neo4j_errors.ResultFailedError) as exc:
        # the driver repeats a failed statement's error as ResultFailedError when it rolls back
        first = exc.__cause__ if isinstance(exc, neo4j_errors.ResultFailedError) else exc
        if not isinstance(first, neo4j_errors.ConstraintError) or "identity" not in (first.message or ""):
            raise
        raise ConflictError(f"a concurrent write stored the same memory or entity first ({first.message})") from exc


class Db:
    """The configured server: its driver once :meth:`connect` ran, and the ways to run work on it
    (each a session and a managed or auto-commit transaction, retried and error-mapped)."""

    def __init__(self, config: StoreConfig) -> None:
        self.cfg = config
        self.driver: Driver | None = None
        self.bookmarks = SharedBookmarks()

    def connect(self) -> None:
        """Create the driver and check the server answers (once; later calls do nothing)."""
        if self.driver is not None:
            return
        scheme = self.cfg.uri.partition("://")[0].lower()
        if scheme not in BOLT_SCHEMES:
            raise ConfigError(
                f"store.uri {display_uri(self.cfg.uri)!r} is not a Bolt address; use bolt:// (one server) or "
                "neo4j:// (routing: clusters, Aura), with +s or +ssc for TLS"
            )
        try:
            driver = GraphDatabase.driver(self.cfg.uri, auth=self.auth(), **self.driver_options())
            # A server that accepts the connection but never answers fails within connect_timeout_s:
            # the first connection is made by a probe bounded by it (the store's own driver may
            # wait acquire_timeout_s for one, while a busy server opens it).
            probe = GraphDatabase.driver(self.cfg.uri, auth=self.auth(), **self.driver_options(probe=True))
        except (neo4j_errors.ConfigurationError, ValueError) as exc:
            # the driver's message repeats the URI it was given: name ours without credentials
            raise ConfigError(
                f"invalid Neo4j store.uri {display_uri(self.cfg.uri)!r}: "
                f"{str(exc).replace(self.cfg.uri, display_uri(self.cfg.uri))}"
            ) from None
        try:
            with self.errors("connect", write=False), probe:
                probe.verify_connectivity()
        except BaseException:
            driver.close()
            raise
        self.driver = driver

    def auth(self) -> tuple[str, str] | None:
        password = self.cfg.password
        return (self.cfg.user, password.get_secret_value()) if password is not None else None

    def driver_options(self, *, probe: bool = False) -> dict[str, Any]:
        """The driver's settings: ``connection_timeout`` bounds only the TCP connect, so the Bolt
        handshake is bounded by the acquisition timeout (``connect_timeout_s`` for the probe at open,
        ``acquire_timeout_s`` afterwards; neither bounds a query once it runs)."""
        return {
            "connection_timeout": self.cfg.connect_timeout_s,
            "connection_acquisition_timeout": self.cfg.connect_timeout_s if probe else self.cfg.acquire_timeout_s,
            "max_transaction_retry_time": 0,  # graphmem retries, sooner (see Db.retrying)
            "user_agent": "graphmem",
            # Unknown-property warnings fire for every optional field absent so far; they would
            # drown real problems in the application's log.
            "notifications_min_severity": NotificationMinimumSeverity.OFF,
        }

    def close(self) -> None:
        if self.driver is not None:
            driver, self.driver = self.driver, None
            driver.close()

    def location(self) -> str:
        return display_uri(self.cfg.uri) + (f" (database {self.cfg.database})" if self.cfg.database else "")

    def unreachable(self, exc: BaseException) -> str:
        return (
            f"cannot reach Neo4j at {display_uri(self.cfg.uri)} ({exc}); start the development server with "
            "`make neo4j-start`, or point store.uri (GRAPHMEM_STORE__URI, NEO4J_URI in the tests) "
            "at a running Neo4j 5.26+"
        )

    @contextmanager
    def errors(self, what: str, *, write: bool) -> Iterator[None]:
        """Turn driver exceptions into graphmem's, naming the server and what to do."""
        try:
            yield
        except GraphmemError:
            raise
        except neo4j_errors.AuthError as exc:
            missing = " (no password is configured)" if self.cfg.password is None else ""
            raise StoreUnavailableError(
                f"Neo4j at {display_uri(self.cfg.uri)} refused the credentials of user {self.cfg.user!r}{missing}: "
                f"{exc.message}; set store.password (GRAPHMEM_STORE__PASSWORD) to that user's password"
            ) from exc
        except neo4j_errors.IncompleteCommit as exc:  # a ServiceUnavailable, so caught before it
            raise StoreError(
                f"Neo4j {what}: the connection broke during commit, so whether it was written is "
                f"unknown ({exc}); check before retrying"
            ) from exc
        except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired) as exc:
            suffix = "; nothing was written" if write else ""
            raise StoreUnavailableError(self.unreachable(exc) + suffix) from exc
        except neo4j_errors.DatabaseUnavailable as exc:
            # What a server that is shutting down (or stopping the database) answers to the
            # transactions still running: like an unreachable server, nothing committed.
            suffix = "; nothing was written" if write else ""
            raise StoreUnavailableError(
                f"Neo4j at {display_uri(self.cfg.uri)} stopped serving the database during {what} "
                f"({exc.message}); retry once it is running again{suffix}"
            ) from exc
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
            if isinstance(exc, neo4j_errors.Neo4jError) and exc.code == "Neo.ClientError.Database.DatabaseNotFound":
                raise StoreUnavailableError(
                    f"Neo4j at {display_uri(self.cfg.uri)} has no database {self.cfg.database!r}; "
                    "set store.database to an existing one, or leave it unset for the server default "
                    "(Community has only 'neo4j')"
                ) from exc
            suffix = "; nothing was written" if write else ""
            raise StoreError(f"Neo4j {what} failed: {exc}{suffix}") from exc

    def session(self, access_mode: str = WRITE_ACCESS) -> Session:
        if self.driver is None:
            raise StoreError("the Neo4j store is not open; call open() first")
        return self.driver.session(database=self.cfg.database, default_access_mode=access_mode,
                                   bookmark_manager=self.bookmarks)

    def wait_for(self, bookmarks: Sequence[str]) -> None:
        """One read that starts once the writes ``bookmarks`` name are visible here; a bookmark the
        server cannot parse is the caller's :class:`InvalidInputError`."""
        if self.driver is None:
            raise StoreError("the Neo4j store is not open; call open() first")
        try:
            with self.errors("read_after", write=False), self.driver.session(
                    database=self.cfg.database, default_access_mode=READ_ACCESS,
                    bookmarks=Bookmarks.from_raw_values(bookmarks)) as session:
                session.run("RETURN 1").consume()
        except StoreError as exc:
            cause = exc.__cause__
            if getattr(cause, "code", None) == "Neo.ClientError.Transaction.InvalidBookmark":
                raise InvalidInputError("bookmarks are not bookmarks of this Neo4j server (give the strings "
                                        "another Memory's bookmarks() returned)") from None
            raise

    def retrying(self, call: Callable[[], T]) -> T:
        """Run ``call`` (one managed transaction) again after a transient failure (see :class:`Backoff`)."""
        backoff = Backoff(self.cfg.max_transaction_retry_s)
        while True:
            try:
                return call()
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
                pause = backoff.after(exc)
                if pause is None:
                    raise
            time.sleep(pause)

    def read(self, what: str, work: Callable[[ManagedTransaction], T]) -> T:
        with self.errors(what, write=False), self.session(READ_ACCESS) as session:
            return self.retrying(lambda: session.execute_read(work))

    def single(self, what: str, query: str, params: dict[str, Any]) -> Record | None:
        """One read query, one row, as an auto-commit READ transaction: RUN and PULL leave together,
        one network round trip, where ``execute_read`` adds a BEGIN and a COMMIT exchange (a large share
        of a search's time). The driver retries no auto-commit query, so a retryable failure (connection
        lost, transient server error) runs it again through ``execute_read``, which retries."""
        with self.errors(what, write=False):
            try:
                with self.session(READ_ACCESS) as session:
                    return session.run(query, params).single()
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
                if not exc.is_retryable():
                    raise
            with self.session(READ_ACCESS) as session:
                return self.retrying(lambda: session.execute_read(lambda tx: tx.run(query, params).single()))

    def write(self, what: str, work: Callable[[ManagedTransaction], T]) -> T:
        with self.errors(what, write=True), self.session() as session, conflicts():
            return self.retrying(lambda: session.execute_write(work))

    def read_steps(self, what: str, steps: Callable[[], Statements[T]]) -> T:
        """:meth:`read` of statements (:mod:`.statements`); ``steps`` makes them afresh per try."""
        return self.read(what, lambda tx: drive(tx, steps()))

    def write_steps(self, what: str, steps: Callable[[], Statements[T]]) -> T:
        return self.write(what, lambda tx: drive(tx, steps()))

    def perform(self, job: Job[T]) -> T:
        if job.how == "read":
            return self.read_steps(job.what, job.steps)
        if job.how == "write":
            return self.write_steps(job.what, job.steps)
        return self.singles(job.what, job.steps())

    def singles(self, what: str, steps: Statements[T]) -> T:
        """Statements each run alone as :meth:`single` (a search's round trips)."""
        try:
            step = next(steps)
            while True:
                step = steps.send(self.single(what, step.query, dict(step.params)))
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]


class Backoff:
    """When to run a transaction again after a failure: a deadlock, a leader switch, a connection
    lost before commit.

    Why not the driver's own retries (off: ``max_transaction_retry_time=0``): it waits about a
    second before the first, and writers locking the same entities deadlock now and then, which
    the server resolves at once by failing one of them. A pause of milliseconds, doubling,
    jittered, within ``store.max_transaction_retry_s``, keeps such a write's cost small."""

    def __init__(self, limit_s: float) -> None:
        self.deadline = time.monotonic() + limit_s
        self.pause = 0.004

    def after(self, exc: Exception) -> float | None:
        """The pause before the next try, or ``None`` when ``exc`` is final (not transient, or no time left)."""
        # a statement after a failed one reports ResultFailedError; the first failure decides
        first = exc.__cause__ if isinstance(exc, neo4j_errors.ResultFailedError) else exc
        transient = isinstance(first, neo4j_errors.Neo4jError | neo4j_errors.DriverError) and first.is_retryable()
        if not transient or time.monotonic() + self.pause > self.deadline:
            return None
        pause = random.uniform(self.pause / 2, self.pause)
        self.pause = min(2 * self.pause, 0.5)
        return pause


_ASYNC_POOL: Final = 100
"""Connections of the async driver (its default), and so the jobs one AsyncMemory runs at once."""


class AsyncDb:
    """The same server on ``neo4j.AsyncGraphDatabase``, for ``AsyncMemory``: sessions and managed
    transactions of the async driver, with :class:`Db`'s error mapping and retries.

    A cancelled task stops the transaction it awaits: before the commit, the async driver drops the
    connection and the server rolls the transaction back (nothing written); a commit the server
    already made stays (whole)."""

    def __init__(self, db: Db) -> None:
        self.db = db
        self.cfg = db.cfg
        self.driver: AsyncDriver | None = None
        self.bookmarks = db.bookmarks.for_async()
        self._slots: asyncio.Semaphore | None = None

    def _driver(self) -> AsyncDriver:
        """The async driver, made on first use (its connections belong to the running event loop)."""
        if self.driver is None:
            self.driver = AsyncGraphDatabase.driver(self.cfg.uri, auth=self.db.auth(), **self.db.driver_options(),
                                                    max_connection_pool_size=_ASYNC_POOL)
        return self.driver

    async def close(self) -> None:
        if self.driver is not None:
            driver, self.driver = self.driver, None
            await driver.close()

    def _session(self, access_mode: str = WRITE_ACCESS) -> AsyncSession:
        if self.db.driver is None:
            raise StoreError("the Neo4j store is not open; call open() first")
        return self._driver().session(database=self.cfg.database, default_access_mode=access_mode,
                                      bookmark_manager=self.bookmarks)

    async def _retrying(self, call: Callable[[], Awaitable[T]]) -> T:
        backoff = Backoff(self.cfg.max_transaction_retry_s)
        while True:
            try:
                return await call()
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
                pause = backoff.after(exc)
                if pause is None:
                    raise
            await asyncio.sleep(pause)

    async def read(self, what: str, steps: Callable[[], Statements[T]]) -> T:
        async def work(tx: AsyncManagedTransaction) -> T:
            return await adrive(tx, steps())

        with self.db.errors(what, write=False):
            async with self._session(READ_ACCESS) as session:
                return await self._retrying(lambda: session.execute_read(work))

    async def write(self, what: str, steps: Callable[[], Statements[T]]) -> T:
        async def work(tx: AsyncManagedTransaction) -> T:
            return await adrive(tx, steps())

        with self.db.errors(what, write=True), conflicts():
            async with self._session() as session:
                return await self._retrying(lambda: session.execute_write(work))

    async def single(self, what: str, query: str, params: dict[str, Any]) -> Record | None:
        """:meth:`Db.single` on the async driver: an auto-commit read, retried through a managed one."""
        with self.db.errors(what, write=False):
            try:
                async with self._session(READ_ACCESS) as session:
                    result = await session.run(query, params)
                    return await result.single()
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
                if not exc.is_retryable():
                    raise
            return await self.read(what, lambda: _one(query, params))

    async def perform(self, job: Job[T]) -> T:
        """Run a job once one of the pool's connections is free: many concurrent callers queue here,
        cancellable and without a deadline, instead of failing the driver's acquisition timeout."""
        if self._slots is None:
            self._slots = asyncio.Semaphore(_ASYNC_POOL)
        async with self._slots:
            if job.how == "read":
                return await self.read(job.what, job.steps)
            if job.how == "write":
                return await self.write(job.what, job.steps)
            return await adrive_steps(job.steps(), lambda step: self.single(job.what, step.query, dict(step.params)))


def _one(query: str, params: dict[str, Any]) -> Statements[Record | None]:
    row: Record | None = yield run(query, params, "single")
    return row

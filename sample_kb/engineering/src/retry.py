"""Retry and circuit-breaker helpers for upstream provider calls.

This module implements the retry policy described in
``engineering/design/retry_policy.md`` (owner: Sam Whitfield, Reliability team).
If you change a constant here, update the design doc and the customer FAQ in the same PR.

Summary of the policy:

* At most ``MAX_ATTEMPTS`` = 4 attempts per logical request (1 initial + 3 retries).
  Routes may override this between 1 and 6 (``MIN_ATTEMPTS_OVERRIDE`` .. ``MAX_ATTEMPTS_OVERRIDE``).
* Exponential backoff with *full jitter*: before retry ``n`` (n = 1, 2, ...) we sleep a random
  duration in ``[0, min(MAX_DELAY_S, BASE_DELAY_S * 2 ** (n - 1))]``. With the defaults the
  upper bounds are 0.5 s, 1 s and 2 s; the 8 s cap is only reached with 6 attempts.
* ``Retry-After`` from the provider is honoured for 429 and 503, capped at 30 seconds.
* The whole logical request, including all retries, must finish within 120 seconds.
* Retries are limited by a retry budget: at most 20% of requests to a provider in a rolling
  10-second window may be retries, with a floor of 10 retries per window so that a quiet
  gateway node can still retry.
* A streaming request is only retried if no bytes have been forwarded to the client yet.
* Every attempt of one logical request carries the same ``Idempotency-Key``.
"""

from __future__ import annotations

import random
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Deque, Optional, Tuple

# --- Retry policy constants -------------------------------------------------------------------

MAX_ATTEMPTS = 4              # total attempts, including the first one
MIN_ATTEMPTS_OVERRIDE = 1     # per-route override lower bound (1 = retries disabled)
MAX_ATTEMPTS_OVERRIDE = 6     # per-route override upper bound (raised from 5 in Gateway 4.6)
BASE_DELAY_S = 0.5            # backoff base
BACKOFF_MULTIPLIER = 2.0      # delay doubles each retry
MAX_DELAY_S = 8.0             # backoff cap
MAX_RETRY_AFTER_S = 30.0      # provider Retry-After is honoured up to this value
TOTAL_DEADLINE_S = 120.0      # end-to-end budget for one logical request
RETRY_BUDGET_RATIO = 0.2      # retries may be at most 20% of requests per provider ...
RETRY_BUDGET_WINDOW_S = 10.0  # ... in this rolling window,
RETRY_BUDGET_MIN_RETRIES = 10 # but at least 10 retries per window are always allowed

# Status codes that are retried. 529 is the "overloaded" status some providers use
# (retryable since Gateway 4.3).
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})

# Status codes that are never retried: the request itself is wrong or not allowed, and
# sending it again cannot succeed. 501 (not implemented) is also final.
NON_RETRYABLE_STATUS = frozenset({400, 401, 403, 404, 409, 413, 422, 501})

# --- Circuit breaker constants ----------------------------------------------------------------

BREAKER_FAILURE_RATE = 0.5          # open when >= 50% of requests fail ...
BREAKER_WINDOW_S = 30.0             # ... over a rolling 30-second window ...
BREAKER_MIN_REQUESTS = 20           # ... with at least 20 requests in the window,
BREAKER_CONSECUTIVE_FAILURES = 5    # or after 5 consecutive failures.
BREAKER_OPEN_S = 30.0               # stay open for 30 seconds, then go half-open
BREAKER_HALF_OPEN_PROBES = 3        # allow 3 probe requests; all 3 must succeed to close

# Consecutive retryable failures on one target before the retry loop fails over to the next
# target in the route's fallback chain (even if the breaker has not opened yet).
FAILOVER_AFTER_FAILURES = 2


class RetryableError(Exception):
    """Raised by an attempt that failed in a way that may succeed if tried again."""

    def __init__(self, status: Optional[int], retry_after_s: Optional[float] = None):
        super().__init__(f"retryable upstream failure (status={status})")
        self.status = status
        self.retry_after_s = retry_after_s


class FatalError(Exception):
    """Raised by an attempt that must not be retried (e.g. 400, 401, 422)."""

    def __init__(self, status: Optional[int]):
        super().__init__(f"non-retryable upstream failure (status={status})")
        self.status = status


def is_retryable(status: Optional[int], *, timed_out: bool = False,
                 connection_error: bool = False) -> bool:
    """Return True if an upstream result should be retried.

    Timeouts and connection errors (``status`` is None) are retryable. Anything in
    ``NON_RETRYABLE_STATUS`` is final. Unknown 4xx codes are final; unknown 5xx codes are
    retryable.
    """
    if timed_out or connection_error:
        return True
    if status is None:
        return False
    if status in RETRYABLE_STATUS:
        return True
    if status in NON_RETRYABLE_STATUS:
        return False
    return 500 <= status <= 599


def backoff_delay(retry_number: int, rng: random.Random = random) -> float:
    """Full-jitter exponential backoff.

    ``retry_number`` is 1 for the first retry (i.e. before the second attempt).
    Returns a value in ``[0, min(MAX_DELAY_S, BASE_DELAY_S * BACKOFF_MULTIPLIER ** (n - 1))]``.
    """
    if retry_number < 1:
        raise ValueError("retry_number starts at 1")
    ceiling = min(MAX_DELAY_S, BASE_DELAY_S * BACKOFF_MULTIPLIER ** (retry_number - 1))
    return rng.uniform(0.0, ceiling)


def effective_delay(retry_number: int, retry_after_s: Optional[float]) -> float:
    """Delay before the next attempt, honouring a provider ``Retry-After`` header.

    ``Retry-After`` wins over the computed backoff when present, but is capped at
    ``MAX_RETRY_AFTER_S`` (30 s). If the provider asks for more than 30 s, we do not wait: the
    caller should fail over to another target instead.
    """
    if retry_after_s is not None and retry_after_s >= 0:
        return min(retry_after_s, MAX_RETRY_AFTER_S)
    return backoff_delay(retry_number)


@dataclass
class RetryBudget:
    """Retry budget per provider: retries <= max(10, 20% of requests) in a rolling 10 s."""

    ratio: float = RETRY_BUDGET_RATIO
    window_s: float = RETRY_BUDGET_WINDOW_S
    min_retries: int = RETRY_BUDGET_MIN_RETRIES
    _requests: Deque[float] = field(default_factory=deque)
    _retries: Deque[float] = field(default_factory=deque)

    def _trim(self, now: float) -> None:
        for q in (self._requests, self._retries):
            while q and now - q[0] > self.window_s:
                q.popleft()

    def record_request(self, now: float) -> None:
        self._requests.append(now)

    def try_spend_retry(self, now: float) -> bool:
        """Return True (and record the retry) if the budget allows one more retry."""
        self._trim(now)
        limit = max(self.min_retries, self.ratio * len(self._requests))
        allowed = len(self._retries) + 1 <= limit
        if allowed:
            self._retries.append(now)
        return allowed


@dataclass
class CircuitBreaker:
    """Circuit breaker for one (provider, model, region) target.

    States: ``closed`` -> ``open`` -> ``half_open`` -> ``closed`` (or back to ``open``).
    HTTP 429 is *not* recorded as a failure: rate limiting says nothing about provider health.
    """

    state: str = "closed"
    opened_at: float = 0.0
    consecutive_failures: int = 0
    half_open_successes: int = 0
    half_open_in_flight: int = 0
    _events: Deque[Tuple[float, bool]] = field(default_factory=deque)

    def allow_request(self, now: float) -> bool:
        if self.state == "open":
            if now - self.opened_at >= BREAKER_OPEN_S:
                self.state = "half_open"
                self.half_open_successes = 0
                self.half_open_in_flight = 0
            else:
                return False
        if self.state == "half_open":
            if self.half_open_in_flight >= BREAKER_HALF_OPEN_PROBES:
                return False
            self.half_open_in_flight += 1
        return True

    def record(self, now: float, ok: bool, status: Optional[int] = None) -> None:
        if status == 429:
            return  # rate limited: not a health signal
        if self.state == "half_open":
            if not ok:
                self._open(now)
                return
            self.half_open_successes += 1
            if self.half_open_successes >= BREAKER_HALF_OPEN_PROBES:
                self.state = "closed"
                self.consecutive_failures = 0
                self._events.clear()
            return
        self._events.append((now, ok))
        while self._events and now - self._events[0][0] > BREAKER_WINDOW_S:
            self._events.popleft()
        self.consecutive_failures = 0 if ok else self.consecutive_failures + 1
        failures = sum(1 for _, good in self._events if not good)
        total = len(self._events)
        if self.consecutive_failures >= BREAKER_CONSECUTIVE_FAILURES or (
            total >= BREAKER_MIN_REQUESTS and failures / total >= BREAKER_FAILURE_RATE
        ):
            self._open(now)

    def _open(self, now: float) -> None:
        self.state = "open"
        self.opened_at = now


def call_with_retries(
    attempt: Callable[[str, str, bool], bytes],
    targets: list,
    breakers: dict,
    budgets: dict,
    *,
    max_attempts: int = MAX_ATTEMPTS,
    streaming: bool = False,
    bytes_sent: Callable[[], bool] = lambda: False,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> bytes:
    """Run ``attempt(target, idempotency_key, is_retry)`` with retries and failover.

    ``targets`` is the route's fallback chain (at most 4 targets), in priority order.
    Each attempt counts against ``max_attempts`` regardless of which target serves it.
    We move to the next target when its breaker is open, after
    ``FAILOVER_AFTER_FAILURES`` consecutive retryable failures on the current target, or when a
    provider asks us to wait longer than ``MAX_RETRY_AFTER_S``.
    """
    if not MIN_ATTEMPTS_OVERRIDE <= max_attempts <= MAX_ATTEMPTS_OVERRIDE:
        raise ValueError("max_attempts must be between 1 and 6")
    idempotency_key = str(uuid.uuid4())   # reused for every attempt of this logical request
    start = clock()
    target_index, failures_on_target = 0, 0
    last_error: Optional[Exception] = None

    for attempt_number in range(1, max_attempts + 1):
        # Skip targets whose breaker is open; an open breaker never receives a retry.
        while target_index < len(targets) and not breakers[targets[target_index]].allow_request(clock()):
            target_index, failures_on_target = target_index + 1, 0
        if target_index >= len(targets):
            break
        target = targets[target_index]
        budgets[target].record_request(clock())
        try:
            return attempt(target, idempotency_key, attempt_number > 1)
        except FatalError:
            breakers[target].record(clock(), ok=True)  # a 4xx is the caller's fault
            raise
        except RetryableError as err:
            last_error = err
            breakers[target].record(clock(), ok=False, status=err.status)
            if streaming and bytes_sent():
                raise  # first-byte rule: never retry once the client has received data
            if attempt_number == max_attempts:
                break
            failures_on_target += 1
            if err.retry_after_s is not None and err.retry_after_s > MAX_RETRY_AFTER_S:
                target_index, failures_on_target = target_index + 1, 0
                continue
            if failures_on_target >= FAILOVER_AFTER_FAILURES:
                target_index, failures_on_target = target_index + 1, 0
            if not budgets[target].try_spend_retry(clock()):
                break  # retry budget exhausted: surface the error instead of piling on
            delay = effective_delay(attempt_number, err.retry_after_s)
            if clock() - start + delay > TOTAL_DEADLINE_S:
                break
            sleep(delay)
    raise last_error or RetryableError(None)

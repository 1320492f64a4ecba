"""The review queue's claims (issue 16 item 2): while the queue shows a
summary to one reviewer, nobody else is given it.

A claim is one ``ReviewClaim`` row per generation: who holds it, until
when (``COMPACTION_REVIEW_CLAIM_SECONDS``, default 120 s; the open page
renews it), and a token naming this taking of it. Taking is one
conditional write, never a read then a write: an ``UPDATE`` of a row that
expired or is the taker's own, else an ``INSERT`` that the primary key
refuses to a second taker. Two reviewers racing for one summary therefore
get it once. Leaving the page (or recording a verdict, or skipping)
releases it; a page left open without renewing loses it at expiry.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from .models import ReviewAwaiting, ReviewClaim


def claim_seconds() -> int:
    return int(getattr(settings, "COMPACTION_REVIEW_CLAIM_SECONDS", 120))


@dataclass(frozen=True)
class Claim:
    generation_id: int
    token: str
    expires_at: datetime


def review_claim_take(*, generation_id: int, reviewer, now: datetime | None = None) -> Claim | None:
    """Claim a summary for ``reviewer``: theirs already (renewed, same
    token), free, or expired. ``None`` when another reviewer holds it, or
    when it awaits no verdict any more (reviewed meanwhile: a late
    heartbeat of a page already left must not hold it again)."""
    now = now or timezone.now()
    if not ReviewAwaiting.objects.filter(generation_id=generation_id).exists():
        return None
    expires = now + timedelta(seconds=claim_seconds())
    token = secrets.token_hex(16)
    mine = ReviewClaim.objects.filter(generation_id=generation_id, reviewer=reviewer, expires_at__gt=now).first()
    if mine is not None:
        # Renew in place; a concurrent expiry-and-take by someone else makes this update nothing.
        if ReviewClaim.objects.filter(generation_id=generation_id, reviewer=reviewer,
                                      token=mine.token).update(expires_at=expires):
            return Claim(generation_id, mine.token, expires)
    if ReviewClaim.objects.filter(generation_id=generation_id).filter(
            Q(expires_at__lte=now) | Q(reviewer=reviewer)).update(reviewer=reviewer, token=token, expires_at=expires):
        return Claim(generation_id, token, expires)
    try:
        with transaction.atomic():
            ReviewClaim.objects.create(generation_id=generation_id, reviewer=reviewer, token=token,
                                       expires_at=expires)
    except IntegrityError:
        return None
    return Claim(generation_id, token, expires)


def review_claim_renew(*, generation_id: int, reviewer, token: str, now: datetime | None = None) -> Claim | None:
    """Extend a claim this page holds (same token); ``None`` when it was
    lost (expired and taken by someone else, or released)."""
    now = now or timezone.now()
    expires = now + timedelta(seconds=claim_seconds())
    updated = ReviewClaim.objects.filter(generation_id=generation_id, reviewer=reviewer, token=token).update(
        expires_at=expires)
    return Claim(generation_id, token, expires) if updated else None


def review_claim_release(*, generation_id: int, reviewer, token: str | None = None) -> bool:
    """Give a claim up: only the reviewer's own, and with ``token`` only that
    taking of it (a page left behind never releases the claim a newer page
    of the same reviewer holds)."""
    qs = ReviewClaim.objects.filter(generation_id=generation_id, reviewer=reviewer)
    if token is not None:
        qs = qs.filter(token=token)
    return qs.delete()[0] > 0


def review_awaits(generation_id: int) -> bool:
    return ReviewAwaiting.objects.filter(generation_id=generation_id).exists()


def review_claim_holder(*, generation_id: int, now: datetime | None = None) -> ReviewClaim | None:
    """The live claim on a summary, if any."""
    now = now or timezone.now()
    return (ReviewClaim.objects.filter(generation_id=generation_id, expires_at__gt=now)
            .select_related("reviewer").first())

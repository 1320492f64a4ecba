"""Metrics for the next-run projection (SPEC §6; seed 004 metrics).

Registered in prometheus_client's default registry, so whoever serves
``/metrics`` exposes them. Every projection observes its bytes and tokens
used, its blocks by kind, and its pairs by form and reason — omissions and
raw fallbacks each counted with why.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from .packing import OMITTED, RAW, SUMMARY, Packing

_SIZE_BUCKETS = (1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216)
_TOKEN_BUCKETS = (256, 1024, 4096, 16384, 65536, 262144, 1048576)

PROJECTIONS = Counter(
    "compaction_projections", "Projections served for a next run.", ["format", "complete"]
)
PROJECTION_SECONDS = Histogram(
    "compaction_projection_seconds", "Time to assemble one projection.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.015, 0.025, 0.05, 0.1, 0.25, 1.0),
)
PROJECTION_BYTES = Histogram(
    "compaction_projection_bytes", "UTF-8 bytes used by one projection.", buckets=_SIZE_BUCKETS
)
PROJECTION_TOKENS = Histogram(
    "compaction_projection_tokens", "Tokens used by one projection (when a token budget was given).",
    buckets=_TOKEN_BUCKETS,
)
PROJECTION_BLOCKS = Counter(
    "compaction_projection_blocks", "Blocks returned in projections, by kind.", ["kind"]
)
PROJECTION_PAIRS = Counter(
    "compaction_projection_pairs",
    "Pairs accounted for in projections, by form (raw, summary, omitted) and reason (none when best form).",
    ["form", "reason"],
)
PROJECTION_OMISSIONS = Counter(
    "compaction_projection_omissions", "Pairs omitted from projections, by reason.", ["reason"]
)
PROJECTION_FALLBACKS = Counter(
    "compaction_projection_fallbacks", "Pairs of planned segments given raw instead of as a summary, by reason.",
    ["reason"],
)


def observe(packed: Packing, *, format: str, seconds: float) -> None:
    PROJECTIONS.labels(format=format, complete=str(packed.complete).lower()).inc()
    PROJECTION_SECONDS.observe(seconds)
    PROJECTION_BYTES.observe(packed.used_bytes)
    if packed.used_tokens is not None:
        PROJECTION_TOKENS.observe(packed.used_tokens)
    summaries = len(packed.summaries())
    raws = len(packed.placed) - summaries
    if summaries:
        PROJECTION_BLOCKS.labels(kind=SUMMARY).inc(summaries)
    if raws:
        PROJECTION_BLOCKS.labels(kind=RAW).inc(raws)
    for (as_, reason), n in packed.counts().items():
        PROJECTION_PAIRS.labels(form=as_, reason=reason or "none").inc(n)
        if as_ == OMITTED:
            PROJECTION_OMISSIONS.labels(reason=reason).inc(n)
        elif as_ == RAW and reason is not None:
            PROJECTION_FALLBACKS.labels(reason=reason).inc(n)

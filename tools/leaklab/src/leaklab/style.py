"""One look for every plot in the course: a colour per variant name, a title per series.

Plots are drawn by `leaklab compare`, by the notebooks and by the slide builder; all
three call these two functions, so "fixed" is the same green on every figure a learner
sees, whatever order the runs were loaded in, and a panel says "live heap (Go), MB"
rather than a series id.
"""

from __future__ import annotations

# Broken is always red and fixed always green; intermediate stages sit between them in
# warm-to-cool order; another implementation (lab 05's Tokio) is blue; a learner's own
# tree is purple. Anything else (a grading patch, a named capture) gets a neutral grey.
VARIANT_COLOURS: dict[str, str] = {
    "broken": "#d62728",
    "stage-1": "#ff7f0e",
    "stage-2": "#bcbd22",
    "stage-3": "#8c564b",
    "fixed": "#2ca02c",
    "tokio": "#1f77b4",
    "mine": "#9467bd",
}
OTHER_COLOUR = "#7f7f7f"

# Series ids as the datasets store them, in words a reader understands. The unit is
# added by `series_title` from the id's suffix.
SERIES_LABELS: dict[str, str] = {
    "rss_bytes": "resident set size (RSS) of the service",
    "load_rss_bytes": "RSS of the load program",
    "broker_rss_bytes": "RSS of the fake broker",
    "go_heap_live_bytes": "Go live heap (after the last GC)",
    "go_heap_inuse_bytes": "Go heap in use",
    "go_heap_objects": "Go heap objects",
    "go_total_alloc_bytes": "Go bytes allocated since start",
    "go_num_gc": "Go garbage collections",
    "goroutines": "goroutines",
    "backend_docs": "documents stored by the backend",
    "rust_live_bytes": "Rust heap in use (stats_alloc)",
    "rust_allocated_bytes": "Rust bytes allocated since start",
    "beam_binary_bytes": "BEAM refc binary memory",
    "beam_processes_bytes": "BEAM process memory",
    "beam_total_bytes": "BEAM total memory",
    "jvm_heap_after_gc_bytes": "JVM heap after GC",
    "jvm_heap_used_bytes": "JVM heap used",
    "rust_deallocated_bytes": "Rust bytes freed since start",
    "channel_binary_bytes": "binary memory held by channel processes",
    "connection_binary_bytes": "binary memory held by connection processes",
    "channel_avg_bytes": "memory of the average channel process",
    "connection_avg_bytes": "memory of the average connection process",
    "jvm_heap_committed_bytes": "JVM heap committed",
    "jvm_pools_collection_usage_bytes": "JVM pools after collection",
    "jvm_gc_count": "JVM garbage collections",
    "live_heap_bytes": "live heap (JVM heap after GC, or Rust heap in use)",
    "allocated_bytes": "bytes allocated since start",
    "open_subscriptions": "open subscriptions",
}


def colour(variant: str) -> str:
    """The colour of a variant's line, bar or marker in every plot."""
    return VARIANT_COLOURS.get(variant, OTHER_COLOUR)


def series_title(series: str) -> str:
    """A panel title in words, with the unit the plot uses (bytes are drawn in MB)."""
    words = SERIES_LABELS.get(series, series.replace("_", " "))
    return f"{words}, MB" if series.endswith("_bytes") else words

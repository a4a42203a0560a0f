"""Okapi BM25 between diff hunks (queries) and test sources (documents).

Small enough to keep here; an inverted index keeps it linear in the postings actually hit.
"""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def tokens(text: str) -> list[str]:
    """Identifiers plus their snake_case parts: ``add_relu`` -> add_relu, add, relu."""
    out: list[str] = []
    for word in _WORD.findall(text):
        lower = word.lower()
        out.append(lower)
        parts = [p for p in lower.split("_") if len(p) > 1]
        if len(parts) > 1:
            out.extend(parts)
    return out


class BM25:
    def __init__(self, documents: dict[str, str], k1: float = 1.2, b: float = 0.75, max_df: float = 0.5) -> None:
        self.k1, self.b = k1, b
        self.lengths: dict[str, int] = {}
        self.postings: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for doc_id in sorted(documents):
            counts = Counter(tokens(documents[doc_id]))
            self.lengths[doc_id] = sum(counts.values())
            for term, count in counts.items():
                self.postings[term].append((doc_id, count))
        self.count = len(documents)
        self.average = (sum(self.lengths.values()) / self.count) if self.count else 0.0
        # terms in most documents (self, torch, assertEqual) carry no signal and cost the most
        self.idf = {term: math.log((self.count - len(p) + 0.5) / (len(p) + 0.5) + 1.0)
                    for term, p in self.postings.items() if len(p) <= max(1, max_df * self.count)}

    def scores(self, query: str) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for term in sorted(set(tokens(query))):  # fixed order: float sums identical in every process
            idf = self.idf.get(term)
            if idf is None:
                continue
            for doc_id, freq in self.postings[term]:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[doc_id] / (self.average or 1.0))
                out[doc_id] += idf * freq * (self.k1 + 1) / (freq + norm)
        return out

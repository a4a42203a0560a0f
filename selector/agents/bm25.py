"""Okapi BM25 between diff hunks (queries) and test sources (documents).

Small enough to keep here. Postings are numpy arrays so a query costs a few vector operations per
term: a real release diff asks ~10k hunks against ~13k tests.
"""
from __future__ import annotations

import functools
import math
import re
from collections import Counter, defaultdict

import numpy as np

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def tokens(text: str) -> list[str]:
    """Identifiers plus their snake_case parts: ``add_relu`` -> add_relu, add, relu."""
    out: list[str] = []
    for word in _WORD.findall(text):
        out.extend(_terms(word))
    return out


def term_counts(text: str) -> Counter:
    """``Counter(tokens(text))``, each distinct word split once (a test source repeats its words)."""
    counts: Counter = Counter()
    for word, times in Counter(_WORD.findall(text)).items():
        for term in _terms(word):
            counts[term] += times
    return counts


@functools.lru_cache(maxsize=1 << 16)
def _terms(word: str) -> tuple[str, ...]:
    lower = word.lower()
    parts = [p for p in lower.split("_") if len(p) > 1]
    return (lower, *parts) if len(parts) > 1 else (lower,)


class BM25:
    def __init__(self, documents: dict[str, str], k1: float = 1.2, b: float = 0.75, max_df: float = 0.5) -> None:
        self.k1, self.b = k1, b
        self.ids = sorted(documents)  # a document's position in every score vector
        lengths = np.zeros(len(self.ids))
        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for position, doc_id in enumerate(self.ids):
            counts = term_counts(documents[doc_id])
            lengths[position] = sum(counts.values())
            for term, count in counts.items():
                postings[term].append((position, count))
        self.count = len(self.ids)
        self.average = float(lengths.mean()) if self.count else 0.0
        norms = k1 * (1 - b + b * lengths / (self.average or 1.0))
        # terms in most documents (self, torch, assertEqual) carry no signal and cost the most
        self.postings: dict[str, tuple[float, np.ndarray, np.ndarray, np.ndarray]] = {}
        for term, hits in postings.items():
            if len(hits) > max(1, max_df * self.count):
                continue
            idf = math.log((self.count - len(hits) + 0.5) / (len(hits) + 0.5) + 1.0)
            positions = np.fromiter((p for p, _ in hits), dtype=np.int64, count=len(hits))
            freqs = np.fromiter((f for _, f in hits), dtype=np.float64, count=len(hits))
            self.postings[term] = (idf, positions, freqs, norms[positions])
        self._weights: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # per term asked: its documents' scores

    def _term(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(positions, score per position) of a term, computed on its first query (a release's
        5,700 hunks share most of their terms)."""
        found = self._weights.get(term)
        if found is None and term in self.postings:
            idf, positions, freqs, norms = self.postings[term]
            found = self._weights[term] = (positions, idf * freqs * (self.k1 + 1) / (freqs + norms))
        return found

    def score_vector(self, query: str) -> np.ndarray:
        """The query's score for every document, in ``self.ids`` order."""
        out = np.zeros(self.count)
        for term in sorted(term_counts(query)):  # fixed order: float sums identical in every process
            found = self._term(term)
            if found is not None:
                positions, weights = found
                out[positions] += weights  # a term hits a document once
        return out

    def scores(self, query: str) -> dict[str, float]:
        """The documents the query hits, with their scores."""
        vector = self.score_vector(query)
        return {self.ids[i]: float(vector[i]) for i in np.flatnonzero(vector)}

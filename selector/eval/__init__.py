"""Replay evaluation of the selector against ground-truth transitions (docs/eval.md)."""
from selector.eval.replay import EvalReport, evaluate
from selector.eval.truth import GroundTruth, Transition

__all__ = ["EvalReport", "GroundTruth", "Transition", "evaluate"]

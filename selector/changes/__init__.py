"""Stage 1 of the selector: change analysis of an upstream diff. See docs/upstream.md."""
from selector.changes.analyse import analyse
from selector.changes.classify import KINDS, classify
from selector.changes.report import ChangeReport, FileChange, IgnoredTest, RemovedTest

__all__ = ["KINDS", "ChangeReport", "FileChange", "IgnoredTest", "RemovedTest", "analyse", "classify"]

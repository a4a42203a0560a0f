"""Let ``import dashboard`` find the project's package rather than this directory.

tests/ is on sys.path (the root conftest lives there), so without the repository root ahead of it
``.venv/bin/pytest tests/dashboard`` would import tests/dashboard/ as a namespace package named
``dashboard``. (``python -m pytest`` puts the working directory first and is not affected.)
"""
import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

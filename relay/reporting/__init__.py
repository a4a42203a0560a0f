"""Reporting results back: CRCR callbacks and GitHub check runs, stored and retried."""

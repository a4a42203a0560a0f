"""What a run produced: storage of results, verdicts, and the junit/jsonl/testdefs-patch artifacts."""

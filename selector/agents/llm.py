"""Optional agent: an OpenAI-compatible chat-completions API with tool calls.

For each test the model gets the test id and the ids of the diff hunks most likely to
matter, and two tools: ``read_test_source`` and ``read_diff_hunk``. It answers with a JSON
verdict validated by ``LLMVerdict``. Verdicts are cached by (test id, hunk hashes, model).
A call and token budget bounds the cost. Any error, timeout, invalid answer or exhausted
budget selects the test (fail safe) and says so in the rationale.

Settings (environment, never the command line for the key): ``RELAY_LLM_URL`` (base URL
ending in /v1), ``RELAY_LLM_MODEL``, ``RELAY_LLM_API_KEY`` or ``RELAY_LLM_API_KEY_FILE``.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import requests
from pydantic import BaseModel, Field, ValidationError

from selector.agents.base import TriageTask, Verdict
from selector.agents.signals import bm25_similarity, gather
from selector.errors import SelectorError
from selector.hunks import Hunk

SYSTEM_PROMPT = (
    "You triage upstream PyTorch tests for an out-of-tree device called spyre. Given a test and the "
    "ids of diff hunks from an upstream change, decide whether the change can alter the test's outcome "
    "on spyre. Use the tools to read the test source and the hunks. Answer with only a JSON object: "
    '{"affected": true|false, "risk": number between 0 and 1, "rationale": "one sentence"}.'
)
TOOLS = [
    {"type": "function", "function": {
        "name": "read_test_source", "description": "Source code of an upstream test function at the new ref.",
        "parameters": {"type": "object", "properties": {"test_id": {"type": "string"}}, "required": ["test_id"]}}},
    {"type": "function", "function": {
        "name": "read_diff_hunk", "description": "One hunk of the upstream diff (removed lines -, added +).",
        "parameters": {"type": "object", "properties": {"hunk_id": {"type": "string"}}, "required": ["hunk_id"]}}},
]


class LLMVerdict(BaseModel):
    affected: bool
    risk: float = Field(ge=0.0, le=1.0)
    rationale: str = Field(min_length=1, max_length=2000)


class LLMUnavailable(Exception):
    """The API could not give a valid verdict (error, timeout, bad JSON, budget spent)."""


def _secret_from_env() -> str | None:
    if os.environ.get("RELAY_LLM_API_KEY"):
        return os.environ["RELAY_LLM_API_KEY"]
    path = os.environ.get("RELAY_LLM_API_KEY_FILE")
    return Path(path).read_text().strip() if path else None


class LLMAgent:
    name = "llm"

    def __init__(self, base_url: str | None = None, model: str | None = None, api_key: str | None = None,
                 max_calls: int = 200, max_tokens: int = 400_000, timeout: float = 30.0, max_rounds: int = 4,
                 hunks_per_test: int = 3, cache_dir: str | Path | None = None, **_options) -> None:
        self.base_url = (base_url or os.environ.get("RELAY_LLM_URL") or "").rstrip("/")
        if not self.base_url:
            raise SelectorError("the llm agent needs an API URL", hint="set RELAY_LLM_URL to an OpenAI-compatible base URL ending in /v1")
        self.model = model or os.environ.get("RELAY_LLM_MODEL") or "gpt-4o-mini"
        self.api_key = api_key or _secret_from_env()
        self.max_calls, self.max_tokens, self.timeout = max_calls, max_tokens, timeout
        self.max_rounds, self.hunks_per_test = max_rounds, hunks_per_test
        self.cache_path = Path(cache_dir) / "llm-verdicts.json" if cache_dir else None
        self.cache: dict[str, dict] = self._load_cache()
        self.calls = 0
        self.tokens = 0
        self.failures_in_a_row = 0
        self.max_failures_in_a_row = 3  # then stop asking: a dead API should not cost a timeout per test
        self.session = requests.Session()

    # -- cache -----------------------------------------------------------------------------
    def _load_cache(self) -> dict[str, dict]:
        if self.cache_path and self.cache_path.is_file():
            try:
                return json.loads(self.cache_path.read_text())
            except json.JSONDecodeError:
                return {}  # a damaged cache only costs calls
        return {}

    def _save_cache(self) -> None:
        if self.cache_path:
            self.cache_path.parent.mkdir(parents=True, exist_ok=True)
            self.cache_path.write_text(json.dumps(self.cache, sort_keys=True, indent=1))

    def cache_key(self, test_id: str, hunks: list[Hunk]) -> str:
        text = "\n".join([self.model, test_id] + sorted(h.digest for h in hunks))
        return hashlib.sha256(text.encode()).hexdigest()

    # -- API -------------------------------------------------------------------------------
    def _chat(self, messages: list[dict]) -> dict:
        if self.failures_in_a_row >= self.max_failures_in_a_row:
            raise LLMUnavailable(f"skipped after {self.failures_in_a_row} failed requests in a row")
        if self.calls >= self.max_calls:
            raise LLMUnavailable(f"call budget of {self.max_calls} spent")
        if self.tokens >= self.max_tokens:
            raise LLMUnavailable(f"token budget of {self.max_tokens} spent")
        self.calls += 1
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        try:
            response = self.session.post(f"{self.base_url}/chat/completions", headers=headers, timeout=self.timeout,
                                         json={"model": self.model, "messages": messages, "tools": TOOLS,
                                               "temperature": 0})
            response.raise_for_status()
            body = response.json()
        except requests.Timeout:
            raise LLMUnavailable(f"timed out after {self.timeout:g}s") from None
        except requests.RequestException as exc:
            raise LLMUnavailable(f"request failed: {exc.__class__.__name__} {getattr(exc.response, 'status_code', '')}".strip()) from None
        except ValueError:
            raise LLMUnavailable("response was not JSON") from None
        self.tokens += int((body.get("usage") or {}).get("total_tokens") or 0)
        try:
            return body["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise LLMUnavailable("response had no choices[0].message") from None

    def ask(self, test_id: str, hunks: list[Hunk], task: TriageTask) -> LLMVerdict:
        by_id = {h.hunk_id: h for h in hunks}
        messages: list[dict] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": json.dumps({"test_id": test_id, "hunk_ids": [h.hunk_id for h in hunks]})},
        ]
        for _ in range(self.max_rounds):
            message = self._chat(messages)
            calls = message.get("tool_calls") or []
            if not calls:
                return self._parse(message.get("content") or "")
            messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": calls})
            for call in calls:
                messages.append({"role": "tool", "tool_call_id": call.get("id"),
                                 "content": self._run_tool(call, task, by_id)})
        raise LLMUnavailable(f"no verdict after {self.max_rounds} rounds")

    @staticmethod
    def _parse(content: str) -> LLMVerdict:
        text = content.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
        try:
            return LLMVerdict.model_validate_json(text)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise LLMUnavailable(f"invalid verdict: {'.'.join(map(str, first['loc'])) or 'json'}: {first['msg']}") from None

    @staticmethod
    def _run_tool(call: dict, task: TriageTask, hunks: dict[str, Hunk]) -> str:
        function = call.get("function") or {}
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except json.JSONDecodeError:
            return "error: arguments are not JSON"
        if function.get("name") == "read_test_source":
            source = task.tests.get(arguments.get("test_id")) or task.pool.get(arguments.get("test_id"))
            return source.source if source else "error: unknown test id"
        if function.get("name") == "read_diff_hunk":
            hunk = hunks.get(arguments.get("hunk_id"))
            return f"{hunk.file} {hunk.header} {hunk.context}\n{hunk.text}" if hunk else "error: unknown hunk id"
        return f"error: unknown tool {function.get('name')!r}"

    # -- triage ----------------------------------------------------------------------------
    def _hunks_for(self, test_id: str, task: TriageTask) -> list[Hunk]:
        source = task.tests.get(test_id) or task.pool.get(test_id)
        if source is None or not task.hunks:
            return []
        # the test's own file first, then hunks defining what it references
        ranked = sorted(task.hunks, key=lambda h: (h.file != source.file, not source.references & h.symbols(),
                                                   h.hunk_id))
        return ranked[: self.hunks_per_test]

    def triage(self, task: TriageTask) -> list[Verdict]:
        live, added = gather(task, bm25_similarity)
        out: list[Verdict] = []
        for test_id, signals in sorted(live.items()) + sorted(added.items()):
            is_added = test_id in added
            local = signals.score()
            hunks = self._hunks_for(test_id, task)
            if not hunks:
                out.append(Verdict(test_id, local, f"llm: not asked (no source or hunk); {signals.rationale('BM25')}",
                                   added=is_added, evidence=signals.evidence()))
                continue
            key = self.cache_key(test_id, hunks)
            try:
                if key not in self.cache:
                    self.cache[key] = self.ask(test_id, hunks, task).model_dump()
                    self.failures_in_a_row = 0
                verdict = LLMVerdict.model_validate(self.cache[key])
            except LLMUnavailable as exc:
                self.failures_in_a_row += "budget" not in str(exc)
                out.append(Verdict(test_id, max(local, 0.5), f"llm unavailable ({exc}); selected to stay safe",
                                   added=is_added, evidence=signals.evidence()))
                continue
            score = round(0.7 * verdict.risk + 0.3 * local, 4)
            word = "affected" if verdict.affected else "not affected"
            out.append(Verdict(test_id, score, f"llm ({self.model}): {word}, risk {verdict.risk:.2f}: {verdict.rationale}",
                               select=verdict.affected, added=is_added and verdict.affected,
                               evidence=signals.evidence()))
        self._save_cache()
        return [v for v in out if not (v.added and not v.select)]

"""A local HTTP server speaking the OpenAI chat-completions API, for the llm agent's tests.

It plays a model that first calls ``read_test_source``, then ``read_diff_hunk``, then answers
with a JSON verdict: affected when the test source it was shown mentions ``add``. Modes
make it fail: ``error`` (HTTP 500), ``slow`` (answers after the client's timeout), ``garbage``
(a verdict that does not validate).
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FakeModel:
    def __init__(self) -> None:
        self.mode = "ok"
        self.requests: list[dict] = []
        self.delay = 2.0

    def reply(self, body: dict) -> tuple[int, dict]:
        self.requests.append(body)
        if self.mode == "error":
            return 500, {"error": {"message": "model overloaded", "type": "server_error"}}
        if self.mode == "slow":
            time.sleep(self.delay)
        messages = body["messages"]
        ask = json.loads(messages[1]["content"])
        tool_results = [m for m in messages if m["role"] == "tool"]
        if not tool_results:
            return 200, self._tool_call("read_test_source", {"test_id": ask["test_id"]}, 1)
        if len(tool_results) == 1:
            return 200, self._tool_call("read_diff_hunk", {"hunk_id": ask["hunk_ids"][0]}, 2)
        if self.mode == "garbage":
            return 200, self._answer('{"affected": "maybe", "risk": 7}')
        source = tool_results[0]["content"]
        affected = "add" in source
        verdict = {"affected": affected, "risk": 0.9 if affected else 0.1,
                   "rationale": "calls torch.add, which the hunk changes" if affected else "does not touch the change"}
        return 200, self._answer(json.dumps(verdict))

    @staticmethod
    def _tool_call(name: str, arguments: dict, number: int) -> dict:
        call = {"id": f"call_{number}", "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)}}
        return {"id": "chatcmpl-test", "object": "chat.completion", "model": "fake",
                "choices": [{"index": 0, "finish_reason": "tool_calls",
                             "message": {"role": "assistant", "content": None, "tool_calls": [call]}}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}

    @staticmethod
    def _answer(content: str) -> dict:
        return {"id": "chatcmpl-test", "object": "chat.completion", "model": "fake",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100}}


def serve(model: FakeModel) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path != "/v1/chat/completions":
                self.send_error(404)
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, payload = model.reply(body)
            data = json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"

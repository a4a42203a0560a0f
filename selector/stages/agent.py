"""Stage 3: agent triage. Scores and orders the live tests; may add tests stage 1 missed.

The stage, not the agent, enforces safety: a must-run test is never dropped, and no
test is dropped at all unless ``allow_agent_drop`` is set. Every verdict's rationale
becomes the test's reason.
"""
from __future__ import annotations

from selector.agents.base import TriageTask
from selector.agents.registry import get_agent
from selector.agents.sources import test_files
from selector.hunks import grouped
from selector.model import Candidate
from selector.stages.base import SelectContext
from testdefs.ids import parse


def build_task(ctx: SelectContext) -> TriageTask:
    root = ctx.checkout_to()
    live = ctx.live()
    files = sorted({parse(test_id).file for test_id in live})
    hunks = grouped(ctx.hunks())  # stage 1's diff of the two refs (not a second one), grouped as -U3 would
    scanned = set(files) | set(test_files(root))
    shared = ctx.sources()  # each file parsed once, for its tests and its definitions' spans
    shared.load(scanned | {h.file for h in hunks if h.file.endswith(".py")})
    sources = shared.tests(scanned)
    tests = {i: sources[i] for i in live if i in sources}
    shared.mark_enclosing(hunks)
    pool = {i: s for i, s in sources.items() if i not in ctx.decisions}
    return TriageTask(tests=tests, unknown=[i for i in live if i not in sources], must_run=set(ctx.must_run),
                      ops={i: list(ctx.candidates[i].ops) for i in live if i in ctx.candidates},
                      hunks=hunks, history=ctx.history, pool=pool)


class AgentStage:
    name = "agent"

    def run(self, ctx: SelectContext) -> None:
        agent = get_agent(ctx.agent, **ctx.agent_options)
        ctx.say(self.name, f"triage with the {agent.name} agent")
        task = build_task(ctx)
        verdicts = agent.triage(task)
        for verdict in sorted(verdicts, key=lambda v: v.test_id):
            current = ctx.decisions.get(verdict.test_id)
            if verdict.added:
                if current is not None:
                    continue  # already considered (and maybe dropped by a rule): rules win
                parsed = parse(verdict.test_id)
                ctx.candidates[verdict.test_id] = Candidate(
                    test_id=verdict.test_id, file=parsed.file, class_name=parsed.class_base, name=parsed.method_base,
                    change="source", reasons=list(verdict.evidence))
                ctx.select(verdict.test_id, self.name, f"Added by the agent: {verdict.rationale}.",
                           score=verdict.score, evidence=list(verdict.evidence))
                continue
            if current is None or not current.selected:
                continue
            droppable = ctx.allow_agent_drop and verdict.test_id not in ctx.must_run
            if not verdict.select and droppable:
                ctx.drop(verdict.test_id, self.name, f"Dropped by the agent: {verdict.rationale}.",
                         score=verdict.score, evidence=list(verdict.evidence))
                continue
            kept = "" if verdict.select else " (kept: must-run or agent drops disabled)"
            evidence = list(current.evidence) + [e for e in verdict.evidence if e not in current.evidence]
            ctx.select(verdict.test_id, self.name, f"{current.reason} Agent: {verdict.rationale}{kept}.",
                       score=verdict.score, evidence=evidence)
        ctx.funnel["triaged"] = len(ctx.live())
        ctx.say(self.name, f"{ctx.funnel['triaged']} triaged", len(verdicts), len(verdicts))

// The instructions a coding agent gets for a plan: the example plan.json they show is one the
// worker and the server take, a review among its tasks included (a review without its refs fails
// the whole plan).
import { expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { instructionsFor } from "../../src/worker/instructions";
import { Plan, type ClaimResult } from "../../src/protocol/requests";
import { parsePlan } from "../../src/modules/tasks/plan";

const claim = (kind: "task" | "review" | "plan") =>
  ({
    task: { id: "tsk_x", title: "Plan the orders", prompt: "Plan it.", kind, review: kind === "review" ? { base: "main", head: "feature/orders" } : null },
    project: { knowledge: "" },
  }) as unknown as ClaimResult;

test("a plan's instructions show a plan.json the worker and the server accept, with a review task and its refs", () => {
  const text = instructionsFor(claim("plan"));
  const example = text.match(/`(\{"tasks": .*\})`/)?.[1];
  expect(example).toBeDefined();
  const plan = JSON.parse(example!);
  expect(Value.Check(Plan, plan)).toBe(true);
  expect(parsePlan(plan).tasks.find((t) => t.kind === "review")?.review).toEqual({ base: "main", head: "feature/orders" });
  // An item may name its agent (else it takes the plan's): the example shows one, and it is kept.
  expect(parsePlan(plan).tasks.map((t) => t.agent)).toContain("codex");
  expect(text).toContain("`agent`");
  expect(text).toContain("a review needs `review`");
});

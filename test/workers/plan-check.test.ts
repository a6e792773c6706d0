// A plan is checked by one definition on both sides: the worker's readPlan (its agent's plan.json)
// refuses exactly the plans the server's parsePlan refuses, naming the same fields, so a plan the
// worker reports is never refused by the server, and a bad one fails with its fault named by the
// worker itself.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readPlan } from "../../src/worker/attempt";
import { parsePlan } from "../../src/modules/tasks/plan";
import { ApiError } from "../../src/server/errors";

const dir = mkdtempSync(join(tmpdir(), "ao-plan-check-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const item = { title: "step", prompt: "do it" };
const refs = { base: "main", head: "feature/x" };

/** Each plan, and the fields both sides name (none: both take it). */
const plans: [string, unknown, string[]][] = [
  ["a good plan", { tasks: [item, { ...item, kind: "review", review: refs, priority: "HIGH", agent: "codex" }] }, []],
  ["an empty plan", { tasks: [] }, []],
  ["a title an agent wrote over two lines", { tasks: [{ ...item, title: "Add\nthe cache" }] }, []],
  ["a prompt with a NUL", { tasks: [{ ...item, prompt: "do\u0000 it" }] }, []],
  ["not an object", "plan", ["(root)"]],
  ["no tasks", {}, ["tasks"]],
  ["tasks not a list", { tasks: { a: item } }, ["tasks"]],
  ["101 tasks", { tasks: Array.from({ length: 101 }, () => item) }, ["tasks"]],
  ["an item not an object", { tasks: [item, null] }, ["tasks.1"]],
  ["no title", { tasks: [{ prompt: "p" }] }, ["tasks.0.title"]],
  ["an empty title", { tasks: [{ ...item, title: "" }] }, ["tasks.0.title"]],
  ["a title of only spaces", { tasks: [{ ...item, title: "   " }] }, ["tasks.0.title"]],
  ["a title of only control characters and escapes", { tasks: [{ ...item, title: "\n\t\u001b[31m\u0007" }] }, ["tasks.0.title"]],
  ["a title of 201 characters", { tasks: [{ ...item, title: "x".repeat(201) }] }, ["tasks.0.title"]],
  ["a title of 201 characters as written, fewer once made one line", { tasks: [{ ...item, title: "  " + "x".repeat(199) }] }, ["tasks.0.title"]],
  ["no prompt", { tasks: [{ title: "t" }] }, ["tasks.0.prompt"]],
  ["a prompt of only spaces and line breaks", { tasks: [{ ...item, prompt: " \n " }] }, ["tasks.0.prompt"]],
  ["a prompt of only NULs", { tasks: [{ ...item, prompt: "\u0000\u0000" }] }, ["tasks.0.prompt"]],
  ["a prompt of 100001 characters", { tasks: [{ ...item, prompt: "x".repeat(100_001) }] }, ["tasks.0.prompt"]],
  ["an unknown priority", { tasks: [{ ...item, priority: "high" }] }, ["tasks.0.priority"]],
  ["an unknown kind", { tasks: [{ ...item, kind: "epic" }] }, ["tasks.0.kind"]],
  ["an unknown agent", { tasks: [{ ...item, agent: "gpt" }] }, ["tasks.0.agent"]],
  ["a review without refs", { tasks: [item, { ...item, kind: "review" }] }, ["tasks.1.review"]],
  ["refs on a task of kind task", { tasks: [{ ...item, kind: "task", review: refs }] }, ["tasks.0.review"]],
  ["refs on a task of no kind", { tasks: [{ ...item, review: refs }] }, ["tasks.0.review"]],
  ["refs null", { tasks: [{ ...item, review: null }] }, ["tasks.0.review"]],
  ["a head git would read as an option", { tasks: [{ ...item, kind: "review", review: { ...refs, head: "-x" } }] }, ["tasks.0.review.head"]],
  ["a base of only a space", { tasks: [{ ...item, kind: "review", review: { ...refs, base: " " } }] }, ["tasks.0.review.base"]],
  ["faults in two items", { tasks: [{ ...item, title: "" }, item, { ...item, agent: "gpt" }] }, ["tasks.0.title", "tasks.2.agent"]],
];

/** The fields the worker names: "field: message" pairs in its refusal, or none when it took the plan. */
function workerFields(plan: unknown): string[] {
  writeFileSync(join(dir, "plan.json"), JSON.stringify(plan));
  const read = readPlan(dir);
  if (typeof read !== "string") return [];
  return [...read.matchAll(/[(;] ?([\w.()]+): /g)].map((m) => m[1]!);
}

/** The fields the server names, without their plan. prefix, or none when it took the plan. */
function serverFields(plan: unknown): string[] {
  try {
    parsePlan(plan);
    return [];
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return (err.details as { field: string }[]).map((d) => (d.field === "plan" ? "(root)" : d.field.replace(/^plan\./, "")));
  }
}

for (const [name, plan, fields] of plans) {
  test(`${name}: ${fields.length ? `both refuse it, naming ${fields.join(", ")}` : "both take it"}`, () => {
    expect({ worker: workerFields(plan), server: serverFields(plan) }).toEqual({ worker: fields, server: fields });
  });
}

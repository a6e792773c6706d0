// The instructions a coding agent gets: the task, the project's knowledge, and what the kind of
// task asks for (a review's refs, a plan's output file).
import type { ClaimResult } from "../protocol/requests";

export function instructionsFor(claim: ClaimResult): string {
  const { task, project } = claim;
  const parts = [`# ${task.title}`, "", task.prompt];
  if (project.knowledge.trim()) parts.push("", "## About this project", "", project.knowledge.trim());
  if (task.kind === "review" && task.review) {
    parts.push(
      "",
      "## Review",
      "",
      `Review the changes of \`${task.review.head}\` against \`${task.review.base}\`. The checkout is at the head;`,
      "`git diff refs/ao/base...HEAD` shows the change. Do not push anything.",
    );
  }
  if (task.kind === "plan") {
    parts.push(
      "",
      "## Plan",
      "",
      "Do not change code. Propose the tasks that would carry this out and write them as JSON to",
      '`$AO_ARTIFACTS_DIR/plan.json`: `{"tasks": [{"title": "...", "prompt": "...", "priority": "MEDIUM", "kind": "task"}, {"title": "...", "prompt": "...", "kind": "review", "review": {"base": "main", "head": "feature/orders"}, "agent": "codex"}]}`',
      "(at most 100 tasks; priority LOW, MEDIUM, HIGH or URGENT; kind task, review or plan; both optional;",
      "a review needs `review` with the branch, tag or commit names it compares, `base` and `head`;",
      "`agent` claude, codex or exec is optional: without it a task runs with the agent this plan runs with).",
    );
  }
  return parts.join("\n");
}

// The project policy's pullRequests (issue 9): what happens to a task's pushed branch.
import { invalid } from "../../server/errors";

export const PULL_REQUEST_MODES = ["open", "draft", "off"] as const;
export type PullRequestMode = (typeof PULL_REQUEST_MODES)[number];

/** policy.pullRequests: "open" (default), "draft", or "off"; 400 naming the field otherwise. */
export function assertPullRequestsPolicy(policy: Record<string, unknown> | undefined) {
  const value = policy?.pullRequests;
  if (value === undefined) return;
  if (typeof value !== "string" || !(PULL_REQUEST_MODES as readonly string[]).includes(value)) {
    throw invalid("policy.pullRequests must be open, draft or off", [{ field: "policy.pullRequests", message: "one of open, draft, off (default open)" }]);
  }
}

export function pullRequestMode(policy: unknown): PullRequestMode {
  const value = (policy as { pullRequests?: unknown } | null)?.pullRequests;
  return value === "draft" || value === "off" ? value : "open";
}

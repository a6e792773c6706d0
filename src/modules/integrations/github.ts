// GitHub webhook deliveries (SPEC §9): ping, issues labeled, issue_comment created with the
// command, pull_request labeled (a review task). Everything else is of no interest.
import { afterCommand, DEFAULT_COMMAND, DEFAULT_LABEL, titleOf, field, ignored, joinPrompt, need, needRef, optionalText, sameLabel, TITLE_MAX, type Interpretation } from "./interpret";

export interface HookConfig {
  label?: string;
  command?: string;
}

/** A GitHub account that is an app or bot: its comments never create tasks (no loops). */
export function isGithubBot(user: unknown): boolean {
  const type = field(user, "type");
  const login = field(user, "login");
  return type === "Bot" || (typeof login === "string" && login.toLowerCase().endsWith("[bot]"));
}

export function interpretGithub(event: string | null, payload: unknown, config: HookConfig): Interpretation {
  const label = config.label ?? DEFAULT_LABEL;
  const command = config.command ?? DEFAULT_COMMAND;
  const action = field(payload, "action");
  switch (event) {
    case "ping":
      return { kind: "pong" };
    case "issues": {
      if (action !== "labeled") return ignored(`issues action ${String(action)} is of no interest`);
      const name = optionalText(payload, "label.name");
      if (!sameLabel(name, label)) return ignored(`label "${name}" is not "${label}"`);
      const url = need(payload, "issue.html_url");
      return {
        kind: "task",
        task: {
          title: titleOf(need(payload, "issue.title"), TITLE_MAX),
          prompt: joinPrompt(need(payload, "issue.title"), optionalText(payload, "issue.body"), `GitHub issue: ${url}`),
          item: { type: "github_issue", id: need(payload, "issue.id"), url, number: Number(field(payload, "issue.number")) },
          itemKeys: [`github:issue:${need(payload, "issue.id")}`],
        },
      };
    }
    case "issue_comment": {
      if (action !== "created") return ignored(`issue_comment action ${String(action)} is of no interest`);
      if (isGithubBot(field(payload, "comment.user"))) return ignored("the comment's author is a bot");
      const request = afterCommand(optionalText(payload, "comment.body"), command);
      if (request === null) return ignored(`the comment does not start with ${command}`);
      const issueUrl = need(payload, "issue.html_url");
      const commentUrl = optionalText(payload, "comment.html_url") || issueUrl;
      const login = optionalText(payload, "comment.user.login");
      const issueTitle = need(payload, "issue.title");
      return {
        kind: "task",
        task: {
          title: titleOf(request ? request.split("\n")[0] : issueTitle, TITLE_MAX),
          prompt: joinPrompt(
            request || `Work on: ${issueTitle}`,
            `Requested by @${login} in ${commentUrl}`,
            `${field(payload, "issue.pull_request") ? "Pull request" : "Issue"}: ${issueTitle}`,
            optionalText(payload, "issue.body"),
          ),
          item: { type: "github_comment", id: need(payload, "comment.id"), url: commentUrl },
          itemKeys: [`github:comment:${need(payload, "comment.id")}`],
        },
      };
    }
    case "pull_request": {
      if (action !== "labeled") return ignored(`pull_request action ${String(action)} is of no interest`);
      const name = optionalText(payload, "label.name");
      if (!sameLabel(name, label)) return ignored(`label "${name}" is not "${label}"`);
      const url = need(payload, "pull_request.html_url");
      const title = need(payload, "pull_request.title");
      return {
        kind: "task",
        task: {
          title: titleOf(`Review: ${title}`, TITLE_MAX),
          prompt: joinPrompt(`Review the pull request "${title}".`, optionalText(payload, "pull_request.body"), `GitHub pull request: ${url}`),
          kind: "review",
          review: { base: needRef(payload, "pull_request.base.ref"), head: needRef(payload, "pull_request.head.ref") },
          item: { type: "github_pull_request", id: need(payload, "pull_request.id"), url, number: Number(field(payload, "pull_request.number")) },
          itemKeys: [`github:pr:${need(payload, "pull_request.id")}`],
        },
      };
    }
    case null:
      return ignored("the delivery has no X-GitHub-Event header");
    default:
      return ignored(`event ${event} is of no interest`);
  }
}

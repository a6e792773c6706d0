// GitLab webhook deliveries (SPEC §9), by X-Gitlab-Event: Issue Hook (the label added), Note Hook
// (a new comment starting with the command), Merge Request Hook (the label added: a review task).
import { afterCommand, titleOf, DEFAULT_COMMAND, DEFAULT_LABEL, field, ignored, joinPrompt, need, needRef, optionalText, sameLabel, TITLE_MAX, type Interpretation } from "./interpret";
import type { HookConfig } from "./github";

function labelTitles(list: unknown): string[] {
  if (!Array.isArray(list)) return [];
  return list.map((l) => (typeof l === "string" ? l : field(l, "title"))).filter((t): t is string => typeof t === "string");
}

/**
 * Was the label just put on the issue or merge request? Yes when `changes.labels` shows it added,
 * or when the item was opened with it.
 */
function labelAdded(payload: unknown, label: string): boolean {
  const has = (titles: string[]) => titles.some((t) => sameLabel(t, label));
  const change = field(payload, "changes.labels");
  if (change && typeof change === "object") {
    return has(labelTitles(field(change, "current"))) && !has(labelTitles(field(change, "previous")));
  }
  const current = labelTitles(field(payload, "labels")).concat(labelTitles(field(payload, "object_attributes.labels")));
  return field(payload, "object_attributes.action") === "open" && has(current);
}

/**
 * GitLab bots: project, group and service-account token users (`project_12_bot_…`,
 * `group_3_bot_…`, `service_account_…`), GitLab's own bots (`…-bot`), and system notes.
 */
export function isGitlabBot(user: unknown): boolean {
  if (field(user, "bot") === true) return true;
  const username = field(user, "username");
  if (typeof username !== "string") return false;
  const u = username.toLowerCase();
  return /^(project|group)_\d+_bot(_|$)/.test(u) || u.startsWith("service_account_") || u.endsWith("-bot") || u.endsWith("[bot]");
}

export function interpretGitlab(event: string | null, payload: unknown, config: HookConfig): Interpretation {
  const label = config.label ?? DEFAULT_LABEL;
  const command = config.command ?? DEFAULT_COMMAND;
  const kind = event?.replace(/^Confidential /, "") ?? null;
  switch (kind) {
    case "Issue Hook": {
      if (!labelAdded(payload, label)) return ignored(`the label "${label}" was not added`);
      const url = need(payload, "object_attributes.url");
      const title = need(payload, "object_attributes.title");
      return {
        kind: "task",
        task: {
          title: titleOf(title, TITLE_MAX),
          prompt: joinPrompt(title, optionalText(payload, "object_attributes.description"), `GitLab issue: ${url}`),
          item: { type: "gitlab_issue", id: need(payload, "object_attributes.id"), url, number: Number(field(payload, "object_attributes.iid")) },
          itemKeys: [`gitlab:issue:${need(payload, "object_attributes.id")}`],
        },
      };
    }
    case "Note Hook": {
      const action = field(payload, "object_attributes.action");
      // Payloads before GitLab 16.11 have no action: they were sent for new comments only.
      if (action !== undefined && action !== "create") return ignored(`note action ${String(action)} is of no interest`);
      if (field(payload, "object_attributes.system") === true) return ignored("system notes are of no interest");
      if (isGitlabBot(field(payload, "user"))) return ignored("the comment's author is a bot");
      const request = afterCommand(optionalText(payload, "object_attributes.note"), command);
      if (request === null) return ignored(`the comment does not start with ${command}`);
      const url = need(payload, "object_attributes.url");
      const on = optionalText(payload, "object_attributes.noteable_type");
      const subject = optionalText(payload, "issue.title") || optionalText(payload, "merge_request.title") || optionalText(payload, "snippet.title");
      return {
        kind: "task",
        task: {
          title: titleOf(request ? request.split("\n")[0] : `Work on: ${subject || url}`, TITLE_MAX),
          prompt: joinPrompt(
            request || `Work on: ${subject || url}`,
            `Requested by @${optionalText(payload, "user.username")} in ${url}`,
            subject ? `${on}: ${subject}` : null,
            optionalText(payload, "issue.description") || optionalText(payload, "merge_request.description"),
          ),
          item: { type: "gitlab_note", id: need(payload, "object_attributes.id"), url },
          itemKeys: [`gitlab:note:${need(payload, "object_attributes.id")}`],
        },
      };
    }
    case "Merge Request Hook": {
      if (!labelAdded(payload, label)) return ignored(`the label "${label}" was not added`);
      const url = need(payload, "object_attributes.url");
      const title = need(payload, "object_attributes.title");
      return {
        kind: "task",
        task: {
          title: titleOf(`Review: ${title}`, TITLE_MAX),
          prompt: joinPrompt(`Review the merge request "${title}".`, optionalText(payload, "object_attributes.description"), `GitLab merge request: ${url}`),
          kind: "review",
          review: { base: needRef(payload, "object_attributes.target_branch"), head: needRef(payload, "object_attributes.source_branch") },
          item: { type: "gitlab_merge_request", id: need(payload, "object_attributes.id"), url, number: Number(field(payload, "object_attributes.iid")) },
          itemKeys: [`gitlab:mr:${need(payload, "object_attributes.id")}`],
        },
      };
    }
    case null:
      return ignored("the delivery has no X-Gitlab-Event header");
    default:
      return ignored(`event ${event} is of no interest`);
  }
}

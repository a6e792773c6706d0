// `ao task create|list|show|events|apply-plan|<action>`.
import { readFileSync } from "node:fs";
import { flag, oneOf, parse, positiveInt, required, str, type Parsed } from "../args";
import { connect, type Context } from "../context";
import { CliError, EXIT, UsageError } from "../errors";
import { followTask } from "../follow";
import { attentionHint, printable, proposedText, taskDetails, taskRows, timelineLine } from "../format";
import { printHelp, printJson, run } from "../run";
import { ACTIONS, AGENT_NAMES, KINDS, NEEDS_ATTENTION, PRIORITIES, TASK_STATUSES, TERMINAL, type Page, type Task, type TaskEvent } from "../types";

const ORG = { org: { type: "string" } } as const;

export function task(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (!sub || sub === "--help" || sub === "-h" || sub === "help") {
    printHelp("task");
    return Promise.resolve(sub ? EXIT.ok : EXIT.usage);
  }
  // Each action has its help under its own name (`ao help task input`).
  return run(`task ${sub}`, async () => {
    switch (sub) {
      case "create":
        return create(rest);
      case "list":
        return list(rest);
      case "show":
        return show(rest);
      case "events":
        return events(rest);
      case "apply-plan":
        return applyPlan(rest);
      default:
        if ((ACTIONS as readonly string[]).includes(sub)) return action(sub, rest);
        throw new UsageError(`unknown command 'task ${sub}'; run \`ao help task\``);
    }
  });
}

const taskPath = (ctx: Context, id: string) => `/orgs/${encodeURIComponent(ctx.orgId)}/tasks/${encodeURIComponent(id)}`;

function taskId(p: Parsed): string {
  const id = p.positionals[0];
  if (!id) throw new UsageError("the task ID is required");
  return id;
}

/** A project id as is; anything else is looked up by name among the org's projects. */
/** A project's id from its id or name: a live project's name first, else an archived one's (its tasks stay listed). */
async function projectId(ctx: Context, value: string): Promise<string> {
  if (value.startsWith("prj_")) return value;
  const names: string[] = [];
  for (const archived of [false, true]) {
    let cursor: string | undefined;
    do {
      const page = await ctx.client.request<Page<{ id: string; name: string }>>("GET", `/orgs/${encodeURIComponent(ctx.orgId)}/projects`, {
        query: { limit: 200, cursor, ...(archived ? { archived: "true" } : {}) },
      });
      const hit = page.items.find((p) => p.name === value) ?? page.items.find((p) => p.name.toLowerCase() === value.toLowerCase());
      if (hit) return hit.id;
      if (!archived) names.push(...page.items.map((p) => p.name));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }
  throw new CliError(`no project named '${value}' (projects: ${names.join(", ") || "none"})`);
}

function readPrompt(p: Parsed): string {
  const text = str(p, "prompt");
  const file = str(p, "prompt-file");
  if (text !== undefined && file !== undefined) throw new UsageError("give --prompt or --prompt-file, not both");
  if (file !== undefined) {
    try {
      return readFileSync(file === "-" ? 0 : file, "utf8");
    } catch (err) {
      throw new CliError(`cannot read --prompt-file ${file}: ${(err as Error).message}`);
    }
  }
  if (text === undefined || text === "") throw new UsageError("--prompt or --prompt-file is required");
  return text;
}

async function create(args: string[]): Promise<number | void> {
  const p = parse(args, {
    ...ORG,
    project: { type: "string" },
    title: { type: "string" },
    prompt: { type: "string" },
    "prompt-file": { type: "string" },
    priority: { type: "string" },
    kind: { type: "string" },
    base: { type: "string" },
    head: { type: "string" },
    agent: { type: "string" },
    wait: { type: "boolean" },
    json: { type: "boolean" },
  });
  if (flag(p, "help")) return printHelp("task create");
  const project = required(p, "project");
  const title = required(p, "title");
  const prompt = readPrompt(p);
  const priority = oneOf("priority", str(p, "priority"), PRIORITIES, (v) => v.toUpperCase());
  const kind = oneOf("kind", str(p, "kind"), KINDS, (v) => v.toLowerCase());
  const agent = oneOf("agent", str(p, "agent"), AGENT_NAMES, (v) => v.toLowerCase());
  const base = str(p, "base");
  const head = str(p, "head");
  if (kind === "review" && (!base || !head)) throw new UsageError("--kind review needs --base and --head");
  if (kind !== "review" && (base !== undefined || head !== undefined)) throw new UsageError("--base and --head go with --kind review");

  const ctx = await connect(str(p, "org"));
  const body = {
    projectId: await projectId(ctx, project),
    title,
    prompt,
    ...(priority ? { priority } : {}),
    ...(kind ? { kind } : {}),
    ...(kind === "review" ? { review: { base, head } } : {}),
    ...(agent ? { agent } : {}),
  };
  const created = await ctx.client.request<Task>("POST", `/orgs/${encodeURIComponent(ctx.orgId)}/tasks`, { body });
  if (!flag(p, "wait")) {
    if (flag(p, "json")) printJson(created);
    else console.log(`Created task ${created.id} (${created.status}): ${printable(created.title)}`);
    return;
  }
  if (!flag(p, "json")) console.log(`Created task ${created.id}: ${printable(created.title)}`);
  return wait(ctx, created.id, flag(p, "json"));
}

/** Follows the task until it is over or needs a person; the exit code says which. */
async function wait(ctx: Context, id: string, json: boolean): Promise<number> {
  const final = await followTask({
    client: ctx.client,
    orgId: ctx.orgId,
    taskId: id,
    onEvent: (e) => {
      if (!json) console.log(timelineLine(e));
    },
    done: (t) => TERMINAL.has(t.status) || NEEDS_ATTENTION.has(t.status),
  });
  if (json) printJson(final);
  else if (NEEDS_ATTENTION.has(final.status)) console.log(attentionHint(final));
  else console.log(printable(`task ${final.id} ${final.status}${final.summary ? `: ${final.summary}` : ""}${proposedText(final)}`));
  if (final.status === "completed") return EXIT.ok;
  return NEEDS_ATTENTION.has(final.status) ? EXIT.attention : EXIT.failed;
}

async function list(args: string[]): Promise<number | void> {
  const p = parse(args, {
    ...ORG,
    status: { type: "string" },
    project: { type: "string" },
    kind: { type: "string" },
    parent: { type: "string" },
    limit: { type: "string" },
    json: { type: "boolean" },
  });
  if (flag(p, "help")) return printHelp("task list");
  const status = oneOf("status", str(p, "status"), TASK_STATUSES, (v) => v.toLowerCase());
  const kind = oneOf("kind", str(p, "kind"), KINDS, (v) => v.toLowerCase());
  const limit = positiveInt("limit", str(p, "limit")) ?? 50;
  const ctx = await connect(str(p, "org"));
  const project = str(p, "project");
  const query = { status, kind, parentId: str(p, "parent"), projectId: project === undefined ? undefined : await projectId(ctx, project) };
  const tasks: Task[] = [];
  let cursor: string | undefined;
  do {
    const page = await ctx.client.request<Page<Task>>("GET", `/orgs/${encodeURIComponent(ctx.orgId)}/tasks`, {
      query: { ...query, limit: Math.min(200, limit - tasks.length), cursor },
    });
    tasks.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && tasks.length < limit);
  if (flag(p, "json")) printJson(tasks);
  else if (tasks.length === 0) console.log("No tasks.");
  else console.log(taskRows(tasks));
}

async function show(args: string[]): Promise<number | void> {
  const p = parse(args, { ...ORG, json: { type: "boolean" } }, 1);
  if (flag(p, "help")) return printHelp("task show");
  const id = taskId(p);
  const ctx = await connect(str(p, "org"));
  const t = await ctx.client.request<Task>("GET", taskPath(ctx, id));
  if (flag(p, "json")) printJson(t);
  else console.log(taskDetails(t));
}

async function events(args: string[]): Promise<number | void> {
  const p = parse(args, { ...ORG, follow: { type: "boolean", short: "f" }, after: { type: "string" }, json: { type: "boolean" } }, 1);
  if (flag(p, "help")) return printHelp("task events");
  const id = taskId(p);
  const after = str(p, "after") === "0" ? 0 : (positiveInt("after", str(p, "after")) ?? 0);
  const json = flag(p, "json");
  const ctx = await connect(str(p, "org"));
  if (flag(p, "follow")) {
    await followTask({
      client: ctx.client,
      orgId: ctx.orgId,
      taskId: id,
      afterSeq: after,
      onEvent: (e) => console.log(json ? JSON.stringify(e) : timelineLine(e)),
      done: (t) => TERMINAL.has(t.status),
    });
    return;
  }
  const all: TaskEvent[] = [];
  let cursor: string | undefined;
  do {
    const query = cursor ? { cursor, limit: 200 } : { after, limit: 200 };
    const page = await ctx.client.request<Page<TaskEvent>>("GET", `${taskPath(ctx, id)}/events`, { query });
    all.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  if (json) printJson(all);
  else for (const e of all) console.log(timelineLine(e));
}

/** Creates the tasks a completed plan proposes (the server does it once: again, the same tasks). */
async function applyPlan(args: string[]): Promise<number | void> {
  const p = parse(args, { ...ORG, json: { type: "boolean" } }, 1);
  if (flag(p, "help")) return printHelp("task apply-plan");
  const id = taskId(p);
  const ctx = await connect(str(p, "org"));
  const { tasks } = await ctx.client.request<{ tasks: Task[] }>("POST", `${taskPath(ctx, id)}/apply-plan`);
  if (flag(p, "json")) printJson(tasks);
  else console.log(`plan ${id}: ${tasks.length} task${tasks.length === 1 ? "" : "s"}${tasks.length ? `\n${taskRows(tasks)}` : ""}`);
}

async function action(name: string, args: string[]): Promise<number | void> {
  const p = parse(args, { ...ORG, reason: { type: "string" }, input: { type: "string" }, json: { type: "boolean" } }, 1);
  if (flag(p, "help")) return printHelp("task action");
  const id = taskId(p);
  const input = str(p, "input");
  const reason = str(p, "reason");
  // Blank text is refused by the server too: say so before a request.
  if (name === "input" && !input?.trim()) throw new UsageError("'ao task input' needs --input TEXT");
  if (name !== "input" && input !== undefined) throw new UsageError("--input goes with 'ao task input'");
  // Characters, as the server counts them (an emoji is one, not two UTF-16 units).
  if (reason !== undefined && [...reason].length > 2000) throw new UsageError("--reason is at most 2,000 characters");
  const ctx = await connect(str(p, "org"));
  const answer = await ctx.client.request<Task | { task: Task }>("POST", `${taskPath(ctx, id)}/actions`, {
    body: { action: name, ...(input !== undefined ? { input } : {}), ...(reason !== undefined ? { reason } : {}) },
  });
  const t = "task" in answer && answer.task ? answer.task : (answer as Task);
  if (flag(p, "json")) printJson(t);
  else console.log(`${name}: task ${t.id ?? id} is now ${t.status ?? "updated"}`);
}

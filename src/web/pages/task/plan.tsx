// A plan's proposed tasks, Apply plan once it completed, and the tasks it made.
import { useSignal } from "@preact/signals";
import { Fragment } from "preact";
import { useEffect } from "preact/hooks";
import { api } from "../../app/api";
import { canWrite } from "../../app/session";
import type { Org, Page, Task } from "../../app/types";
import { useBusy, useFollow } from "../../components/hooks";
import { ErrorText, StatusBadge } from "../../components/ui";
import { truncate } from "./model";

/** `onMade` hears how many tasks the plan has made, whenever that changes. */
export function Plan({ task, org, path, onMade }: { task: Task; org: Org; path: string; onMade?: (count: number) => void }) {
  const children = useSignal<Task[] | null>(null);
  const error = useSignal<unknown>(null);
  const [busy, run] = useBusy();
  const load = () =>
    api<Page<Task>>("GET", `/orgs/${encodeURIComponent(org.id)}/tasks?parentId=${encodeURIComponent(task.id)}&limit=200`).then((p) => {
      // Newest first from the API; the plan's own order is the order they were made in. A record the
      // socket brought while this was read is newer than the answer's and stays.
      const shown = new Map((children.value ?? []).map((c) => [c.id, c]));
      children.value = [...p.items].reverse().map((c) => {
        const heard = shown.get(c.id);
        return heard && heard.updatedAt > c.updatedAt ? heard : c;
      });
    }, (err) => (error.value = err));
  useEffect(() => {
    if (task.kind === "plan") void load();
  }, [task.id]);
  // The tasks it made change status as they run: each newer record replaces its row (the org's
  // subscription, which the shell holds anyway); after a reconnect they are read again. One new
  // here was made by an apply elsewhere (the command line, another tab): it joins the list, in the
  // plan's order (ids are time-sortable and a plan's tasks are made in its order).
  useFollow(task.kind === "plan" ? org.id : null, null, {
    subscribed: () => void (children.value && load()),
    task: (t) => {
      const list = children.value;
      if (t.parentId !== task.id || !list) return;
      const i = list.findIndex((c) => c.id === t.id);
      if (i < 0) children.value = [...list, t].sort((a, b) => (a.id < b.id ? -1 : 1));
      else if (list[i]!.updatedAt <= t.updatedAt) children.value = list.map((c, j) => (j === i ? t : c));
    },
  });
  const madeCount = children.value?.length ?? 0;
  useEffect(() => onMade?.(madeCount), [madeCount]);
  const proposed = task.kind === "plan" && task.plan && Array.isArray(task.plan.tasks) ? task.plan.tasks : null;
  const made = children.value ?? [];
  if (!proposed && made.length === 0) return null;
  const apply = () =>
    run(async () => {
      error.value = null;
      try {
        const answer = await api<{ tasks: Task[] }>("POST", `${path}/apply-plan`);
        children.value = answer.tasks;
      } catch (err) {
        error.value = err;
      }
    });
  return (
    <div id="plan-card" class="card">
      <h2 class="first">Plan</h2>
      {proposed ? (
        <>
          <p class="muted">The tasks this plan proposes:</p>
          <ol id="plan-tasks" class="plan">
            {proposed.map((p, i) => {
              const item = (p && typeof p === "object" ? p : {}) as Record<string, unknown>;
              return (
                <li key={i}>
                  <strong>{typeof item.title === "string" ? item.title : "(untitled)"}</strong>
                  {badges(item).map((x) => (
                    <Fragment key={x}>
                      {" "}
                      <span class="badge">{x}</span>
                    </Fragment>
                  ))}
                  {typeof item.prompt === "string" ? <p class="muted pre">{truncate(item.prompt, 300)}</p> : null}
                </li>
              );
            })}
          </ol>
        </>
      ) : null}
      <ErrorText id="plan-error" error={error.value} />
      {proposed && task.status === "completed" && made.length === 0 && canWrite(org.role) ? (
        <div class="actions" id="plan-actions">
          <button type="button" id="plan-apply" class="primary" disabled={busy.value} onClick={() => void apply()}>
            Apply plan
          </button>
        </div>
      ) : null}
      {made.length > 0 ? (
        <div id="plan-children-group">
          <h2>Created tasks</h2>
          <ul id="plan-children" class="links">
            {made.map((c) => (
              <li key={c.id}>
                <a href={`/tasks/${encodeURIComponent(c.id)}`}>{c.title}</a> <StatusBadge status={c.status} />
              </li>
            ))}
          </ul>
        </div>
      ) : null}
    </div>
  );
}

/** What a proposal would be: its priority, its kind and, for a review, the range it reviews; the agent it names. */
function badges(item: Record<string, unknown>): string[] {
  const review = item.review as { base?: unknown; head?: unknown } | undefined;
  const kind = item.kind === "review" && review && typeof review.base === "string" && typeof review.head === "string" ? `review ${review.base} → ${review.head}` : item.kind;
  return [item.priority, kind, item.agent].filter((x): x is string => typeof x === "string");
}

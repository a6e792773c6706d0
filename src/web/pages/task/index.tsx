// "/tasks/:taskId": one task (SPEC §5, §11), the page the callbacks' `url` links to. The address
// has no organization, so the task is looked for in the person's organizations (the one in use
// first); then the page shows it and follows it live: the task's record, and its timeline as a
// transcript, catching up on missed events after each (re)subscription.
import "./task.css";
import { useSignal } from "@preact/signals";
import { useEffect, useRef } from "preact/hooks";
import { api } from "../../app/api";
import type { PageProps } from "../../app/routes";
import { canWrite, user } from "../../app/session";
import type { Org, Page as ApiPage, Task, TaskEvent } from "../../app/types";
import { useFollow } from "../../components/hooks";
import { costText } from "../../../lib/money";
import { Time } from "../../components/Time";
import { ErrorText, LiveLine, Page, Skeleton, StatusBadge } from "../../components/ui";
import { Actions, type Withheld } from "./actions";
import { Artifacts } from "./artifacts";
import { Changes } from "./diff";
import { useTaskInMyOrgs } from "./find";
import { Plan } from "./plan";
import { Transcript } from "./transcript";
import { duration, TERMINAL, tokens, who } from "./model";

/** The server refuses to run an applied plan again (its next run would propose other tasks). */
const APPLIED_PLAN = { actions: ["restart", "retry"], why: "Its tasks were created, so this plan does not run again: make a new plan instead." } as const satisfies Withheld;

export function TaskPage({ params }: PageProps) {
  const taskId = params.taskId ?? "";
  const { found, error } = useTaskInMyOrgs(taskId);
  if (found.value === undefined) {
    return (
      <Page title="Task" id="task-loading">
        <Skeleton lines={6} />
      </Page>
    );
  }
  if (found.value === null) {
    return (
      <Page title="Task not found" id="missing">
        <div class="card">
          <p id="missing-text">There is no such task, or it is not in one of your organizations.</p>
          <ErrorText id="missing-error" error={error.value} />
          <p>
            <a href="/tasks">All tasks</a>
          </p>
        </div>
      </Page>
    );
  }
  return <TaskView key={taskId} org={found.value.org} initial={found.value.task} />;
}

function TaskView({ org, initial }: { org: Org; initial: Task }) {
  const task = useSignal(initial);
  const events = useSignal<TaskEvent[]>([]);
  const timelineError = useSignal<unknown>(null);
  const projectName = useSignal<string | null>(null);
  const pending = useSignal<string | null>(null);
  /** A plan whose tasks were made: the server refuses to run it again. */
  const planApplied = useSignal(false);
  const path = `/orgs/${encodeURIComponent(org.id)}/tasks/${encodeURIComponent(initial.id)}`;
  const lastSeq = useRef(0);
  /** Timeline work (fetches and live events) runs one piece at a time, so entries stay in order. */
  const queue = useRef<Promise<void>>(Promise.resolve());
  const t = task.value;

  /** A newer record of the task (an answer, a fetch or the socket); older ones are ignored. */
  const apply = (next: Task) => {
    if (next.id !== task.value.id || next.updatedAt < task.value.updatedAt) return;
    task.value = next;
  };
  const serial = (work: () => Promise<void> | void) => {
    queue.current = queue.current
      .then(work)
      .then(() => void (timelineError.value = null))
      .catch((err) => void (timelineError.value = err));
  };
  const append = (list: TaskEvent[]) => {
    const fresh = list.filter((e) => e.seq > lastSeq.current);
    if (fresh.length === 0) return;
    lastSeq.current = fresh.at(-1)!.seq;
    events.value = [...events.value, ...fresh];
  };
  /** Every event after the last one shown, page by page. */
  const fetchEvents = async () => {
    for (;;) {
      const page = await api<ApiPage<TaskEvent>>("GET", `${path}/events?after=${lastSeq.current}&limit=200`);
      append(page.items);
      if (!page.nextCursor || page.items.length === 0) return;
    }
  };
  useEffect(() => {
    document.title = `${t.title} · ao`;
  }, [t.title]);
  useEffect(() => {
    serial(fetchEvents);
    api<{ name: string }>("GET", `/orgs/${encodeURIComponent(org.id)}/projects/${encodeURIComponent(initial.projectId)}`).then(
      (p) => (projectName.value = p.name),
      // The id stays shown: a project this page cannot read is no reason to fail the page.
      () => {},
    );
  }, []);
  const live = useFollow(org.id, initial.id, {
    subscribed: () =>
      serial(async () => {
        await fetchEvents();
        apply(await api<Task>("GET", path));
      }),
    task: apply,
    event: (taskId, e) => {
      if (taskId !== initial.id) return;
      serial(async () => {
        if (e.seq <= lastSeq.current) return;
        if (e.seq === lastSeq.current + 1) append([e]);
        // A gap: some were missed (a slow socket, say): fetch them in order.
        else await fetchEvents();
      });
    },
  });

  // Why a queued task waits changes with the workers and the project's policy: the server sends
  // the record again then. A daily budget that fills up or starts anew sends nothing: look again
  // every 15 s while it is queued.
  useEffect(() => {
    if (t.status !== "queued") return;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") api<Task>("GET", path).then(apply, () => {});
    }, 15_000);
    return () => clearInterval(timer);
  }, [t.status]);

  const waiting = t.status === "needs_input" || t.status === "needs_approval";
  const me = user.value;
  const by = t.createdBy.type === "user" && t.createdBy.id === me?.id ? "you" : who(t.createdBy);
  return (
    <Page
      title={t.title}
      id="task"
      heading={t.title}
      actions={<LiveLine state={live.value} />}
    >
      <p class="muted task-where">
        <a id="task-org" href={`/tasks?org=${encodeURIComponent(org.id)}`} title="The tasks of this organization">
          {org.name}
        </a>{" "}
        · <span id="task-project">{projectName.value ?? t.projectId}</span> · <code id="task-id">{t.id}</code>
      </p>
      <div class="task-grid">
        <div class="card task-head">
          <p class="status-line">
            <StatusBadge status={t.status}>
              <span id="task-status" data-status={t.status}>
                {pending.value ?? `${t.status}${t.attempt ? ` (attempt ${t.attempt})` : ""}`}
              </span>
            </StatusBadge>
          </p>
          <StatusDetail t={t} />
          {t.status === "queued" && t.waitingReason ? (
            <p id="task-waiting" class="waiting-reason">
              <strong>Waiting:</strong> {t.waitingReason}. <a href={`/workers?org=${encodeURIComponent(org.id)}`}>Workers</a>
            </p>
          ) : null}
          {t.status === "failed" && t.failureReason ? (
            <p id="task-failure" class="failure-reason pre">
              <strong>Failed:</strong> {t.failureReason}
            </p>
          ) : null}
          {t.needs ? (
            <div id="task-needs" class={`needs${waiting ? " attention" : ""}`}>
              <strong id="task-needs-kind">{waiting ? `Waiting for your ${t.needs.kind === "input" ? "input" : "approval"}:` : `Asked for ${t.needs.kind === "input" ? "input" : "approval"}:`}</strong>
              <p id="task-needs-message" class="pre">
                {t.needs.message}
              </p>
            </div>
          ) : null}
          {t.summary ? (
            <div id="task-summary-group">
              <h2>Summary</h2>
              <p id="task-summary" class="pre">
                {t.summary}
              </p>
            </div>
          ) : null}
        </div>
        <aside class="task-side">
          <Actions task={t} path={path} canAct={canWrite(org.role)} onTask={apply} pending={pending} withheld={planApplied.value ? APPLIED_PLAN : null} />
          <div class="card">
            <dl id="task-facts" class="facts">
              <dt>Kind</dt>
              <dd>{t.kind}</dd>
              <dt>Priority</dt>
              <dd>{t.priority}</dd>
              <dt>Project</dt>
              <dd>{projectName.value ?? t.projectId}</dd>
              {t.review ? (
                <>
                  <dt>Review</dt>
                  <dd>{`${t.review.base} → ${t.review.head}`}</dd>
                </>
              ) : null}
              <dt>Worker</dt>
              <dd>{t.worker?.name ?? t.workerId ?? "—"}</dd>
              {t.parentId ? (
                <>
                  <dt>Proposed by</dt>
                  <dd>
                    <a href={`/tasks/${encodeURIComponent(t.parentId)}`}>the plan</a>
                  </dd>
                </>
              ) : null}
              <dt>Created</dt>
              <dd>
                <Time iso={t.createdAt} /> by {by}
              </dd>
              <dt>Started</dt>
              <dd>{t.startedAt ? <Time iso={t.startedAt} /> : "—"}</dd>
              <dt>Finished</dt>
              <dd>{t.finishedAt ? <Time iso={t.finishedAt} /> : "—"}</dd>
              <dt>Updated</dt>
              <dd>
                <Time iso={t.updatedAt} />
              </dd>
              {t.usage ? (
                <>
                  <dt>Usage</dt>
                  <dd id="task-usage">
                    {`${tokens(t.usage.inputTokens)} in, ${tokens(t.usage.outputTokens)} out`}
                    {t.usage.cacheReadTokens || t.usage.cacheWriteTokens ? `, cache ${tokens(t.usage.cacheReadTokens)} read / ${tokens(t.usage.cacheWriteTokens)} written` : ""}
                    {t.usage.model ? ` · ${t.usage.model}` : ""}
                  </dd>
                  <dt>Cost</dt>
                  <dd id="task-cost">{costText(t.usage, TERMINAL.has(t.status))}</dd>
                </>
              ) : null}
            </dl>
          </div>
          <Artifacts path={path} taskId={t.id} list={t.artifacts ?? []} />
        </aside>
        <div class="task-main">
          {/* Its own card, after the actions on a phone: a long prompt kept the answer box a
              screen away from the question it answers. */}
          <div class="card" id="prompt-card">
            <h2 class="first">Prompt</h2>
            <pre id="task-prompt" class="prompt">
              {t.prompt}
            </pre>
          </div>
          <Changes task={t} path={path} />
          <Plan task={t} org={org} path={path} onMade={(n) => (planApplied.value = n > 0)} />
          <div class="card" id="timeline-card">
            <h2 class="first">Session</h2>
            <Transcript events={events.value} />
            <ErrorText id="timeline-error" error={timelineError.value} />
          </div>
        </div>
      </div>
    </Page>
  );
}

/** A line under the status: since when, on which worker, how long it took (the question and the waiting reason say the rest). */
function StatusDetail({ t }: { t: Task }) {
  const worker = t.worker?.name ?? t.workerId;
  const line = (() => {
    switch (t.status) {
      case "queued":
        return <>{t.attempt ? "Back in the queue" : "Queued"} <Time iso={t.updatedAt} /></>;
      case "running":
      case "needs_input":
      case "needs_approval":
        return <>{worker ? `On ${worker}, started` : "Started"} <Time iso={t.startedAt ?? t.updatedAt} /></>;
      case "paused":
        return <>Paused <Time iso={t.updatedAt} />{worker ? `, held by ${worker}` : ""}</>;
      default:
        if (!t.finishedAt) return null;
        return <>Ended <Time iso={t.finishedAt} />{t.startedAt ? `, ${duration(t.startedAt, t.finishedAt)} after it started` : ", before it started"}</>;
    }
  })();
  return line ? <p id="task-status-detail" class="muted">{line}</p> : null;
}

// The tasks as a board (?view=board): a column per status, each its own live feed, so a card
// moves to its new column the moment the socket brings the task's new record.
import { useEffect, useMemo } from "preact/hooks";
import { STATUSES, type Status, type Task } from "../../app/types";
import { useCoalesced, useFollow } from "../../components/hooks";
import { Time } from "../../components/Time";
import { ErrorText, LiveLine } from "../../components/ui";
import { TaskFeed, type Filters } from "./feed";
import type { OrgProjects } from "./projects";

const COLUMN_SIZE = 50;
const TITLES: Record<Status, string> = {
  queued: "Queued",
  running: "Running",
  paused: "Paused",
  needs_input: "Needs input",
  needs_approval: "Needs approval",
  completed: "Completed",
  failed: "Failed",
  cancelled: "Cancelled",
};

export function BoardView({ orgId, filters, projects }: { orgId: string; filters: Filters; projects: OrgProjects }) {
  const key = JSON.stringify(filters);
  const feeds = useMemo(() => STATUSES.map((status) => new TaskFeed(orgId, { ...filters, status }, COLUMN_SIZE)), [orgId, key]);
  const reload = () => feeds.forEach((f) => f.reload());
  useEffect(reload, [feeds]);
  // Why a queued card waits changes with the workers: the queued column is read again when one changes.
  const queued = feeds[STATUSES.indexOf("queued")]!;
  const workersChanged = useCoalesced(() => void queued.refresh(), 300);
  const live = useFollow(orgId, null, { subscribed: reload, task: (t) => feeds.forEach((f) => f.onTask(t)), worker: workersChanged });
  const columns = feeds.map((f) => f.tasks.value);
  useEffect(() => columns.forEach((tasks) => tasks && projects.notice(tasks)), columns);
  const names = projects.names.value;
  return (
    <>
      <div class="list-meta">
        <LiveLine state={live.value} />
      </div>
      <div class="board" id="board">
        {feeds.map((feed, i) => {
          const status = STATUSES[i]!;
          const tasks = feed.tasks.value ?? [];
          return (
            <section key={status} class="column" data-status={status} aria-label={TITLES[status]}>
              <header>
                <h2>{TITLES[status]}</h2>
                <span class="count">{feed.more.value ? `${tasks.length}+` : tasks.length}</span>
              </header>
              <ol class="cards">
                {tasks.map((t) => (
                  <Card key={t.id} t={t} project={names.get(t.projectId) ?? t.projectId} />
                ))}
              </ol>
              <ErrorText error={feed.error.value} />
              {feed.more.value ? (
                <button type="button" class="link more" onClick={() => void feed.loadMore()}>
                  Load more
                </button>
              ) : null}
            </section>
          );
        })}
      </div>
    </>
  );
}

function Card({ t, project }: { t: Task; project: string }) {
  return (
    <li class="task-card" data-id={t.id}>
      <a href={`/tasks/${encodeURIComponent(t.id)}`} class="card-title">
        {t.title}
      </a>
      <div class="card-meta">
        <span class="badge">{project}</span>
        {t.kind !== "task" ? <span class="badge">{t.kind}</span> : null}
        {t.priority === "HIGH" || t.priority === "URGENT" ? <span class={`priority p-${t.priority.toLowerCase()}`}>{t.priority}</span> : null}
        <Time iso={t.updatedAt} />
      </div>
      {t.needs && (t.status === "needs_input" || t.status === "needs_approval") ? <p class="card-needs">{t.needs.message}</p> : null}
      {t.status === "queued" && t.waitingReason ? <p class="card-waiting">{t.waitingReason}</p> : null}
    </li>
  );
}

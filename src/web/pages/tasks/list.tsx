// The tasks as a dense table: newest first, Load more, rows updated in place over the socket.
import { useMemo } from "preact/hooks";
import type { Task } from "../../app/types";
import { useBusy, useCoalesced, useFollow } from "../../components/hooks";
import { Time } from "../../components/Time";
import { EmptyState, ErrorText, LiveLine, StatusBadge } from "../../components/ui";
import { TaskFeed, type Filters } from "./feed";
import type { OrgProjects } from "./projects";
import { useEffect } from "preact/hooks";

export const PAGE_SIZE = 50;

export function TaskListView({ orgId, filters, projects, hasProjects }: { orgId: string; filters: Filters; projects: OrgProjects; hasProjects: boolean }) {
  const key = JSON.stringify(filters);
  const feed = useMemo(() => new TaskFeed(orgId, filters, PAGE_SIZE), [orgId, key]);
  useEffect(() => feed.reload(), [feed]);
  // Why a queued row waits (its title) changes with the workers: the first page is read again when one changes.
  const workersChanged = useCoalesced(() => {
    if (!filters.status || filters.status === "queued") void feed.refresh();
  }, 300);
  const live = useFollow(orgId, null, { subscribed: () => feed.reload(), task: (t) => feed.onTask(t), worker: workersChanged });
  const [loadingMore, run] = useBusy();
  const tasks = feed.tasks.value;
  useEffect(() => void (tasks && projects.notice(tasks)), [tasks]);
  const names = projects.names.value;
  const filtered = Object.values(filters).some(Boolean);
  return (
    <div class="card list-card">
      <div class="list-meta">
        <LiveLine state={live.value} />
      </div>
      <div class="table-wrap">
        <table class="tasks">
          <thead>
            <tr>
              <th>Title</th>
              <th>Status</th>
              <th class="optional">Project</th>
              <th class="optional">Kind</th>
              <th class="optional">Priority</th>
              <th class="optional">Worker</th>
              <th>Created</th>
            </tr>
          </thead>
          <tbody id="tasks-rows" aria-busy={feed.busy.value ? "true" : undefined}>
            {(tasks ?? []).map((t) => (
              <Row key={t.id} t={t} project={names.get(t.projectId) ?? t.projectId} />
            ))}
          </tbody>
        </table>
      </div>
      {tasks && tasks.length === 0 ? (
        filtered ? (
          <EmptyState id="tasks-empty" title="No task matches these filters.">
            <p>Choose “any” to see more.</p>
          </EmptyState>
        ) : hasProjects ? (
          <EmptyState id="tasks-empty" title="No tasks in this organization yet.">
            <p>Create the first one with New task: an agent on one of your workers picks it up.</p>
          </EmptyState>
        ) : (
          <EmptyState id="tasks-empty" title="No tasks yet.">
            <p>
              Every task belongs to a project: <a href="/projects">create a project</a> first.
            </p>
          </EmptyState>
        )
      ) : null}
      <ErrorText id="tasks-list-error" error={feed.error.value} />
      {feed.more.value ? (
        <div class="actions" id="tasks-more-group">
          <button type="button" id="tasks-more" disabled={loadingMore.value} onClick={() => void run(() => feed.loadMore())}>
            Load more
          </button>
        </div>
      ) : null}
    </div>
  );
}

function Row({ t, project }: { t: Task; project: string }) {
  return (
    <tr data-id={t.id} data-status={t.status}>
      <td class="title">
        <a href={`/tasks/${encodeURIComponent(t.id)}`}>{t.title}</a>
      </td>
      <td title={t.status === "queued" && t.waitingReason ? `Waiting: ${t.waitingReason}` : undefined}>
        <StatusBadge status={t.status} />
      </td>
      <td class="optional project">{project}</td>
      <td class="optional">{t.kind}</td>
      <td class="optional">
        <span class={`priority p-${t.priority.toLowerCase()}`}>{t.priority}</span>
      </td>
      <td class="optional worker">{t.worker?.name ?? (t.workerId ? t.workerId : "—")}</td>
      <td class="created">
        <Time iso={t.createdAt} />
      </td>
    </tr>
  );
}

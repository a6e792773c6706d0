// "/tasks": the tasks of one of the person's organizations (SPEC §5, §11), as a dense list or,
// with ?view=board, a board with a column per status. `?org=` picks the organization (the one in
// use otherwise); `status`, `projectId` and `kind` filter; all of it stays in the address, so a
// reload or a shared link shows the same thing. "New task" (or the c key) opens the form.
import "./tasks.css";
import { useSignal } from "@preact/signals";
import { useEffect, useMemo } from "preact/hooks";
import { setQuery } from "../../app/router";
import type { PageProps } from "../../app/routes";
import { orgId, orgs, useOrg } from "../../app/session";
import { KINDS, STATUSES, type Org, type Project } from "../../app/types";
import { ErrorText, Page, Skeleton } from "../../components/ui";
import { useShortcut } from "../../components/keys";
import type { Filters } from "./feed";
import { TaskListView } from "./list";
import { BoardView } from "./board";
import { NewTask } from "./new-task";
import { OrgProjects } from "./projects";

export function TasksPage({ address }: PageProps) {
  const asked = address.query.get("org");
  const mine = orgs.value;
  const id = asked || orgId.value;
  useEffect(() => {
    if (asked && mine?.some((o) => o.id === asked)) useOrg(asked);
  }, [asked, mine]);
  // The address always names the organization shown, so that a shared link shows the same list.
  useEffect(() => {
    if (!asked && id) setQuery({ org: id });
  }, [asked, id]);
  const board = address.query.get("view") === "board";
  if (!mine) return <Page title={board ? "Board" : "Tasks"} id="tasks"><Skeleton /></Page>;
  if (!id) {
    return (
      <Page title="No organization" id="no-orgs">
        <div class="card">
          <p>You are in no organization yet. Ask an administrator to add you.</p>
        </div>
      </Page>
    );
  }
  return <TasksOf key={id} orgId={id} org={mine.find((o) => o.id === id) ?? null} query={address.query} board={board} />;
}

const oneOf = (v: string | null, list: readonly string[]) => (v && list.includes(v) ? v : "");

function TasksOf({ orgId, org, query, board }: { orgId: string; org: Org | null; query: URLSearchParams; board: boolean }) {
  const projects = useMemo(() => new OrgProjects(orgId), [orgId]);
  const error = projects.error;
  const composing = useSignal(false);
  useEffect(() => projects.read(), [projects]);
  useShortcut("c", () => (composing.value = true));
  const filters: Filters = { status: board ? "" : oneOf(query.get("status"), STATUSES), projectId: query.get("projectId") ?? "", kind: oneOf(query.get("kind"), KINDS) };
  const list = projects.list.value;
  const live = (list ?? []).filter((p) => !p.archived);
  const title = board ? "Board" : "Tasks";
  const viewSwitch = (
    <div class="segmented" role="group" aria-label="View">
      <a href={`/tasks?${withView(query, null)}`} aria-current={!board ? "page" : undefined}>
        List
      </a>
      <a href={`/tasks?${withView(query, "board")}`} aria-current={board ? "page" : undefined}>
        Board
      </a>
    </div>
  );
  return (
    <Page
      title={title}
      id="tasks"
      wide={board}
      heading={
        <>
          {title} <span class="muted org-name" id="tasks-org-name">{org?.name ?? orgId}</span>
        </>
      }
      actions={
        error.value ? null : (
          <>
            {viewSwitch}
            <button type="button" class="primary" id="new-task-open" aria-keyshortcuts="c" aria-expanded={composing.value} onClick={() => (composing.value = !composing.value)}>
              New task
            </button>
          </>
        )
      }
    >
      <ErrorText id="tasks-error" error={error.value} />
      {error.value ? null : !list ? (
        <Skeleton />
      ) : (
        <>
          {composing.value ? <NewTask orgId={orgId} role={org?.role ?? null} projects={live} filtered={filters.projectId} onClose={() => (composing.value = false)} /> : null}
          {list.length > 0 ? <Filters filters={filters} board={board} projects={list} /> : null}
          {board ? <BoardView orgId={orgId} filters={filters} projects={projects} /> : <TaskListView orgId={orgId} filters={filters} projects={projects} hasProjects={live.length > 0} />}
        </>
      )}
    </Page>
  );
}

function withView(query: URLSearchParams, view: string | null) {
  const q = new URLSearchParams(query);
  if (view) q.set("view", view);
  else q.delete("view");
  q.delete("status");
  return q.toString();
}

function Filters({ filters, board, projects }: { filters: Filters; board: boolean; projects: Project[] }) {
  const shownProjects = projects.filter((p) => !p.archived || p.id === filters.projectId);
  const unknown = filters.projectId && !projects.some((p) => p.id === filters.projectId);
  return (
    <div id="tasks-filters" class="filters">
      {board ? null : (
        <div>
          <label for="filter-status">Status</label>
          <select id="filter-status" value={filters.status} onChange={(e) => setQuery({ status: e.currentTarget.value })}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </div>
      )}
      <div>
        <label for="filter-project">Project</label>
        <select id="filter-project" value={filters.projectId} onChange={(e) => setQuery({ projectId: e.currentTarget.value })}>
          <option value="">any</option>
          {shownProjects.map((p) => (
            <option key={p.id} value={p.id}>
              {p.archived ? `${p.name} (archived)` : p.name}
            </option>
          ))}
          {unknown ? <option value={filters.projectId}>{filters.projectId}</option> : null}
        </select>
      </div>
      <div>
        <label for="filter-kind">Kind</label>
        <select id="filter-kind" value={filters.kind} onChange={(e) => setQuery({ kind: e.currentTarget.value })}>
          <option value="">any</option>
          {KINDS.map((k) => (
            <option key={k} value={k}>
              {k}
            </option>
          ))}
        </select>
      </div>
    </div>
  );
}

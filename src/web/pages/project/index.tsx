// /projects/:projectId: one project: its name, repositories, knowledge and policy, readiness,
// repositories found on workers, and usage. Members change it; viewers read; owners and admins
// archive it.
import { useSignal } from "@preact/signals";
import { api, errorText } from "../../app/api";
import { useEffect } from "preact/hooks";
import { canAdmin, canWrite, findInMyOrgs, orgId, orgs, useOrg } from "../../app/session";
import type { Org } from "../../app/types";
import type { ProjectRecord } from "../../app/records";
import { LoadFailed, Problem, RoleNote, useForm, useResource, When } from "../kit";
import { ConfirmButton, Field, Page, Skeleton } from "../../components/ui";
import type { PageProps } from "../../app/routes";
import { Repositories } from "./repositories";
import { Knowledge } from "./knowledge";
import { Readiness } from "./readiness";
import { Discovered } from "./discovered";
import { Usage } from "./usage";
import "../projects/projects.css";

function Rename({ project, onChanged, onClose }: { project: ProjectRecord; onChanged: (p: ProjectRecord) => void; onClose: () => void }) {
  const name = useSignal(project.name);
  const form = useForm(["name"]);
  const save = (e: Event) => {
    e.preventDefault();
    return form
      .submit(async () => onChanged(await api<ProjectRecord>("PATCH", `/orgs/${project.orgId}/projects/${project.id}`, { name: name.value })))
      .then((ok) => ok && onClose());
  };
  return (
    <form onSubmit={save} class="inline-form title-form">
      <Field id="project-rename" label="Project name" error={form.fields.value.name}>
        <input id="project-rename" name="name" value={name.value} onInput={(e) => (name.value = e.currentTarget.value)} required maxLength={100} />
      </Field>
      <button type="submit" disabled={form.busy.value}>
        Save
      </button>
      <button type="button" onClick={onClose}>
        Cancel
      </button>
      <Problem text={form.error.value} />
    </form>
  );
}

export function ProjectPage({ params }: PageProps) {
  const projectId = params.projectId ?? "";
  const mine = orgs.value;
  // Asked once the person's organizations are known, in whichever of them holds it: a link from a
  // teammate may name a project of another of their organizations.
  const found = useResource(
    () => (mine ? findInMyOrgs<ProjectRecord>(mine, orgId.peek(), (org) => `/orgs/${org}/projects/${encodeURIComponent(projectId)}`) : Promise.resolve(undefined)),
    [mine, projectId],
  );
  const f = found.data.value;
  useEffect(() => {
    if (f) useOrg(f.org.id);
  }, [f?.org.id]);
  if (f === null) {
    return (
      <Page title="Project not found" id="missing">
        <div class="card">
          <p id="missing-text">There is no such project, or it is not in one of your organizations.</p>
          <p>
            <a href="/projects">All projects</a>
          </p>
        </div>
      </Page>
    );
  }
  if (!f) {
    return (
      <Page title="Project" id="project-page">
        <nav class="crumbs">
          <a href="/projects">Projects</a>
        </nav>
        {found.error.value ? <LoadFailed error={found.error.value} retry={found.reload} /> : <Skeleton />}
      </Page>
    );
  }
  return <ProjectView key={f.item.id} org={f.org} initial={f.item} />;
}

function ProjectView({ org, initial }: { org: Org; initial: ProjectRecord }) {
  const id = org.id;
  const projectId = initial.id;
  const project = useSignal(initial);
  const failed = useSignal<string | null>(null);
  const renaming = useSignal(false);
  const r = org.role;
  const write = canWrite(r);
  const current = project.value;
  const set = (p: ProjectRecord) => (project.value = p);
  const archive = async (restore: boolean) => {
    failed.value = null;
    try {
      set(restore ? await api<ProjectRecord>("PATCH", `/orgs/${id}/projects/${projectId}`, { archived: false }) : await api<ProjectRecord>("DELETE", `/orgs/${id}/projects/${projectId}`));
    } catch (err) {
      failed.value = errorText(err);
    }
  };
  const actions = (
    <>
      {write && !current.archived ? (
        <button type="button" onClick={() => (renaming.value = !renaming.value)} aria-expanded={renaming.value}>
          Rename
        </button>
      ) : null}
      {canAdmin(r) && current.archived ? (
        <button type="button" onClick={() => archive(true)}>
          Restore
        </button>
      ) : null}
      {canAdmin(r) && !current.archived ? (
        <ConfirmButton danger label="Archive" question="Archive it? It takes no new tasks; its tasks stay." confirmLabel="Yes, archive" onConfirm={() => archive(false)} />
      ) : null}
    </>
  );
  return (
    <Page
      title={current.name}
      id="project-page"
      heading={
        <>
          <span id="project-name">{current.name}</span>
          {current.archived ? <span class="badge">archived</span> : null}
        </>
      }
      actions={actions}
    >
      <p class="muted crumbs">
        <a href="/projects">Projects</a> · created <When at={current.createdAt} />, updated <When at={current.updatedAt} /> · <a href={`/tasks?projectId=${current.id}`}>its tasks</a>
      </p>
      {renaming.value ? <Rename project={current} onChanged={set} onClose={() => (renaming.value = false)} /> : null}
      <Problem text={failed.value} />
      {!write ? <RoleNote>You are a viewer here: you see the project but cannot change it (you may run its readiness check and take in repositories found on workers).</RoleNote> : null}
      {current.archived ? <RoleNote>Archived: it takes no new tasks and its repositories cannot change. Restore it to work on it again.</RoleNote> : null}
      <Repositories project={current} write={write} onChanged={set} />
      <Knowledge key={current.id} project={current} write={write && !current.archived} onChanged={set} />
      <Readiness project={current} startable={!current.archived} />
      <Discovered project={current} onChanged={set} />
      <Usage project={current} />
    </Page>
  );
}

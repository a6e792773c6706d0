// /projects/:projectId: one project: its name, repositories, knowledge and policy, readiness,
// repositories found on workers, and usage. Members change it; viewers read; owners and admins
// archive it.
import { useSignal } from "@preact/signals";
import { api, errorText } from "../../app/api";
import { canAdmin, canWrite, orgId, role } from "../../app/session";
import type { ProjectRecord } from "../../app/records";
import { ConfirmButton, Field, LoadFailed, Problem, RoleNote, useForm, useResource, When } from "../kit";
import { Repositories } from "./repositories";
import { Knowledge } from "./knowledge";
import { Readiness } from "./readiness";
import { Discovered } from "./discovered";
import { Usage } from "./usage";
import "../projects/projects.css";

function Title({ project, write, onChanged }: { project: ProjectRecord; write: boolean; onChanged: (p: ProjectRecord) => void }) {
  const editing = useSignal(false);
  const name = useSignal(project.name);
  const form = useForm();
  const save = (e: Event) => {
    e.preventDefault();
    return form
      .submit(async () => onChanged(await api<ProjectRecord>("PATCH", `/orgs/${project.orgId}/projects/${project.id}`, { name: name.value })))
      .then((ok) => ok && (editing.value = false));
  };
  if (editing.value) {
    return (
      <form onSubmit={save} class="inline-form title-form">
        <Field label="Project name" error={form.fields.value.name}>
          <input name="name" value={name.value} onInput={(e) => (name.value = e.currentTarget.value)} required maxLength={100} />
        </Field>
        <button type="submit" disabled={form.busy.value}>
          Save
        </button>
        <button type="button" onClick={() => (editing.value = false)}>
          Cancel
        </button>
        <Problem text={form.error.value} />
      </form>
    );
  }
  return (
    <div class="title-row">
      <h1 id="project-name">{project.name}</h1>
      {project.archived ? <span class="badge">archived</span> : null}
      {write && !project.archived ? (
        <button type="button" class="link" onClick={() => ((name.value = project.name), (editing.value = true))}>
          Rename
        </button>
      ) : null}
    </div>
  );
}

export function ProjectPage({ projectId }: { projectId: string }) {
  const id = orgId.value;
  const project = useResource(() => api<ProjectRecord>("GET", `/orgs/${id}/projects/${encodeURIComponent(projectId)}`), [id, projectId]);
  const failed = useSignal<string | null>(null);
  const r = role.value;
  const write = canWrite(r);
  const current = project.data.value;
  const set = (p: ProjectRecord) => (project.data.value = p);
  const archive = async (restore: boolean) => {
    failed.value = null;
    try {
      set(restore ? await api<ProjectRecord>("PATCH", `/orgs/${id}/projects/${projectId}`, { archived: false }) : await api<ProjectRecord>("DELETE", `/orgs/${id}/projects/${projectId}`));
    } catch (err) {
      failed.value = errorText(err);
    }
  };
  return (
    <div class="page project-page">
      <nav class="crumbs">
        <a href="/projects">Projects</a>
      </nav>
      {project.error.value && !current ? <LoadFailed error={project.error.value} retry={project.reload} /> : null}
      {current ? (
        <>
          <header class="page-head">
            <Title key={current.id} project={current} write={write} onChanged={set} />
            <p class="muted">
              Created <When at={current.createdAt} />, updated <When at={current.updatedAt} /> · <a href={`/tasks?projectId=${current.id}`}>its tasks</a>
            </p>
            {canAdmin(r) ? (
              <div class="row">
                {current.archived ? (
                  <button type="button" onClick={() => archive(true)}>
                    Restore
                  </button>
                ) : (
                  <ConfirmButton class="danger" label="Archive" question="Archive it? It takes no new tasks; its tasks stay." confirm="Yes, archive" onConfirm={() => archive(false)} />
                )}
              </div>
            ) : null}
            <Problem text={failed.value} />
          </header>
          {!write ? <RoleNote>You are a viewer here: you see the project but cannot change it.</RoleNote> : null}
          {current.archived ? <RoleNote>Archived: it takes no new tasks and its repositories cannot change. Restore it to work on it again.</RoleNote> : null}
          <Repositories project={current} write={write} onChanged={set} />
          <Knowledge key={current.id} project={current} write={write && !current.archived} onChanged={set} />
          <Readiness project={current} write={write && !current.archived} />
          <Discovered project={current} write={write} onChanged={set} />
          <Usage project={current} />
        </>
      ) : null}
    </div>
  );
}

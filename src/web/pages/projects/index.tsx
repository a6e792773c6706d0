// /projects: the organization's projects with their repositories, and a form to create one
// (name and, optionally, the first repository's URL). Archived projects on request.
import { useSignal } from "@preact/signals";
import { api, listAll } from "../../app/api";
import { navigate } from "../../app/router";
import { canWrite, orgId, role } from "../../app/session";
import type { ProjectRecord } from "../../app/records";
import { Empty, FormEnd, LoadFailed, RoleNote, Section, useForm, useResource, When } from "../kit";
import type { PageProps } from "../../app/routes";
import { Field, Page } from "../../components/ui";
import "./projects.css";

function CreateProject({ onCreated }: { onCreated: (p: ProjectRecord) => void }) {
  const name = useSignal("");
  const url = useSignal("");
  const form = useForm(["name", "url"]);
  const create = (e: Event) => {
    e.preventDefault();
    return form.submit(
      async () => {
        const body: Record<string, unknown> = { name: name.value };
        if (url.value.trim()) body.repositories = [{ url: url.value.trim() }];
        const p = await api<ProjectRecord>("POST", `/orgs/${orgId.value}/projects`, body);
        onCreated(p);
        name.value = "";
        url.value = "";
      },
      (f) => (f.startsWith("repositories") ? "url" : f),
    );
  };
  return (
    <form onSubmit={create} class="grid-form" id="project-form">
      <Field id="project-name" label="Project name" error={form.fields.value.name}>
        <input id="project-name" name="name" value={name.value} onInput={(e) => (name.value = e.currentTarget.value)} required maxLength={100} placeholder="shop" />
      </Field>
      <Field id="project-url" label="Repository URL" error={form.fields.value.url} hint="Optional; more on the project's page (or pick from GitHub there)">
        <input id="project-url" name="url" value={url.value} onInput={(e) => (url.value = e.currentTarget.value)} placeholder="https://github.com/acme/shop.git" maxLength={2048} />
      </Field>
      <FormEnd form={form} label="Create project" primary />
    </form>
  );
}

export function ProjectsPage(_: PageProps) {
  const id = orgId.value;
  const archived = useSignal(false);
  const projects = useResource(() => (id ? listAll<ProjectRecord>(`/orgs/${id}/projects${archived.value ? "?archived=true" : ""}`) : Promise.resolve([])), [id, archived.value]);
  const write = canWrite(role.value);
  if (!id) return <Empty>You are in no organization yet. Ask an owner to add you.</Empty>;
  const list = projects.data.value;
  return (
    <Page title="Projects" id="projects-page">
      <p class="muted">A project is what tasks run in: its repositories, what agents should know, and the rules they follow.</p>
      {write ? (
        <Section id="new-project" title="New project">
          <CreateProject onCreated={(p) => navigate(`/projects/${p.id}`)} />
        </Section>
      ) : (
        <RoleNote>You are a viewer here: you see the projects but cannot create or change them.</RoleNote>
      )}
      <Section
        id="projects"
        title="In this organization"
        actions={
          <label class="check">
            <input type="checkbox" checked={archived.value} onChange={(e) => (archived.value = e.currentTarget.checked)} />
            <span>Show archived</span>
          </label>
        }
      >
        {projects.error.value && !list ? <LoadFailed error={projects.error.value} retry={projects.reload} /> : null}
        {list && list.length === 0 ? (
          <Empty id="projects-empty">{write ? "No project yet. Create the first one above: give it a name and the URL of its repository." : "No project yet. A member or admin creates them."}</Empty>
        ) : null}
        {list && list.length > 0 ? (
          <ul class="project-list" id="projects-list">
            {list.map((p) => {
              const primary = p.repositories.find((r) => r.primary);
              return (
                <li key={p.id} data-id={p.id} class={p.archived ? "archived" : ""}>
                  <a href={`/projects/${p.id}`} class="project-name">
                    {p.name}
                  </a>
                  {p.archived ? <span class="badge">archived</span> : null}
                  <span class="muted repo-count">
                    {p.repositories.length === 0 ? "no repository" : p.repositories.length === 1 ? "1 repository" : `${p.repositories.length} repositories`}
                  </span>
                  {primary ? <code class="muted primary-url">{primary.url}</code> : null}
                  <span class="muted">
                    updated <When at={p.updatedAt} />
                  </span>
                </li>
              );
            })}
          </ul>
        ) : null}
      </Section>
    </Page>
  );
}

// /github: the code-hosting app (SPEC §10): create the GitHub App from a manifest (the browser
// posts it to GitHub, which comes back to the server), install it, connect your own account,
// sync, the synced repositories, and create a repository with a project holding it.
import { useSignal } from "@preact/signals";
import { api, ApiError, errorText, listAll } from "../../app/api";
import { address, navigate } from "../../app/router";
import { canAdmin, canWrite, orgId, role } from "../../app/session";
import type { CodeHost, HostedRepository, Page as ListPage, ProjectRecord } from "../../app/records";
import { Empty, FormEnd, LoadFailed, Problem, ProjectOptions, RoleNote, Section, useForm, useResource, When } from "../kit";
import type { PageProps } from "../../app/routes";
import { Field, Page } from "../../components/ui";
import "./github.css";

/** Posts the manifest to GitHub as the form field `manifest` (GitHub's manifest flow takes a form post, not an API call). */
function postManifest(url: string, manifest: unknown) {
  const form = document.createElement("form");
  form.method = "post";
  form.action = url;
  form.hidden = true;
  const field = document.createElement("input");
  field.type = "hidden";
  field.name = "manifest";
  field.value = JSON.stringify(manifest);
  form.append(field);
  document.body.append(form);
  form.submit();
}

function CreateApp({ id, projects }: { id: string; projects: ProjectRecord[] }) {
  const name = useSignal("");
  const owner = useSignal("");
  const projectId = useSignal("");
  const form = useForm(["name", "organization", "projectId"]);
  const create = (e: Event) => {
    e.preventDefault();
    return form.submit(async () => {
      const body: Record<string, unknown> = {};
      if (name.value.trim()) body.name = name.value.trim();
      if (owner.value.trim()) body.organization = owner.value.trim();
      if (projectId.value) body.projectId = projectId.value;
      const r = await api<{ url: string; manifest: unknown }>("POST", `/orgs/${id}/codehost/app/manifest`, body);
      postManifest(r.url, r.manifest);
    });
  };
  return (
    <form onSubmit={create} class="grid-form" id="app-form">
      <Field id="gh-name" label="App name" error={form.fields.value.name} hint="Unique at GitHub; empty: ao and this server's host">
        <input id="gh-name" name="name" value={name.value} onInput={(e) => (name.value = e.currentTarget.value)} maxLength={34} />
      </Field>
      <Field id="gh-organization" label="GitHub organization" error={form.fields.value.organization} hint="Empty: your personal account owns the app">
        <input id="gh-organization" name="organization" value={owner.value} onInput={(e) => (owner.value = e.currentTarget.value)} placeholder="acme" />
      </Field>
      <Field id="gh-projectId" label="Project for issues and comments" error={form.fields.value.projectId} hint="Of repositories no project holds">
        <select id="gh-projectId" name="projectId" value={projectId.value} onChange={(e) => (projectId.value = e.currentTarget.value)}>
          <option value="">the oldest project (or a new one named GitHub)</option>
          <ProjectOptions projects={projects} />
        </select>
      </Field>
      <FormEnd form={form} label="Create the GitHub app" primary />
    </form>
  );
}

function SyncedRepositories({ id, write }: { id: string; write: boolean }) {
  const q = useSignal("");
  const cursor = useSignal<string | null>(null);
  const page = useResource(
    () => api<ListPage<HostedRepository>>("GET", `/orgs/${id}/codehost/repositories?limit=50${q.value ? `&q=${encodeURIComponent(q.value)}` : ""}${cursor.value ? `&cursor=${encodeURIComponent(cursor.value)}` : ""}`),
    [id, q.value, cursor.value],
  );
  const failed = useSignal<string | null>(null);
  const items = page.data.value?.items;
  const newProject = async (r: HostedRepository) => {
    failed.value = null;
    try {
      const p = await api<ProjectRecord>("POST", `/orgs/${id}/projects`, { name: r.fullName.split("/")[1] ?? r.fullName, repositories: [{ url: r.cloneUrl, branch: r.defaultBranch }] });
      navigate(`/projects/${p.id}`);
    } catch (err) {
      failed.value = `${r.fullName}: ${errorText(err)}`;
    }
  };
  return (
    <Section id="synced" title="Synced repositories">
      <input type="search" aria-label="Search repositories" placeholder="Search by name" value={q.value} onInput={(e) => ((q.value = e.currentTarget.value), (cursor.value = null))} />
      <Problem text={failed.value} />
      {page.error.value && !items ? <LoadFailed error={page.error.value} retry={page.reload} /> : null}
      {items && items.length === 0 ? <Empty>{q.value ? "No repository matches." : "None yet: install the app on an account, then sync."}</Empty> : null}
      {items && items.length > 0 ? (
        <ul class="list" id="synced-list">
          {items.map((r) => (
            <li key={`${r.installationId}/${r.id}`}>
              <a href={r.htmlUrl} target="_blank" rel="noopener noreferrer">
                {r.fullName}
              </a>
              {r.private ? <span class="badge">private</span> : null}
              <span class="chip">{r.defaultBranch}</span>
              <span class="spacer" />
              {write ? (
                <button type="button" onClick={() => newProject(r)}>
                  New project
                </button>
              ) : null}
            </li>
          ))}
        </ul>
      ) : null}
      {page.data.value?.nextCursor ? (
        <button type="button" onClick={() => (cursor.value = page.data.value!.nextCursor)}>
          Next page
        </button>
      ) : null}
    </Section>
  );
}

function CreateRepository({ id, owners }: { id: string; owners: string[] }) {
  const owner = useSignal(owners[0] ?? "");
  const name = useSignal("");
  const description = useSignal("");
  const priv = useSignal(true);
  const form = useForm(["owner", "name", "description"]);
  const create = (e: Event) => {
    e.preventDefault();
    return form.submit(async () => {
      const body: Record<string, unknown> = { owner: owner.value.trim(), name: name.value.trim(), private: priv.value };
      if (description.value.trim()) body.description = description.value.trim();
      const r = await api<{ project: ProjectRecord }>("POST", `/orgs/${id}/codehost/repositories`, body);
      navigate(`/projects/${r.project.id}`);
    });
  };
  return (
    <Section id="create-repository" title="Create a repository">
      <form onSubmit={create} class="grid-form" id="repository-create-form">
        <Field id="gh-owner" label="Owner" error={form.fields.value.owner} hint="An organization the app is installed on, or your connected account">
          <input id="gh-owner" name="owner" list="repo-owners" value={owner.value} onInput={(e) => (owner.value = e.currentTarget.value)} required />
          <datalist id="repo-owners">
            {owners.map((o) => (
              <option key={o} value={o} />
            ))}
          </datalist>
        </Field>
        <Field id="gh-name-2" label="Repository name" error={form.fields.value.name}>
          <input id="gh-name-2" name="name" value={name.value} onInput={(e) => (name.value = e.currentTarget.value)} required maxLength={100} pattern="[A-Za-z0-9._\-]+" />
        </Field>
        <Field id="gh-description" label="Description" error={form.fields.value.description}>
          <input id="gh-description" name="description" value={description.value} onInput={(e) => (description.value = e.currentTarget.value)} maxLength={350} />
        </Field>
        <label class="check">
          <input type="checkbox" checked={priv.value} onChange={(e) => (priv.value = e.currentTarget.checked)} />
          <span>Private</span>
        </label>
        <FormEnd form={form} label="Create repository and project" />
      </form>
    </Section>
  );
}

/** What GitHub's redirect back says happened (?app=, ?installation=, ?connection=, ?refused=). */
function Outcome() {
  const q = address.value.query;
  const refused = q.get("refused");
  if (refused)
    return (
      <p class="error" role="alert" id="github-outcome">
        {refused === "declined"
          ? "Your GitHub account was not connected: the authorization was declined at GitHub."
          : "Your GitHub account was not connected: GitHub answered with an error. Try again."}
      </p>
    );
  const text = q.get("app")
    ? `The GitHub app ${q.get("app")} was created. Install it on the accounts whose repositories ao should work on.`
    : q.get("installation")
      ? "The app was installed and its repositories synced."
      : q.get("connection")
        ? `Your GitHub account ${q.get("connection")} is connected.`
        : null;
  return text ? (
    <p class="ok" role="status" id="github-outcome">
      {text}
    </p>
  ) : null;
}

export function GitHubPage(_: PageProps) {
  const id = orgId.value;
  const status = useResource(
    () =>
      id
        ? api<CodeHost>("GET", `/orgs/${id}/codehost`).catch((err) => {
            if (err instanceof ApiError && err.status === 404 && !/organization/i.test(err.message)) return null;
            throw err;
          })
        : Promise.resolve(null),
    [id],
  );
  const projects = useResource(() => (id ? listAll<ProjectRecord>(`/orgs/${id}/projects`) : Promise.resolve([])), [id]);
  const failed = useSignal<string | null>(null);
  const synced = useSignal<string | null>(null);
  const busy = useSignal(false);
  // Each sync bumps it: the synced repositories' list loads again.
  const syncs = useSignal(0);
  const r = role.value;
  const manage = canAdmin(r);
  if (!id) return <Empty>You are in no organization yet.</Empty>;
  const s = status.data.value;
  const go = (path: string) => async () => {
    failed.value = null;
    busy.value = true;
    try {
      const link = await api<{ url: string }>("POST", `/orgs/${id}${path}`);
      location.assign(link.url);
    } catch (err) {
      failed.value = errorText(err);
      busy.value = false;
    }
  };
  const sync = async () => {
    failed.value = null;
    synced.value = null;
    busy.value = true;
    try {
      const r = await api<{ installations: CodeHost["installations"]; repositories: number }>("POST", `/orgs/${id}/codehost/sync`);
      synced.value = `Synced: ${r.repositories} repositor${r.repositories === 1 ? "y" : "ies"}.`;
      if (s) status.data.value = { ...s, installations: r.installations };
      syncs.value++;
    } catch (err) {
      failed.value = errorText(err);
    } finally {
      busy.value = false;
    }
  };
  const owners = [...new Set([...(s?.installations.map((i) => i.account.login) ?? []), ...(s?.connection ? [s.connection.login] : [])])];
  return (
    <Page title="GitHub" id="github-page">
      <p class="muted">Connect a GitHub App: repositories to pick for projects, tasks' branches pushed and pull requests opened.</p>
      <Outcome />
      <Problem text={failed.value} />
      {status.error.value && s === undefined ? <LoadFailed error={status.error.value} retry={status.reload} /> : null}
      {s === null ? <Empty id="github-unavailable">This server has no GitHub support yet.</Empty> : null}
      {s ? (
        <>
          {!manage ? <RoleNote>Owners and admins create, install and sync the app; you can connect your own GitHub account.</RoleNote> : null}
          <Section id="github-app" title="The app">
            {s.app ? (
              <p>
                <a href={s.app.htmlUrl} target="_blank" rel="noopener noreferrer" id="app-link">
                  {s.app.name}
                </a>{" "}
                <span class="muted">({s.app.slug})</span>
                {s.app.ownedByThisOrg ? <span class="badge">created here</span> : null}
              </p>
            ) : manage ? (
              <>
                <p>No GitHub app yet. Create one: GitHub asks you to confirm, then sends you back here.</p>
                <CreateApp id={id} projects={projects.data.value ?? []} />
              </>
            ) : (
              <Empty>No GitHub app yet. An owner or admin creates it here.</Empty>
            )}
          </Section>
          {s.app ? (
            <Section
              id="installations"
              title="Installations"
              actions={
                manage ? (
                  <div class="row">
                    <button type="button" onClick={go("/codehost/installations")} disabled={busy.value}>
                      Install on GitHub
                    </button>
                    <button type="button" onClick={sync} disabled={busy.value || s.installations.length === 0}>
                      Sync
                    </button>
                  </div>
                ) : null
              }
            >
              {synced.value ? (
                <p class="ok" role="status">
                  {synced.value}
                </p>
              ) : null}
              {s.installations.length === 0 ? <Empty>Not installed on any account yet. Install it on the accounts whose repositories ao should work on.</Empty> : null}
              {s.installations.length ? (
                <ul class="list" id="installations-list">
                  {s.installations.map((i) => (
                    <li key={i.id}>
                      <strong>{i.account.login}</strong> <span class="muted">{i.account.type}</span>
                      <span class="chip">{i.repositorySelection === "all" ? "all repositories" : "selected repositories"}</span>
                      <span>{i.repositories} synced</span>
                      {i.suspended ? <span class="badge bad">suspended</span> : null}
                      <span class="muted">
                        synced <When at={i.syncedAt} />
                      </span>
                    </li>
                  ))}
                </ul>
              ) : null}
            </Section>
          ) : null}
          {s.app ? (
            <Section id="connection" title="Your GitHub account">
              {s.connection ? (
                <p>
                  Connected as <strong id="connection-login">{s.connection.login}</strong>.
                </p>
              ) : (
                <>
                  <p class="muted">Connect it before installing the app (ao checks that the installation is yours), and to create repositories under your own account.</p>
                  <button type="button" onClick={go("/codehost/user")} disabled={busy.value}>
                    Connect your GitHub account
                  </button>
                </>
              )}
            </Section>
          ) : null}
          {s.app && s.installations.length ? <SyncedRepositories key={syncs.value} id={id} write={canWrite(r)} /> : null}
          {s.app && canWrite(r) && owners.length ? <CreateRepository id={id} owners={owners} /> : null}
        </>
      ) : null}
    </Page>
  );
}

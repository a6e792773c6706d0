// A project's repositories (SPEC §8): add by URL or from the GitHub app's synced repositories;
// rename, branch, primary, move to another project, split into a project of its own, clone to
// workers (with each worker's progress), remove.
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { api, ApiError, errorText, listAll } from "../../app/api";
import { navigate } from "../../app/router";
import type { CloneStatus, HostedRepository, Page, ProjectRecord, Repository, WorkerRecord } from "../../app/records";
import { Empty, FormEnd, Problem, ProjectOptions, Section, useForm, useResource, When } from "../kit";
import { ConfirmButton, Field } from "../../components/ui";

type Change = { project: ProjectRecord; repository: Repository };

function AddByUrl({ project, onChanged }: { project: ProjectRecord; onChanged: (p: ProjectRecord) => void }) {
  const url = useSignal("");
  const branch = useSignal("");
  const form = useForm(["url", "branch"]);
  const add = (e: Event) => {
    e.preventDefault();
    return form.submit(async () => {
      const body: Record<string, string> = { url: url.value.trim() };
      if (branch.value.trim()) body.branch = branch.value.trim();
      const r = await api<Change>("POST", `/orgs/${project.orgId}/projects/${project.id}/repositories`, body);
      onChanged(r.project);
      url.value = "";
      branch.value = "";
    });
  };
  return (
    <form onSubmit={add} class="grid-form" id="repository-form">
      <Field id="repo-url" label="Repository URL" error={form.fields.value.url} hint="https://host/owner/name.git, ssh://… or git@host:owner/name.git">
        <input id="repo-url" name="url" value={url.value} onInput={(e) => (url.value = e.currentTarget.value)} required maxLength={2048} placeholder="https://github.com/acme/shop.git" />
      </Field>
      <Field id="repo-branch" label="Branch" error={form.fields.value.branch} hint="Empty: main">
        <input id="repo-branch" name="branch" value={branch.value} onInput={(e) => (branch.value = e.currentTarget.value)} placeholder="main" />
      </Field>
      <FormEnd form={form} label="Add repository" />
    </form>
  );
}

/** The GitHub installation's synced repositories, to pick from; hidden where the server has no GitHub app. */
function FromGitHub({ project, onChanged }: { project: ProjectRecord; onChanged: (p: ProjectRecord) => void }) {
  const q = useSignal("");
  const found = useResource(
    () =>
      api<Page<HostedRepository>>("GET", `/orgs/${project.orgId}/codehost/repositories?limit=20${q.value ? `&q=${encodeURIComponent(q.value)}` : ""}`).catch((err) => {
        if (err instanceof ApiError && (err.status === 404 || err.status === 403)) return null;
        throw err;
      }),
    [project.orgId, q.value],
  );
  const failed = useSignal<string | null>(null);
  const items = found.data.value?.items;
  if (found.data.value === null) return null;
  const have = new Set(project.repositories.map((r) => r.url));
  const add = async (r: HostedRepository) => {
    failed.value = null;
    try {
      const c = await api<Change>("POST", `/orgs/${project.orgId}/projects/${project.id}/repositories`, { url: r.cloneUrl, branch: r.defaultBranch });
      onChanged(c.project);
    } catch (err) {
      failed.value = `${r.fullName}: ${errorText(err)}`;
    }
  };
  return (
    <div class="from-github" id="from-github">
      <h3>From GitHub</h3>
      <input type="search" aria-label="Search GitHub repositories" placeholder="Search synced repositories" value={q.value} onInput={(e) => (q.value = e.currentTarget.value)} />
      <Problem text={failed.value} />
      {items && items.length === 0 ? (
        <Empty>
          No synced repository{q.value ? " matches" : ""}. Install the app and sync on the <a href="/github">GitHub page</a>.
        </Empty>
      ) : null}
      {items && items.length > 0 ? (
        <ul class="list picker">
          {items.map((r) => (
            <li key={`${r.installationId}/${r.id}`}>
              <span>{r.fullName}</span>
              {r.private ? <span class="badge">private</span> : null}
              <span class="spacer" />
              <button type="button" onClick={() => add(r)} disabled={have.has(r.cloneUrl)}>
                {have.has(r.cloneUrl) ? "Added" : "Add"}
              </button>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

function EditRepository({ project, repo, onChanged, onClose }: { project: ProjectRecord; repo: Repository; onChanged: (p: ProjectRecord) => void; onClose: () => void }) {
  const name = useSignal(repo.name);
  const branch = useSignal(repo.branch);
  const form = useForm(["name", "branch"]);
  const save = (e: Event) => {
    e.preventDefault();
    return form
      .submit(async () => {
        const body: Record<string, string> = {};
        if (name.value !== repo.name) body.name = name.value;
        if (branch.value !== repo.branch) body.branch = branch.value;
        const r = await api<Change>("PATCH", `/orgs/${project.orgId}/projects/${project.id}/repositories/${repo.id}`, body);
        onChanged(r.project);
      })
      .then((ok) => ok && onClose());
  };
  return (
    <form onSubmit={save} class="grid-form repo-edit">
      <Field id={`repo-name-${repo.id}`} label="Name" error={form.fields.value.name}>
        <input id={`repo-name-${repo.id}`} name="name" value={name.value} onInput={(e) => (name.value = e.currentTarget.value)} required maxLength={100} />
      </Field>
      <Field id={`repo-branch-${repo.id}`} label="Branch" error={form.fields.value.branch}>
        <input id={`repo-branch-${repo.id}`} name="branch" value={branch.value} onInput={(e) => (branch.value = e.currentTarget.value)} required />
      </Field>
      <FormEnd form={form} label="Save" onCancel={onClose} />
    </form>
  );
}

function CloneToWorkers({ project, repo, workers }: { project: ProjectRecord; repo: Repository; workers: WorkerRecord[] }) {
  const base = `/orgs/${project.orgId}/projects/${project.id}/repositories/${repo.id}`;
  const statuses = useResource(() => listAll<CloneStatus>(`${base}/clones`), [base]);
  const chosen = useSignal<string[]>([]);
  const failed = useSignal<string | null>(null);
  const usable = workers.filter((w) => w.status !== "revoked");
  const cloning = (statuses.data.value ?? []).some((s) => s.status === "cloning");
  // While a worker clones, look again every 2 s until it reports.
  useEffect(() => {
    if (!cloning) return;
    const timer = setTimeout(() => void statuses.reload(), 2000);
    return () => clearTimeout(timer);
  }, [cloning, statuses.data.value]);
  const clone = async () => {
    failed.value = null;
    try {
      await api("POST", `${base}/clone`, { workerIds: chosen.value });
      chosen.value = [];
      await statuses.reload();
    } catch (err) {
      failed.value = errorText(err);
    }
  };
  const name = (id: string) => workers.find((w) => w.id === id)?.name ?? id;
  return (
    <div class="clone">
      {usable.length === 0 ? (
        <p class="muted">
          No worker to clone to: <a href="/workers">pair one</a>.
        </p>
      ) : (
        <fieldset>
          <legend>Clone to workers</legend>
          {usable.map((w) => (
            <label class="check" key={w.id}>
              <input
                type="checkbox"
                checked={chosen.value.includes(w.id)}
                onChange={(e) => (chosen.value = e.currentTarget.checked ? [...chosen.value, w.id] : chosen.value.filter((x) => x !== w.id))}
              />
              <span>
                {w.name} <span class="muted">({w.status.replace("_", " ")})</span>
              </span>
            </label>
          ))}
          <button type="button" onClick={clone} disabled={chosen.value.length === 0}>
            Clone
          </button>
        </fieldset>
      )}
      <Problem text={failed.value} />
      {(statuses.data.value ?? []).length ? (
        <ul class="list clone-status">
          {statuses.data.value!.map((s) => (
            <li key={s.workerId}>
              <strong>{name(s.workerId)}</strong> <span class={`badge ${s.status === "cloned" ? "ok" : s.status === "failed" ? "bad" : ""}`}>{s.status}</span>
              {s.path ? <code class="muted">{s.path}</code> : null}
              {s.error ? <span class="error">{s.error}</span> : null}
              <When at={s.updatedAt} />
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

function RepositoryRow({ project, repo, others, workers, write, onChanged }: { project: ProjectRecord; repo: Repository; others: ProjectRecord[]; workers: WorkerRecord[]; write: boolean; onChanged: (p: ProjectRecord) => void }) {
  const open = useSignal<"edit" | "move" | "clone" | null>(null);
  const target = useSignal("");
  const failed = useSignal<string | null>(null);
  const base = `/orgs/${project.orgId}/projects/${project.id}/repositories/${repo.id}`;
  const run = async (work: () => Promise<void>) => {
    failed.value = null;
    try {
      await work();
    } catch (err) {
      failed.value = errorText(err);
    }
  };
  const makePrimary = () =>
    run(async () => {
      // Optimistic: the badge moves at once, back if refused.
      onChanged({ ...project, repositories: project.repositories.map((r) => ({ ...r, primary: r.id === repo.id })) });
      try {
        onChanged((await api<Change>("PATCH", base, { primary: true })).project);
      } catch (err) {
        onChanged(project);
        throw err;
      }
    });
  const move = () =>
    run(async () => {
      await api<Change>("POST", `/orgs/${project.orgId}/projects/${target.value}/repositories`, { fromProjectId: project.id, repositoryId: repo.id });
      onChanged((await api<ProjectRecord>("GET", `/orgs/${project.orgId}/projects/${project.id}`)));
      open.value = null;
    });
  const split = () =>
    run(async () => {
      const r = await api<{ project: ProjectRecord; from: ProjectRecord }>("POST", `${base}/split`, {});
      onChanged(r.from);
      navigate(`/projects/${r.project.id}`);
    });
  const remove = () =>
    run(async () => {
      onChanged((await api<Change>("DELETE", base)).project);
    });
  const toggle = (what: "edit" | "move" | "clone") => (open.value = open.value === what ? null : what);
  return (
    <li class="repository" data-id={repo.id} aria-label={repo.name}>
      <div class="repo-head">
        <strong class="repo-name">{repo.name}</strong>
        {repo.primary ? <span class="badge ok">primary</span> : null}
        <span class="chip branch" title="Branch">
          {repo.branch}
        </span>
        <code class="repo-url">{repo.url}</code>
      </div>
      {write ? (
        <div class="row actions">
          <button type="button" onClick={() => toggle("edit")} aria-expanded={open.value === "edit"}>
            Rename or branch
          </button>
          {!repo.primary ? (
            <button type="button" onClick={makePrimary}>
              Make primary
            </button>
          ) : null}
          <button type="button" onClick={() => toggle("clone")} aria-expanded={open.value === "clone"}>
            Clone to workers
          </button>
          {others.length ? (
            <button type="button" onClick={() => toggle("move")} aria-expanded={open.value === "move"}>
              Move
            </button>
          ) : null}
          {project.repositories.length > 1 ? (
            <ConfirmButton label="Split" question={`Make ${repo.name} a project of its own?`} confirmLabel="Yes, split" onConfirm={split} />
          ) : null}
          <ConfirmButton danger label="Remove" question={`Remove ${repo.name} from ${project.name}?`} confirmLabel="Yes, remove" onConfirm={remove} />
        </div>
      ) : null}
      <Problem text={failed.value} />
      {open.value === "edit" ? <EditRepository project={project} repo={repo} onChanged={onChanged} onClose={() => (open.value = null)} /> : null}
      {open.value === "move" ? (
        <div class="row move">
          <label>
            Move to{" "}
            <select value={target.value} onChange={(e) => (target.value = e.currentTarget.value)} aria-label="Project to move it to">
              <option value="">choose a project</option>
              <ProjectOptions projects={others} />
            </select>
          </label>
          <button type="button" onClick={move} disabled={!target.value}>
            Move
          </button>
        </div>
      ) : null}
      {open.value === "clone" ? <CloneToWorkers project={project} repo={repo} workers={workers} /> : null}
    </li>
  );
}

export function Repositories({ project, write, onChanged }: { project: ProjectRecord; write: boolean; onChanged: (p: ProjectRecord) => void }) {
  const others = useResource(() => listAll<ProjectRecord>(`/orgs/${project.orgId}/projects`).then((ps) => ps.filter((p) => p.id !== project.id)), [project.orgId, project.id]);
  const workers = useResource(() => listAll<WorkerRecord>(`/orgs/${project.orgId}/workers`), [project.orgId]);
  const repos = project.repositories;
  return (
    <Section id="repositories" title="Repositories">
      {repos.length === 0 ? (
        <Empty id="repositories-empty">{write ? "No repository yet: tasks run in an empty directory. Add the repository they should work on below." : "No repository yet."}</Empty>
      ) : (
        <ul class="repositories" id="repositories-list">
          {repos.map((r) => (
            <RepositoryRow key={r.id} project={project} repo={r} others={others.data.value ?? []} workers={workers.data.value ?? []} write={write && !project.archived} onChanged={onChanged} />
          ))}
        </ul>
      )}
      {write && !project.archived ? (
        <div class="add-repository">
          <AddByUrl project={project} onChanged={onChanged} />
          <FromGitHub project={project} onChanged={onChanged} />
        </div>
      ) : null}
    </Section>
  );
}

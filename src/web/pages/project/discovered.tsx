// Repositories the workers found in their workspaces that are in no project (SPEC §8): accept
// them into this project or each into a new one, or dismiss them for good.
import { useSignal } from "@preact/signals";
import { api, errorText, listAll } from "../../app/api";
import { navigate } from "../../app/router";
import type { Discovered as Found, ProjectRecord, WorkerRecord } from "../../app/records";
import { Empty, Problem, Section, useResource, When } from "../kit";

/** Any member may accept or dismiss them, viewers too (the API's permission). */
export function Discovered({ project, onChanged }: { project: ProjectRecord; onChanged: (p: ProjectRecord) => void }) {
  // Read again whenever the project's repositories change: one removed is found again.
  const held = project.repositories.map((r) => r.id).join(",");
  const found = useResource(() => listAll<Found>(`/orgs/${project.orgId}/discovered`), [project.orgId, held]);
  const workers = useResource(() => listAll<WorkerRecord>(`/orgs/${project.orgId}/workers`), [project.orgId]);
  const failed = useSignal<string | null>(null);
  const items = found.data.value;
  if (!items || items.length === 0) return null;
  const name = (id: string) => workers.data.value?.find((w) => w.id === id)?.name ?? id;
  const drop = (id: string) => (found.data.value = (found.data.value ?? []).filter((x) => x.id !== id));
  const act = async (d: Found, how: "here" | "new" | "dismiss") => {
    failed.value = null;
    const before = found.data.value;
    drop(d.id);
    try {
      if (how === "dismiss") await api("POST", `/orgs/${project.orgId}/discovered/dismiss`, { ids: [d.id] });
      else {
        const r = await api<{ projects: ProjectRecord[] }>("POST", `/orgs/${project.orgId}/discovered/accept`, how === "here" ? { ids: [d.id], projectId: project.id } : { ids: [d.id] });
        if (how === "here") onChanged(r.projects.find((p) => p.id === project.id) ?? project);
        else if (r.projects[0]) navigate(`/projects/${r.projects[0].id}`);
      }
    } catch (err) {
      found.data.value = before;
      failed.value = `${d.name}: ${errorText(err)}`;
    }
  };
  return (
    <Section id="discovered" title="Found on workers">
      <p class="muted">Git repositories in the workers' workspaces that no project holds yet.</p>
      <Problem text={failed.value} />
      {items.length === 0 ? <Empty>Nothing found.</Empty> : null}
      <ul class="list discovered">
        {items.map((d) => (
          <li key={d.id} data-id={d.id}>
            <div>
              <strong>{d.name}</strong> <code class="muted">{d.url}</code>
              {d.branch ? <span class="chip">{d.branch}</span> : null}
              <div class="muted small">
                on {d.workers.map((w) => `${name(w.workerId)} (${w.path})`).join(", ")}, last seen <When at={d.lastSeenAt} />
              </div>
            </div>
            <div class="row actions">
              <button type="button" onClick={() => act(d, "here")} disabled={project.archived}>
                Add to {project.name}
              </button>
              <button type="button" onClick={() => act(d, "new")}>
                New project
              </button>
              <button type="button" onClick={() => act(d, "dismiss")}>
                Dismiss
              </button>
            </div>
          </li>
        ))}
      </ul>
    </Section>
  );
}

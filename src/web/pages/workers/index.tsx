// /workers: the organization's workers: status, agents with versions, tools, labels, running
// tasks, last seen; approve, revoke, rename and labels (SPEC §7); how to pair a new one.
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { api, errorText, listAll } from "../../app/api";
import { canAdmin, orgId, role } from "../../app/session";
import type { Task } from "../../app/types";
import type { WorkerRecord, WorkerStatus } from "../../app/records";
import { CopyButton, Empty, FormEnd, LoadFailed, Problem, RoleNote, Section, useForm, useLiveResource, When } from "../kit";
import type { PageProps } from "../../app/routes";
import { ConfirmButton, Field, LiveLine, Page } from "../../components/ui";
import { useFollow } from "../../components/hooks";
import "./workers.css";

const STATUS_TEXT: Record<WorkerStatus, string> = { online: "online", offline: "offline", pending_approval: "waiting for approval", revoked: "revoked" };
// Pending first (someone has to act), then the ones working, then the rest.
const ORDER: Record<WorkerStatus, number> = { pending_approval: 0, online: 1, offline: 2, revoked: 3 };

function PairHelp() {
  const command = `ao worker --server ${location.origin}`;
  return (
    <Section id="pair-help" title="Pair a new worker">
      <p>On the machine that should run tasks, with git and a coding agent (claude, codex) installed:</p>
      <div class="command">
        <code id="pair-command">{command}</code>
        <CopyButton text={command} />
      </div>
      <p class="muted">
        It prints a link and a code: open the link, sign in and approve. Add <code>--labels gpu,linux</code> to describe it, <code>--exec 'make test'</code> to run
        a command instead of an agent.
      </p>
    </Section>
  );
}

// Separated by commas: a label typed with a space in it stays one, for the server to refuse by name.
const labelsOf = (text: string) =>
  text
    .split(",")
    .map((l) => l.trim())
    .filter(Boolean);

function Editor({ worker, onSaved, onClose }: { worker: WorkerRecord; onSaved: (w: WorkerRecord) => void; onClose: () => void }) {
  const name = useSignal(worker.name);
  const labels = useSignal(worker.labels.join(", "));
  const form = useForm(["name", "labels"]);
  const save = (e: Event) => {
    e.preventDefault();
    const sent = labelsOf(labels.value);
    // The API names the list's item (labels.2); the field says which label that is.
    let refused: string | undefined;
    return form
      .submit(
        async () => onSaved(await api<WorkerRecord>("PATCH", `/orgs/${worker.orgId}/workers/${worker.id}`, { name: name.value, labels: sent })),
        (f) => {
          const item = /^labels\.(\d+)$/.exec(f);
          if (item) refused ??= sent[Number(item[1])];
          return f.startsWith("labels") ? "labels" : f;
        },
      )
      .then((ok) => {
        if (ok) return onClose();
        const said = form.fields.value.labels;
        if (refused !== undefined && said) form.fields.value = { ...form.fields.value, labels: `"${refused}" ${said}` };
      });
  };
  return (
    <form onSubmit={save} class="grid-form worker-edit">
      <Field id={`worker-name-${worker.id}`} label="Worker name" error={form.fields.value.name}>
        <input id={`worker-name-${worker.id}`} name="name" value={name.value} onInput={(e) => (name.value = e.currentTarget.value)} required maxLength={100} />
      </Field>
      <Field id={`worker-labels-${worker.id}`} label="Labels" error={form.fields.value.labels} hint="Separated by commas: lower-case letters, digits and . _ : -">
        <input id={`worker-labels-${worker.id}`} name="labels" value={labels.value} onInput={(e) => (labels.value = e.currentTarget.value)} />
      </Field>
      <FormEnd form={form} label="Save" onCancel={onClose} />
    </form>
  );
}

function WorkerCard({ worker, manage, titles, onChange }: { worker: WorkerRecord; manage: boolean; titles: Map<string, string>; onChange: (w: WorkerRecord) => void }) {
  const editing = useSignal(false);
  const failed = useSignal<string | null>(null);
  const act = async (method: string, path: string, optimistic: Partial<WorkerRecord>) => {
    failed.value = null;
    onChange({ ...worker, ...optimistic });
    try {
      onChange(await api<WorkerRecord>(method, `/orgs/${worker.orgId}/workers/${worker.id}${path}`));
    } catch (err) {
      onChange(worker);
      failed.value = errorText(err);
    }
  };
  const revoked = worker.status === "revoked";
  return (
    <article class={`worker-card status-${worker.status}`} data-id={worker.id} aria-label={worker.name}>
      <header class="worker-head">
        <h3 class="worker-name">{worker.name}</h3>
        <span class={`badge worker-status ${worker.status}`}>{STATUS_TEXT[worker.status]}</span>
        <span class="spacer" />
        {manage && worker.status === "pending_approval" ? (
          <button type="button" class="primary" onClick={() => act("POST", "/approve", { status: "offline", approvedAt: new Date().toISOString() })}>
            Approve
          </button>
        ) : null}
        {manage && !revoked ? (
          <button type="button" onClick={() => (editing.value = !editing.value)} aria-expanded={editing.value}>
            Edit
          </button>
        ) : null}
        {manage && !revoked ? (
          <ConfirmButton danger
            label="Revoke"
            question={`Revoke ${worker.name}? Its credential stops at once and its running tasks go back to the queue.`}
            confirmLabel="Yes, revoke"
            onConfirm={() => act("DELETE", "", { status: "revoked", revokedAt: new Date().toISOString() })}
          />
        ) : null}
      </header>
      <Problem text={failed.value} />
      {editing.value ? <Editor worker={worker} onSaved={onChange} onClose={() => (editing.value = false)} /> : null}
      <dl class="facts-grid">
        <div>
          <dt>Host</dt>
          <dd>{worker.hostname}</dd>
        </div>
        <div>
          <dt>Last seen</dt>
          <dd>
            <When at={worker.lastSeenAt} />
          </dd>
        </div>
        <div>
          <dt>Agents</dt>
          <dd class="agents">
            {worker.agents.length === 0 ? <span class="muted">none reported</span> : null}
            {worker.agents.map((a) => (
              <span class="chip" key={a.name}>
                {a.name}
                {a.version ? <span class="muted"> {a.version}</span> : null}
                {a.command ? <span class="muted"> ({a.command})</span> : null}
              </span>
            ))}
          </dd>
        </div>
        <div>
          <dt>Tools</dt>
          <dd class="tools">
            {worker.tools.length === 0 ? <span class="muted">none reported</span> : null}
            {worker.tools.map((t) => (
              <span class="chip" key={t.name} title={t.version ? `${t.name} ${t.version}` : t.name}>
                {t.name}
                {t.version ? <span class="muted"> {t.version}</span> : null}
              </span>
            ))}
          </dd>
        </div>
        <div>
          <dt>Labels</dt>
          <dd class="labels">
            {worker.labels.length === 0 ? <span class="muted">none</span> : null}
            {worker.labels.map((l) => (
              <span class="chip label" key={l}>
                {l}
              </span>
            ))}
          </dd>
        </div>
        <div>
          <dt>Running</dt>
          <dd class="running">
            {worker.runningTaskIds.length === 0 ? <span class="muted">idle (capacity {worker.capacity})</span> : null}
            {worker.runningTaskIds.map((id) => (
              <a key={id} href={`/tasks/${id}`} class="chip">
                {titles.get(id) ?? id}
              </a>
            ))}
          </dd>
        </div>
        <div>
          <dt>Version</dt>
          <dd>{worker.version ?? <span class="muted">unknown</span>}</dd>
        </div>
        {worker.providers.length ? (
          <div>
            <dt>Keys</dt>
            <dd>{worker.providers.join(", ")}</dd>
          </div>
        ) : null}
      </dl>
    </article>
  );
}

/** The states in which a task stays with its worker (a worker's runningTaskIds). */
const HELD = ["running", "needs_input", "needs_approval", "paused"] as const;
const isHeld = (t: Task) => (HELD as readonly string[]).includes(t.status);

/** The workers with a task's newer record applied: its worker holds it while it is in a held state, no worker otherwise. */
function holding(workers: WorkerRecord[], t: Task): WorkerRecord[] {
  const holder = isHeld(t) ? t.workerId : null;
  let changed = false;
  const next = workers.map((w) => {
    const has = w.runningTaskIds.includes(t.id);
    if (has === (w.id === holder)) return w;
    changed = true;
    return { ...w, runningTaskIds: has ? w.runningTaskIds.filter((x) => x !== t.id) : [...w.runningTaskIds, t.id] };
  });
  return changed ? next : workers;
}

export function WorkersPage(_: PageProps) {
  const id = orgId.value;
  // Both follow the socket's records between their loads (useLiveResource: a load answered before
  // a record heard meanwhile does not undo it).
  const workers = useLiveResource(() => (id ? listAll<WorkerRecord>(`/orgs/${id}/workers`) : Promise.resolve([])), [id]);
  // The titles of the tasks workers hold: running, and waiting on a person or paused (still theirs).
  const running = useLiveResource(
    () =>
      id
        ? Promise.all(HELD.map((status) => listAll<Task>(`/orgs/${id}/tasks?status=${status}`, 200))).then((lists) => new Map(lists.flat().map((t) => [t.id, t.title])))
        : Promise.resolve(new Map<string, string>()),
    [id],
  );
  const manage = canAdmin(role.value);
  // A worker that connects, goes or is changed comes live (worker.updated); the titles of what it
  // holds are read again when it holds a task not known here.
  /** A newer record of a worker (from the socket, or an answer to this page), in its place; a new one is added. */
  const update = (w: WorkerRecord) => workers.change((known) => (known.some((x) => x.id === w.id) ? known.map((x) => (x.id === w.id ? w : x)) : [...known, w]));
  const heard = (w: WorkerRecord) => {
    update(w);
    if (workers.data.value && w.runningTaskIds.some((t) => !running.data.value?.has(t))) void running.reload();
  };
  const live = useFollow(id, null, {
    subscribed: () => {
      void workers.reload();
      void running.reload();
    },
    worker: heard,
    // A task claimed, handed back or ended: its worker's tasks and their titles follow.
    task: (t) => {
      workers.change((known) => holding(known, t));
      if (t.workerId && isHeld(t)) running.change((titles) => (titles.get(t.id) === t.title ? titles : new Map(titles).set(t.id, t.title)));
    },
  });
  // Last seen changes without a message: look again every 15 s while the page is open.
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") {
        void workers.reload();
        void running.reload();
      }
    }, 15_000);
    return () => clearInterval(timer);
  }, [id]);
  if (!id) return <Empty>You are in no organization yet.</Empty>;
  const list = [...(workers.data.value ?? [])].sort((a, b) => ORDER[a.status] - ORDER[b.status]);
  return (
    <Page title="Workers" id="workers-page" actions={<LiveLine state={live.value} />}>
      <p class="muted" id="workers-summary">
        {list.filter((w) => w.status === "online").length} online · {list.filter((w) => w.status === "pending_approval").length} waiting for approval
      </p>
      {!manage ? <RoleNote>Only owners and admins approve, revoke or change workers.</RoleNote> : null}
      {workers.error.value && !workers.data.value ? <LoadFailed error={workers.error.value} retry={workers.reload} /> : null}
      {workers.data.value && list.length === 0 ? (
        <Empty id="workers-empty">No worker yet. Run the command below on a machine to pair one; it shows up here.</Empty>
      ) : null}
      <div class="workers" id="workers-list">
        {list.map((w) => (
          <WorkerCard key={w.id} worker={w} manage={manage} titles={running.data.value ?? new Map()} onChange={update} />
        ))}
      </div>
      <PairHelp />
    </Page>
  );
}

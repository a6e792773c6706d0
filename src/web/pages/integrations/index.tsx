// /integrations: where tasks come from and where their outcome goes (SPEC §9): GitHub, GitLab
// and signed JSON integrations (the secret shown once), their hook and callback URLs, enable and
// disable, a new secret, the delivery log; and the completion webhook plugin.
import { useSignal } from "@preact/signals";
import { api, errorText, listAll } from "../../app/api";
import { canAdmin, orgId, role } from "../../app/session";
import type { Integration, IntegrationKind, ProjectRecord } from "../../app/records";
import { CopyButton, Empty, FormEnd, LoadFailed, Problem, ProjectOptions, RoleNote, Section, useForm, useResource } from "../kit";
import type { PageProps } from "../../app/routes";
import { ConfirmButton, Field, Page, SecretOnce } from "../../components/ui";
import { Deliveries } from "./deliveries";
import { CompletionWebhook } from "./completion-webhook";
import "./integrations.css";

export const KIND_NAME: Record<IntegrationKind, string> = { github: "GitHub", gitlab: "GitLab", signed_json: "Signed JSON" };

/** How the sender is set up, per kind: what to paste where. */
function SetupHint({ i }: { i: Integration }) {
  if (i.kind === "github")
    return (
      <p class="muted small">
        In the repository's Settings → Webhooks: Payload URL above, content type application/json, the secret, events Issues, Issue comments and Pull requests. Label an
        issue <code>{i.config.label ?? "ao"}</code> or comment <code>{i.config.command ?? "/ao"} …</code> to make a task.
      </p>
    );
  if (i.kind === "gitlab")
    return (
      <p class="muted small">
        In the project's Settings → Webhooks: the URL above, the secret as Secret token, triggers Issues, Comments and Merge requests. Label{" "}
        <code>{i.config.label ?? "ao"}</code> or comment <code>{i.config.command ?? "/ao"} …</code>.
      </p>
    );
  return (
    <p class="muted small">
      POST {"{title, prompt}"} as JSON to the URL above with <code>X-Svc-Signature: t=UNIX,v1=HMAC-SHA256(secret, "t.body")</code>. Callbacks go to the callback URL when the
      task completes, fails or needs attention.
    </p>
  );
}

interface Draft {
  kind: IntegrationKind;
  name: string;
  projectId: string;
  callbackUrl: string;
  label: string;
  command: string;
}

const bodyOf = (d: Draft, creating: boolean) => {
  const body: Record<string, unknown> = { name: d.name, projectId: d.projectId };
  if (creating) body.kind = d.kind;
  if (d.kind === "signed_json") body.callbackUrl = d.callbackUrl.trim() || null;
  else {
    const config: Record<string, string> = {};
    if (d.label.trim()) config.label = d.label.trim();
    if (d.command.trim()) config.command = d.command.trim();
    body.config = config;
  }
  return body;
};
const fieldOf = (f: string) => (f.startsWith("config.") ? f.slice("config.".length) : f);

function IntegrationForm({ idp, projects, initial, creating, onSaved, onCancel }: { idp: string; projects: ProjectRecord[]; initial: Draft; creating: boolean; onSaved: (i: Integration & { secret?: string }) => void; onCancel?: () => void }) {
  const d = useSignal<Draft>(initial);
  // The fields shown now: the kind only when creating, then those of the kind chosen.
  const form = useForm([...(creating ? (["kind"] as const) : []), "name", "projectId", ...(d.value.kind === "signed_json" ? (["callbackUrl"] as const) : (["label", "command"] as const))]);
  const set = (patch: Partial<Draft>) => (d.value = { ...d.value, ...patch });
  const submit = (e: Event) => {
    e.preventDefault();
    return form.submit(async () => {
      const saved = creating
        ? await api<Integration & { secret: string }>("POST", `/orgs/${orgId.value}/integrations`, bodyOf(d.value, true))
        : await api<Integration>("PATCH", `/orgs/${orgId.value}/integrations/${(initial as Draft & { id?: string }).id}`, bodyOf(d.value, false));
      onSaved(saved);
      if (creating) d.value = { ...initial };
    }, fieldOf);
  };
  const v = d.value;
  return (
    <form onSubmit={submit} class="grid-form integration-form">
      {creating ? (
        <Field id={`${idp}-kind`} label="Kind" error={form.fields.value.kind}>
          <select id={`${idp}-kind`} name="kind" value={v.kind} onChange={(e) => set({ kind: e.currentTarget.value as IntegrationKind })}>
            {(Object.keys(KIND_NAME) as IntegrationKind[]).map((k) => (
              <option key={k} value={k}>
                {KIND_NAME[k]}
              </option>
            ))}
          </select>
        </Field>
      ) : null}
      <Field id={`${idp}-name`} label="Name" error={form.fields.value.name}>
        <input id={`${idp}-name`} name="name" value={v.name} onInput={(e) => set({ name: e.currentTarget.value })} required maxLength={100} placeholder={v.kind === "signed_json" ? "CI pipeline" : "shop repository"} />
      </Field>
      <Field id={`${idp}-projectId`} label="Project" error={form.fields.value.projectId} hint="Tasks it makes go here">
        <select id={`${idp}-projectId`} name="projectId" value={v.projectId} onChange={(e) => set({ projectId: e.currentTarget.value })} required>
          <ProjectOptions projects={projects} />
        </select>
      </Field>
      {v.kind === "signed_json" ? (
        <Field id={`${idp}-callbackUrl`} label="Callback URL" error={form.fields.value.callbackUrl} hint="Optional: where the outcome of its tasks is POSTed">
          <input id={`${idp}-callbackUrl`} name="callbackUrl" type="url" value={v.callbackUrl} onInput={(e) => set({ callbackUrl: e.currentTarget.value })} placeholder="https://ci.example.com/ao" />
        </Field>
      ) : (
        <>
          <Field id={`${idp}-label`} label="Label" error={form.fields.value.label} hint="Issues and pull requests with it become tasks (default ao)">
            <input id={`${idp}-label`} name="label" value={v.label} onInput={(e) => set({ label: e.currentTarget.value })} maxLength={100} placeholder="ao" />
          </Field>
          <Field id={`${idp}-command`} label="Comment command" error={form.fields.value.command} hint="Comments starting with it become tasks (default /ao)">
            <input id={`${idp}-command`} name="command" value={v.command} onInput={(e) => set({ command: e.currentTarget.value })} maxLength={50} placeholder="/ao" />
          </Field>
        </>
      )}
      <FormEnd form={form} label={creating ? "Create integration" : "Save"} primary onCancel={onCancel} />
    </form>
  );
}

function IntegrationCard({
  i,
  projects,
  onChange,
  onRotated,
  onDeleted,
}: {
  i: Integration;
  projects: ProjectRecord[];
  onChange: (i: Integration) => void;
  /** Its secret was replaced: the one shown at creation no longer works. */
  onRotated: () => void;
  onDeleted: () => void;
}) {
  const secret = useSignal<string | null>(null);
  const editing = useSignal(false);
  const log = useSignal(false);
  const failed = useSignal<string | null>(null);
  const base = `/orgs/${i.orgId}/integrations/${i.id}`;
  const toggle = async (enabled: boolean) => {
    failed.value = null;
    onChange({ ...i, enabled });
    try {
      onChange(await api<Integration>("PATCH", base, { enabled }));
    } catch (err) {
      onChange(i);
      failed.value = errorText(err);
    }
  };
  const rotate = async () => {
    failed.value = null;
    try {
      const r = await api<Integration & { secret: string }>("POST", `${base}/rotate-secret`);
      secret.value = r.secret;
      const { secret: _s, ...view } = r;
      onChange(view);
      onRotated();
    } catch (err) {
      failed.value = errorText(err);
    }
  };
  const remove = async () => {
    failed.value = null;
    try {
      await api("DELETE", base);
      onDeleted();
    } catch (err) {
      failed.value = errorText(err);
    }
  };
  const project = projects.find((p) => p.id === i.projectId);
  return (
    <article class={`integration-card${i.enabled ? "" : " disabled"}`} data-id={i.id} aria-label={i.name}>
      <header class="row">
        <h3>{i.name}</h3>
        <span class="badge">{KIND_NAME[i.kind]}</span>
        <span class="muted">→ {project ? <a href={`/projects/${project.id}`}>{project.name}</a> : i.projectId}</span>
        <span class="spacer" />
        <label class="switch">
          <input type="checkbox" checked={i.enabled} onChange={(e) => toggle(e.currentTarget.checked)} aria-label={`${i.name} enabled`} />
          <span>{i.enabled ? "Enabled" : "Disabled"}</span>
        </label>
      </header>
      {secret.value ? <SecretOnce id={`rotated-${i.id}`} label="New secret. The old one stopped working." value={secret.value} /> : null}
      <dl class="facts-grid">
        <div class="wide">
          <dt>Hook URL</dt>
          <dd class="url">
            <code class="hook-url">{i.hookUrl}</code> <CopyButton text={i.hookUrl} />
          </dd>
        </div>
        <div>
          <dt>Secret</dt>
          <dd>
            <code>…{i.secretLast4}</code>
          </dd>
        </div>
        {i.kind === "signed_json" ? (
          <div class="wide">
            <dt>Callback URL</dt>
            <dd class="url">
              {i.callbackUrl ? <code class="callback-url">{i.callbackUrl}</code> : <span class="muted">none</span>}
              {i.callbackDisabledAt ? <span class="badge bad">stopped: the receiver answered 410 Gone; save the URL again to resume</span> : null}
            </dd>
          </div>
        ) : (
          <div>
            <dt>Triggers</dt>
            <dd>
              label <code>{i.config.label ?? "ao"}</code>, comment <code>{i.config.command ?? "/ao"}</code>
            </dd>
          </div>
        )}
      </dl>
      <SetupHint i={i} />
      <div class="row actions">
        <button type="button" onClick={() => (editing.value = !editing.value)} aria-expanded={editing.value}>
          Edit
        </button>
        <ConfirmButton label="Rotate secret" question="Make a new secret? The old one stops at once." confirmLabel="Yes, rotate" onConfirm={rotate} />
        {i.kind === "signed_json" ? (
          <button type="button" onClick={() => (log.value = !log.value)} aria-expanded={log.value}>
            {log.value ? "Hide deliveries" : "Deliveries"}
          </button>
        ) : null}
        <ConfirmButton danger label="Delete" question={`Delete ${i.name}? Its tasks stay.`} confirmLabel="Yes, delete" onConfirm={remove} />
      </div>
      <Problem text={failed.value} />
      {editing.value ? (
        <IntegrationForm
          idp={`integration-${i.id}`}
          projects={projects}
          creating={false}
          initial={{ id: i.id, kind: i.kind, name: i.name, projectId: i.projectId, callbackUrl: i.callbackUrl ?? "", label: i.config.label ?? "", command: i.config.command ?? "" } as Draft}
          onSaved={(x) => {
            onChange(x);
            editing.value = false;
          }}
          onCancel={() => (editing.value = false)}
        />
      ) : null}
      {log.value ? <Deliveries base={`${base}/deliveries`} /> : null}
    </article>
  );
}

export function IntegrationsPage(_: PageProps) {
  const id = orgId.value;
  const manage = canAdmin(role.value);
  const integrations = useResource(() => (id && manage ? listAll<Integration>(`/orgs/${id}/integrations`) : Promise.resolve([])), [id, manage]);
  const projects = useResource(() => (id ? listAll<ProjectRecord>(`/orgs/${id}/projects`) : Promise.resolve([])), [id]);
  const created = useSignal<(Integration & { secret: string }) | null>(null);
  if (!id) return <Empty>You are in no organization yet.</Empty>;
  if (!manage) {
    return (
      <Page title="Integrations" id="integrations-page">
        <RoleNote>Only owners and admins see and manage integrations (they hold secrets). Ask one of them to connect GitHub, GitLab or your CI.</RoleNote>
      </Page>
    );
  }
  const list = integrations.data.value;
  const ps = projects.data.value ?? [];
  const set = (i: Integration) => (integrations.data.value = (integrations.data.value ?? []).map((x) => (x.id === i.id ? i : x)));
  // The secret shown at creation stops working when the integration's secret is rotated or it is deleted.
  const forgetCreated = (id: string) => {
    if (created.value?.id === id) created.value = null;
  };
  return (
    <Page title="Integrations" id="integrations-page">
      <p class="muted">Turn issues, comments, pull requests and CI requests into tasks, and tell the sender how they ended.</p>
      <Section id="new-integration" title="New integration">
        {projects.data.value && ps.length === 0 ? (
          <Empty>
            An integration makes tasks in a project: <a href="/projects">create a project</a> first.
          </Empty>
        ) : null}
        {ps.length > 0 ? (
          <IntegrationForm
            idp="integration"
            key={ps[0]!.id}
            projects={ps}
            creating
            initial={{ kind: "github", name: "", projectId: ps[0]!.id, callbackUrl: "", label: "", command: "" }}
            onSaved={(i) => {
              created.value = i as Integration & { secret: string };
              const { secret: _s, ...view } = i;
              integrations.data.value = [view, ...(integrations.data.value ?? [])];
            }}
          />
        ) : null}
        {created.value ? (
          <div id="created-integration">
            <SecretOnce id="integration-secret" label={`${created.value.name} created. Its secret:`} value={created.value.secret} />
            <p>
              Send to <code>{created.value.hookUrl}</code> <CopyButton text={created.value.hookUrl} label="Copy URL" />
            </p>
          </div>
        ) : null}
      </Section>
      <Section id="integrations" title="Integrations">
        {integrations.error.value && !list ? <LoadFailed error={integrations.error.value} retry={integrations.reload} /> : null}
        {list && list.length === 0 ? <Empty id="integrations-empty">No integration yet. Create one above, then paste its URL and secret into GitHub, GitLab or your CI.</Empty> : null}
        {list?.map((i) => (
          <IntegrationCard
            key={i.id}
            i={i}
            projects={ps}
            onChange={set}
            onRotated={() => forgetCreated(i.id)}
            onDeleted={() => {
              forgetCreated(i.id);
              integrations.data.value = (integrations.data.value ?? []).filter((x) => x.id !== i.id);
            }}
          />
        ))}
      </Section>
      <CompletionWebhook orgId={id} projects={ps} />
    </Page>
  );
}

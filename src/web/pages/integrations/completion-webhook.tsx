// The completion webhook plugin (SPEC §9): one URL that hears about every task of the
// organization (or of one project) that completes, fails or needs attention, signed like signed JSON.
import { useSignal } from "@preact/signals";
import { api, ApiError, errorText } from "../../app/api";
import type { Plugin, ProjectRecord } from "../../app/records";
import { LoadFailed, Problem, ProjectOptions, Section, useForm, useResource } from "../kit";
import { ConfirmButton, Field, SecretOnce } from "../../components/ui";
import { Deliveries } from "./deliveries";

export function CompletionWebhook({ orgId, projects }: { orgId: string; projects: ProjectRecord[] }) {
  const base = `/orgs/${orgId}/plugins/completion-webhook`;
  // 404: not set up yet (null), which is not an error.
  const plugin = useResource(
    () =>
      api<Plugin>("GET", base).catch((err) => {
        if (err instanceof ApiError && err.status === 404) return null;
        throw err;
      }),
    [orgId],
  );
  const secret = useSignal<string | null>(null);
  const log = useSignal(false);
  const failed = useSignal<string | null>(null);
  const current = plugin.data.value;
  return (
    <Section id="completion-webhook" title="Completion webhook">
      <p class="muted">
        POSTs the outcome of every task {current?.projectId ? "of one project" : "of the organization"} that completes, fails or needs attention, signed with{" "}
        <code>X-Svc-Signature</code>.
      </p>
      {plugin.error.value && current === undefined ? <LoadFailed error={plugin.error.value} retry={plugin.reload} /> : null}
      {secret.value ? <SecretOnce id="plugin-secret" label="The webhook's secret." value={secret.value} /> : null}
      {current !== undefined ? (
        <PluginForm
          key={current?.id ?? "new"}
          base={base}
          current={current}
          projects={projects}
          onSaved={(p, s) => {
            plugin.data.value = p;
            if (s) secret.value = s;
          }}
        />
      ) : null}
      {current ? (
        <div class="row actions">
          <ConfirmButton
            label="Rotate secret"
            question="Make a new secret? The old one stops at once."
            confirmLabel="Yes, rotate"
            onConfirm={async () => {
              failed.value = null;
              try {
                const r = await api<Plugin & { secret: string }>("POST", `${base}/rotate-secret`);
                secret.value = r.secret;
                plugin.data.value = { ...current, secretLast4: r.secretLast4 };
              } catch (err) {
                failed.value = errorText(err);
              }
            }}
          />
          <button type="button" onClick={() => (log.value = !log.value)} aria-expanded={log.value}>
            {log.value ? "Hide deliveries" : "Deliveries"}
          </button>
          <ConfirmButton danger
            label="Remove"
            question="Remove the completion webhook?"
            confirmLabel="Yes, remove"
            onConfirm={async () => {
              failed.value = null;
              try {
                await api("DELETE", base);
                plugin.data.value = null;
                log.value = false;
              } catch (err) {
                failed.value = errorText(err);
              }
            }}
          />
        </div>
      ) : null}
      <Problem text={failed.value} />
      {current && log.value ? <Deliveries base={`${base}/deliveries`} /> : null}
    </Section>
  );
}

function PluginForm({ base, current, projects, onSaved }: { base: string; current: Plugin | null; projects: ProjectRecord[]; onSaved: (p: Plugin, secret?: string) => void }) {
  const url = useSignal(current?.url ?? "");
  const projectId = useSignal(current?.projectId ?? "");
  const enabled = useSignal(current?.enabled ?? true);
  const form = useForm(["url", "projectId"]);
  const save = (e: Event) => {
    e.preventDefault();
    return form.submit(async () => {
      const r = await api<Plugin & { secret?: string }>("PUT", base, { url: url.value.trim(), projectId: projectId.value || null, enabled: enabled.value });
      const { secret, ...view } = r;
      onSaved(view, secret);
    });
  };
  return (
    <form onSubmit={save} class="grid-form" id="plugin-form">
      <Field id="plugin-url" label="Webhook URL" error={form.fields.value.url}>
        <input id="plugin-url" name="url" type="url" value={url.value} onInput={(e) => (url.value = e.currentTarget.value)} required maxLength={2048} placeholder="https://chat.example.com/hooks/ao" />
      </Field>
      <Field id="plugin-projectId" label="Tasks of" error={form.fields.value.projectId}>
        <select id="plugin-projectId" name="projectId" value={projectId.value} onChange={(e) => (projectId.value = e.currentTarget.value)}>
          <option value="">every project</option>
          <ProjectOptions projects={projects} />
        </select>
      </Field>
      <label class="check">
        <input type="checkbox" checked={enabled.value} onChange={(e) => (enabled.value = e.currentTarget.checked)} />
        <span>Enabled</span>
      </label>
      <div class="form-actions">
        <button type="submit" disabled={form.busy.value}>
          {current ? "Save webhook" : "Set up webhook"}
        </button>
        {current ? <span class="muted">secret …{current.secretLast4}</span> : null}
      </div>
      <Problem text={form.error.value} />
    </form>
  );
}

// What agents know and the rules they follow on the project: the knowledge text and a form over
// its policy (agent permissions, budgets, pull requests, preferred agent). The server checks the
// policy; its complaints appear next to the field they name (policy.agent.allow.2 → Allow).
import { useSignal } from "@preact/signals";
import { api } from "../../app/api";
import type { ProjectRecord } from "../../app/records";
import { Problem, Section, useForm } from "../kit";
import { Field } from "../../components/ui";
import { formOf, policyField, policyOf, type PolicyForm } from "./policy";

const AGENTS = ["claude", "codex", "exec"];

export function Knowledge({ project, write, onChanged }: { project: ProjectRecord; write: boolean; onChanged: (p: ProjectRecord) => void }) {
  const knowledge = useSignal(project.knowledge);
  const policy = useSignal<PolicyForm>(formOf(project.policy));
  const saved = useSignal(false);
  const form = useForm(["knowledge", "allow", "ask", "deny", "default", "perTaskUsd", "perDayUsd", "pullRequests", "preferredAgent", "policy"]);
  const set = (patch: Partial<PolicyForm>) => ((policy.value = { ...policy.value, ...patch }), (saved.value = false));
  const save = (e: Event) => {
    e.preventDefault();
    saved.value = false;
    return form
      .submit(
        async () => {
          const p = await api<ProjectRecord>("PATCH", `/orgs/${project.orgId}/projects/${project.id}`, { knowledge: knowledge.value, policy: policyOf(policy.value, project.policy) });
          onChanged(p);
          policy.value = formOf(p.policy);
        },
        (f) => (f.startsWith("policy") ? policyField(f) : f),
      )
      .then((ok) => (saved.value = ok));
  };
  const v = policy.value;
  const errors = form.fields.value;
  const ro = !write;
  const rules = (key: "allow" | "ask" | "deny", label: string, hint: string) => (
    <Field id={`policy-${key}`} label={label} error={errors[key]} hint={hint}>
      <textarea id={`policy-${key}`} name={`agent-${key}`} rows={3} value={v[key]} readOnly={ro} onInput={(e) => set({ [key]: e.currentTarget.value })} spellcheck={false} class="mono" />
    </Field>
  );
  return (
    <Section id="knowledge" title="Knowledge and policy">
      <form onSubmit={save} id="policy-form" class="policy-form">
        <Field id="policy-knowledge" label="Knowledge" error={errors.knowledge} hint="Handed to every agent working on the project: conventions, how to test, what not to touch.">
          <textarea id="policy-knowledge" name="knowledge" rows={6} value={knowledge.value} readOnly={ro} onInput={(e) => ((knowledge.value = e.currentTarget.value), (saved.value = false))} maxLength={100_000} />
        </Field>
        <fieldset>
          <legend>Agent permissions</legend>
          <p class="muted small">
            One rule a line: a kind (<code>read</code>, <code>search</code>, <code>edit</code>, <code>shell</code>, <code>network</code>, <code>other</code>) with an optional{" "}
            <code>:pattern</code> (<code>shell:bun test*</code>), or <code>tool:NAME</code>. Deny wins over ask, ask over allow.
          </p>
          <div class="rules">
            {rules("allow", "Allow", "Done without asking")}
            {rules("ask", "Ask", "A person approves each")}
            {rules("deny", "Deny", "Refused")}
          </div>
          <Field id="policy-default" label="Anything else" error={errors.default}>
            <select id="policy-default" name="default" value={v.default} disabled={ro} onChange={(e) => set({ default: e.currentTarget.value as PolicyForm["default"] })}>
              <option value="">built-in rules (read and edit in the checkout allowed; shell and network ask)</option>
              <option value="allow">allow</option>
              <option value="ask">ask</option>
              <option value="deny">deny</option>
            </select>
          </Field>
        </fieldset>
        <fieldset class="grid-form">
          <legend>Budgets and results</legend>
          <Field id="policy-perTaskUsd" label="Per task (US$)" error={errors.perTaskUsd} hint="Over it, the task pauses and asks to continue">
            <input id="policy-perTaskUsd" name="perTaskUsd" inputMode="decimal" value={v.perTaskUsd} readOnly={ro} onInput={(e) => set({ perTaskUsd: e.currentTarget.value })} placeholder="no limit" />
          </Field>
          <Field id="policy-perDayUsd" label="Per day (US$)" error={errors.perDayUsd} hint="Over it, no new task starts until tomorrow (UTC)">
            <input id="policy-perDayUsd" name="perDayUsd" inputMode="decimal" value={v.perDayUsd} readOnly={ro} onInput={(e) => set({ perDayUsd: e.currentTarget.value })} placeholder="no limit" />
          </Field>
          <Field id="policy-pullRequests" label="Pull requests" error={errors.pullRequests} hint="For repositories of the GitHub app">
            <select id="policy-pullRequests" name="pullRequests" value={v.pullRequests} disabled={ro} onChange={(e) => set({ pullRequests: e.currentTarget.value as PolicyForm["pullRequests"] })}>
              <option value="open">open a pull request</option>
              <option value="draft">open a draft</option>
              <option value="off">only push the branch</option>
            </select>
          </Field>
          <Field id="policy-preferredAgent" label="Preferred agent" error={errors.preferredAgent}>
            <select id="policy-preferredAgent" name="preferredAgent" value={v.preferredAgent} disabled={ro} onChange={(e) => set({ preferredAgent: e.currentTarget.value })}>
              <option value="">any the worker has</option>
              {AGENTS.concat(v.preferredAgent && !AGENTS.includes(v.preferredAgent) ? [v.preferredAgent] : []).map((a) => (
                <option key={a} value={a}>
                  {a}
                </option>
              ))}
            </select>
          </Field>
        </fieldset>
        {write ? (
          <div class="form-actions">
            <button type="submit" class="primary" disabled={form.busy.value}>
              Save knowledge and policy
            </button>
            {saved.value ? (
              <span class="ok" role="status">
                Saved
              </span>
            ) : null}
          </div>
        ) : null}
        <Problem text={errors.policy ?? form.error.value} />
      </form>
    </Section>
  );
}

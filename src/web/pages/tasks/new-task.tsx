// The New task form (SPEC §5): project by name, title, prompt, priority and kind (a review also
// names its base and head). The server judges the input; its complaints show beside the fields,
// and one about a field the form does not show is said below it, naming the field.
import { useSignal } from "@preact/signals";
import { useEffect, useRef } from "preact/hooks";
import { api } from "../../app/api";
import { navigate } from "../../app/router";
import { KINDS, PRIORITIES, type Project, type Role, type Task } from "../../app/types";
import { Field, submit } from "../../components/ui";
import { Problem, useForm } from "../kit";

/** The fields this form shows a complaint beside: a review's base and head only while they are shown. */
type Shown = "projectId" | "title" | "prompt" | "priority" | "kind" | "review.base" | "review.head";
const ALWAYS: Shown[] = ["projectId", "title", "prompt", "priority", "kind"];
const REVIEW: Shown[] = [...ALWAYS, "review.base", "review.head"];
/** A complaint about the review as a whole shows beside its base. */
const fieldOf = (f: string) => (f === "review" ? "review.base" : f);

/**
 * `projects`: the live ones; `filtered`: the project the list is filtered by, the form's project
 * until the person picks one (a project's "its tasks" link leads to such a list).
 */
export function NewTask({ orgId, role, projects, filtered, onClose }: { orgId: string; role: Role | null; projects: Project[]; filtered: string; onClose: () => void }) {
  // projectId "": not picked yet.
  const v = useSignal({ projectId: "", title: "", prompt: "", priority: "MEDIUM", kind: "task", base: "", head: "" });
  const offered = (id: string) => projects.some((p) => p.id === id);
  const projectId = offered(v.value.projectId) ? v.value.projectId : offered(filtered) ? filtered : (projects[0]?.id ?? "");
  const review = v.value.kind === "review";
  const form = useForm<Shown>(review ? REVIEW : ALWAYS);
  const title = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (projects.length) title.current?.focus();
  }, []);
  if (projects.length === 0) {
    return (
      <div class="card" id="new-task">
        <h2 class="first">New task</h2>
        <p id="new-task-no-projects">
          This organization has no project yet, and every task belongs to one. <a href="/projects">Make a project first</a>: name it and add the repository the agents work on.
        </p>
      </div>
    );
  }
  const set = (k: keyof typeof v.value) => (e: { currentTarget: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement }) => (v.value = { ...v.value, [k]: e.currentTarget.value });
  const go = () =>
    void form.submit(async () => {
      const x = v.value;
      const body: Record<string, unknown> = { projectId, title: x.title, prompt: x.prompt, priority: x.priority, kind: x.kind };
      if (x.kind === "review") body.review = { base: x.base.trim(), head: x.head.trim() };
      const task = await api<Task>("POST", `/orgs/${encodeURIComponent(orgId)}/tasks`, body);
      navigate(`/tasks/${encodeURIComponent(task.id)}`);
    }, fieldOf);
  const f = form.fields.value;
  return (
    <div class="card" id="new-task">
      <div class="card-head">
        <h2 class="first">New task</h2>
        <button type="button" class="link" onClick={onClose}>
          Close
        </button>
      </div>
      {role === "viewer" ? (
        <p id="new-task-viewer" class="muted">
          Your role here is viewer: the server refuses new tasks from viewers.
        </p>
      ) : null}
      <form
        id="new-task-form"
        noValidate
        onSubmit={submit(go)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            go();
          }
        }}
      >
        <div class="form-grid">
          <Field id="new-project" label="Project" error={f.projectId}>
            <select id="new-project" name="projectId" required value={projectId} onChange={set("projectId")}>
              {projects.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </Field>
          <Field id="new-priority" label="Priority" error={f.priority}>
            <select id="new-priority" name="priority" value={v.value.priority} onChange={set("priority")}>
              {PRIORITIES.map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </Field>
          <Field id="new-kind" label="Kind" error={f.kind}>
            <select id="new-kind" name="kind" value={v.value.kind} onChange={set("kind")}>
              {KINDS.map((k) => (
                <option key={k} value={k}>
                  {k}
                </option>
              ))}
            </select>
          </Field>
        </div>
        <Field id="new-title" label={<>Title <span class="muted">(one line, at most 200 characters)</span></>} error={f.title}>
          <input ref={title} id="new-title" name="title" type="text" maxLength={200} required autoComplete="off" value={v.value.title} onInput={set("title")} />
        </Field>
        <Field id="new-prompt" label={<>Prompt <span class="muted">(what the agent should do)</span></>} error={f.prompt}>
          <textarea id="new-prompt" name="prompt" rows={5} maxLength={100000} required value={v.value.prompt} onInput={set("prompt")} />
        </Field>
        {review ? (
          <div id="new-review-group" class="form-grid">
            <Field id="new-base" label={<>Base <span class="muted">(branch or commit)</span></>} error={f["review.base"]}>
              <input id="new-base" name="base" type="text" autoComplete="off" spellcheck={false} value={v.value.base} onInput={set("base")} />
            </Field>
            <Field id="new-head" label={<>Head <span class="muted">(branch or commit)</span></>} error={f["review.head"]}>
              <input id="new-head" name="head" type="text" autoComplete="off" spellcheck={false} value={v.value.head} onInput={set("head")} />
            </Field>
          </div>
        ) : null}
        <Problem id="new-task-error" text={form.error.value} />
        <div class="actions">
          <button type="submit" class="primary" disabled={form.busy.value}>
            Create task
          </button>
          <span class="hint">Ctrl+Enter creates it.</span>
        </div>
      </form>
    </div>
  );
}

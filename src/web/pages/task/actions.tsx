// The task's actions, as its state allows them (the state machine's table): a reason for any of
// them, the answer for Send input, Approve and Deny when the agent asks. Keys: a approves,
// d denies, p pauses or resumes, i goes to the answer box. A message of an earlier action is
// cleared when the task moves on.
import { useSignal } from "@preact/signals";
import { useEffect, useRef } from "preact/hooks";
import { ApiError, api, errorText } from "../../app/api";
import type { Task } from "../../app/types";
import { useShortcut } from "../../components/keys";
import { ErrorText, submit } from "../../components/ui";
import { BUTTON_CLASS, KEYS, LABELS, PENDING, allowedActions, type Action } from "./model";

export function Actions({ task, path, canAct, onTask, pending }: { task: Task; path: string; canAct: boolean; onTask: (t: Task) => void; pending: { value: string | null } }) {
  const reason = useSignal("");
  const input = useSignal("");
  const error = useSignal<unknown>(null);
  /** The action just done and the state it left the task in, while the task is still there. */
  const done = useSignal<{ action: Action; status: Task["status"] } | null>(null);
  const acting = useSignal(false);
  const inputBox = useRef<HTMLTextAreaElement>(null);
  const allowed = allowedActions(task.status);
  // Stale messages go when the task moves on (another person acted, the agent went on).
  const shownFor = useRef(task.status);
  useEffect(() => {
    if (shownFor.current !== task.status && !acting.value) {
      error.value = null;
      if (done.value && done.value.status !== task.status) done.value = null;
    }
    shownFor.current = task.status;
  }, [task.status]);

  const act = async (action: Action) => {
    if (acting.value || !allowedActions(task.status).includes(action)) return;
    error.value = null;
    done.value = null;
    if (action === "input" && !input.value.trim()) {
      error.value = new Error("Write the answer to hand to the agent first.");
      inputBox.current?.focus();
      return;
    }
    const body = { action, ...(reason.value.trim() ? { reason: reason.value } : {}), ...(action === "input" ? { input: input.value } : {}) };
    acting.value = true;
    pending.value = PENDING[action];
    try {
      const t = await api<Task>("POST", `${path}/actions`, body);
      reason.value = "";
      if (action === "input") input.value = "";
      done.value = { action, status: t.status };
      shownFor.current = t.status;
      onTask(t);
    } catch (err) {
      if (err instanceof ApiError && err.code === "invalid_transition") {
        // The task moved on meanwhile: say so, and show where it is now.
        error.value = new Error(`${errorText(err)} The task changed meanwhile; the buttons now show what it allows.`);
        try {
          const now = await api<Task>("GET", path);
          shownFor.current = now.status;
          onTask(now);
        } catch {}
      } else error.value = err;
    } finally {
      acting.value = false;
      pending.value = null;
    }
  };

  const has = (a: Action) => canAct && allowed.includes(a);
  useShortcut("a", () => void act("approve"), has("approve"));
  useShortcut("d", () => void act("deny"), has("deny"));
  useShortcut("p", () => void act(allowed.includes("resume") ? "resume" : "pause"), has("pause") || has("resume"));
  useShortcut("i", () => inputBox.current?.focus(), has("input"));

  return (
    <div class="card" id="actions">
      <h2 class="first">Actions</h2>
      {!canAct ? (
        <p class="muted" id="action-viewer">
          Your role here is viewer: you can follow the task, not act on it.
        </p>
      ) : null}
      <form id="actions-form" noValidate onSubmit={submit(() => void act(allowed.includes("input") ? "input" : allowed[0]!))}>
        {allowed.includes("input") ? (
          <>
            <label for="action-input">
              Answer <span class="muted">(handed to the agent with Send input; i)</span>
            </label>
            <textarea id="action-input" ref={inputBox} rows={3} value={input.value} onInput={(e) => (input.value = e.currentTarget.value)} disabled={!canAct} />
          </>
        ) : null}
        <label for="action-reason">
          Reason <span class="muted">(optional, at most 2,000 characters; a denial tells the agent why)</span>
        </label>
        <textarea id="action-reason" rows={2} value={reason.value} onInput={(e) => (reason.value = e.currentTarget.value)} disabled={!canAct} />
        <ErrorText id="action-error" error={error.value} />
        {/* Said only while the task is where the action left it: a live change that came while the
            action was under way (the agent failed at once after a denial) is newer than its answer. */}
        {done.value && done.value.status === task.status ? (
          <p id="action-done" class="muted" role="status">
            {LABELS[done.value.action]}: done. The task is now {done.value.status}.
          </p>
        ) : null}
        <div id="action-buttons" class="actions">
          {allowed.map((a) => (
            <button
              key={a}
              type="button"
              data-action={a}
              class={BUTTON_CLASS[a] ?? ""}
              disabled={acting.value || !canAct}
              aria-keyshortcuts={KEYS[a]}
              title={KEYS[a] ? `${LABELS[a]} (${KEYS[a]})` : undefined}
              onClick={() => void act(a)}
            >
              {LABELS[a]}
            </button>
          ))}
        </div>
        {allowed.length === 0 ? (
          <p id="action-none" class="muted">
            No action is possible in this state.
          </p>
        ) : null}
      </form>
    </div>
  );
}

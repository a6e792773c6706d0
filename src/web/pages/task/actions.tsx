// The task's actions, as its state allows them (the state machine's table): a reason for any of
// them, the answer for Send input, Approve and Deny when the agent asks. Keys: a approves,
// d denies, p pauses or resumes, i goes to the answer box. A message of an earlier action is
// cleared when the task moves on. An action that cannot be undone (model's askFirst: Cancel,
// Restart, Deny of a budget question) asks first, in place of the buttons: its Yes acts, its
// No or Escape backs out; while it asks, the keys wait.
import { useSignal } from "@preact/signals";
import { useEffect, useRef } from "preact/hooks";
import { ApiError, api, errorText } from "../../app/api";
import type { Task } from "../../app/types";
import { useShortcut } from "../../components/keys";
import { ErrorText, submit } from "../../components/ui";
import { BUTTON_CLASS, KEYS, LABELS, PENDING, allowedActions, askFirst, type Action } from "./model";

/** Actions the state allows but the task does not take (an applied plan's restart), and why. */
export interface Withheld {
  actions: Action[];
  why: string;
}

export function Actions({ task, path, canAct, onTask, pending, withheld }: { task: Task; path: string; canAct: boolean; onTask: (t: Task) => void; pending: { value: string | null }; withheld?: Withheld | null }) {
  const reason = useSignal("");
  const input = useSignal("");
  const error = useSignal<unknown>(null);
  /** The action just done and the state it left the task in, while the task is still there. */
  const done = useSignal<{ action: Action; status: Task["status"] } | null>(null);
  const acting = useSignal(false);
  /** The action whose question is shown, waiting for Yes or No. */
  const asking = useSignal<Action | null>(null);
  const inputBox = useRef<HTMLTextAreaElement>(null);
  const buttons = useRef<HTMLDivElement>(null);
  const no = useRef<HTMLButtonElement>(null);
  /** The button to give the focus back to once the question is gone. */
  const backTo = useRef<Action | null>(null);
  const allowedNow = (status: Task["status"]) => allowedActions(status).filter((a) => !withheld?.actions.includes(a));
  const allowed = allowedNow(task.status);
  const question = asking.value && allowed.includes(asking.value) ? askFirst(asking.value, task.needs) : null;
  // Stale messages go when the task moves on (another person acted, the agent went on).
  const shownFor = useRef(task.status);
  useEffect(() => {
    if (shownFor.current !== task.status && !acting.value) {
      error.value = null;
      if (done.value && done.value.status !== task.status) done.value = null;
    }
    shownFor.current = task.status;
  }, [task.status]);

  /** A button or key: an action that cannot be undone asks first, any other acts. */
  const press = (action: Action) => {
    // While a question waits for its answer, the keys do nothing.
    if (asking.value || acting.value || !allowedNow(task.status).includes(action)) return;
    if (askFirst(action, task.needs)) asking.value = action;
    else void act(action);
  };
  /** The answer to the question: Yes acts; No goes back to the buttons, the focus on the one pressed. */
  const answer = (yes: boolean) => {
    const action = asking.value;
    asking.value = null;
    if (!action) return;
    if (yes) void act(action);
    else backTo.current = action;
  };
  useEffect(() => {
    if (!question) {
      // A question the task outgrew (it finished meanwhile, say) goes: the buttons show what it allows now.
      asking.value = null;
      if (backTo.current) buttons.current?.querySelector<HTMLButtonElement>(`button[data-action="${backTo.current}"]`)?.focus();
      backTo.current = null;
      return;
    }
    // The safe answer has the focus: a second Enter or Space backs out rather than acting.
    no.current?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key !== "Escape" || e.defaultPrevented) return;
      e.preventDefault();
      answer(false);
    };
    document.addEventListener("keydown", onKey);
    return () => document.removeEventListener("keydown", onKey);
  }, [question !== null]);

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
  useShortcut("a", () => press("approve"), has("approve"));
  useShortcut("d", () => press("deny"), has("deny"));
  useShortcut("p", () => press(allowed.includes("resume") ? "resume" : "pause"), has("pause") || has("resume"));
  useShortcut("i", () => inputBox.current?.focus(), has("input"));

  return (
    <div class="card" id="actions">
      <h2 class="first">Actions</h2>
      {!canAct ? (
        <p class="muted" id="action-viewer">
          Your role here is viewer: you can follow the task, not act on it.
        </p>
      ) : null}
      <form id="actions-form" noValidate onSubmit={submit(() => press(allowed.includes("input") ? "input" : allowed[0]!))}>
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
        {question ? (
          // In place of the buttons, the question on their line: a second click of a double-click lands on words, not on Yes.
          <div id="action-confirm" role="group" aria-labelledby="action-confirm-question">
            <p id="action-confirm-question" class="confirm-question">
              {question.question}
            </p>
            <div class="actions">
              {/* detail 2: the second click of a double-click that began on the button this question replaced. */}
              <button type="button" class="danger-solid" onClick={(e) => e.detail < 2 && answer(true)}>
                {question.yes}
              </button>
              <button type="button" ref={no} onClick={() => answer(false)}>
                {question.no}
              </button>
            </div>
          </div>
        ) : (
          <div id="action-buttons" class="actions" ref={buttons}>
            {allowed.map((a) => (
              <button
                key={a}
                type="button"
                data-action={a}
                class={BUTTON_CLASS[a] ?? ""}
                disabled={acting.value || !canAct}
                aria-keyshortcuts={KEYS[a]}
                title={KEYS[a] ? `${LABELS[a]} (${KEYS[a]})` : undefined}
                onClick={() => press(a)}
              >
                {LABELS[a]}
              </button>
            ))}
          </div>
        )}
        {withheld && allowedActions(task.status).some((a) => withheld.actions.includes(a)) ? (
          <p id="action-withheld" class="muted">
            {withheld.why}
          </p>
        ) : allowed.length === 0 ? (
          <p id="action-none" class="muted">
            No action is possible in this state.
          </p>
        ) : null}
      </form>
    </div>
  );
}

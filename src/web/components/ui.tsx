// Shared pieces of every page: an error line, a form field with the API's complaint beside it,
// an empty state that says what to do next, a secret shown once with Copy, a confirming button,
// a status badge and the live-updates line. Server text is always rendered as text (JSX).
import type { ComponentChildren } from "preact";
import { useSignal } from "@preact/signals";
import { useEffect, useRef } from "preact/hooks";
import { errorText } from "../app/api";
import type { Status } from "../app/types";

/** An error as a sentence (role=alert), or nothing when `error` is null. */
export function ErrorText({ id, error }: { id?: string; error: unknown }) {
  if (error == null) return null;
  return (
    <p id={id} class="error" role="alert">
      {errorText(error)}
    </p>
  );
}

/**
 * A labelled field: `children` is the control (give it `id`); `error` (the API's message for this
 * field) is shown beside it and marks the control invalid.
 */
export function Field({ id, label, hint, error, children, class: className }: { id: string; label: ComponentChildren; hint?: ComponentChildren; error?: string | null; children: ComponentChildren; class?: string }) {
  return (
    <div class={`field${error ? " invalid" : ""}${className ? ` ${className}` : ""}`}>
      <label for={id}>{label}</label>
      {children}
      {hint && !error ? (
        <p id={`${id}-hint`} class="hint">
          {hint}
        </p>
      ) : null}
      {error ? (
        <p id={`${id}-error`} class="field-error" role="alert">
          {error}
        </p>
      ) : null}
    </div>
  );
}

/** What to say when a list is empty, and the next step. */
export function EmptyState({ id, title, children }: { id?: string; title: string; children?: ComponentChildren }) {
  return (
    <div id={id} class="empty">
      <p class="empty-title">{title}</p>{" "}
      {children ? <div class="empty-text">{children}</div> : null}
    </div>
  );
}

/** A secret the server shows once (a token, a webhook secret): the value, Copy, and a warning. */
export function SecretOnce({ id, label, value }: { id?: string; label: string; value: string }) {
  const copied = useSignal<"" | "copied" | "select">("");
  const input = useRef<HTMLInputElement>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      copied.value = "copied";
    } catch {
      // No clipboard (plain http on a LAN): select it for the person to copy.
      input.current?.select();
      copied.value = "select";
    }
  };
  return (
    <div id={id} class="secret" role="status">
      <label for={`${id ?? "secret"}-value`}>{label}</label>
      <div class="secret-row">
        <input id={`${id ?? "secret"}-value`} ref={input} class="code" readOnly value={value} onFocus={(e) => e.currentTarget.select()} />
        <button type="button" onClick={copy}>
          {copied.value === "copied" ? "Copied" : "Copy"}
        </button>
      </div>
      <p class="hint">{copied.value === "select" ? "Press Ctrl+C (⌘C) to copy it. " : ""}It is shown only this once: store it now.</p>
    </div>
  );
}

/**
 * A button that asks first: a dialog with the question, the action and Cancel. `onConfirm` runs
 * only after the person confirms.
 */
export function ConfirmButton({
  label,
  question,
  confirmLabel,
  danger,
  disabled,
  onConfirm,
  class: className,
}: {
  label: ComponentChildren;
  question: ComponentChildren;
  confirmLabel?: string;
  danger?: boolean;
  disabled?: boolean;
  onConfirm: () => void | Promise<void>;
  class?: string;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  return (
    <>
      <button type="button" class={className ?? (danger ? "danger" : "")} disabled={disabled} onClick={() => dialog.current?.showModal()}>
        {label}
      </button>
      <dialog ref={dialog} class="confirm">
        <form method="dialog">
          <p>{question}</p>
          <div class="actions">
            <button value="cancel">Cancel</button>
            <button
              value="ok"
              class={danger ? "danger-solid" : "primary"}
              onClick={(e) => {
                e.preventDefault();
                dialog.current?.close();
                void onConfirm();
              }}
            >
              {confirmLabel ?? "Confirm"}
            </button>
          </div>
        </form>
      </dialog>
    </>
  );
}

export function StatusBadge({ status, children }: { status: Status | string; children?: ComponentChildren }) {
  return (
    <span class="status" data-status={status}>
      {children ?? status.replace("_", " ")}
    </span>
  );
}

/** "live", "connecting…", "reconnecting…" or why live updates stopped (id live-state). */
export function LiveLine({ state }: { state: string }) {
  return (
    <span id="live-state" class={`live${state === "live" ? " on" : ""}`} role="status">
      {state}
    </span>
  );
}

/** A page's frame: its title (also the tab's), actions beside it, and its body. */
export function Page({ title, heading, actions, children, wide, id }: { title: string; heading?: ComponentChildren; actions?: ComponentChildren; children: ComponentChildren; wide?: boolean; id?: string }) {
  useEffect(() => {
    document.title = `${title} · ao`;
  }, [title]);
  return (
    <section id={id} class={`page${wide ? " wide" : ""}`} aria-labelledby={id ? `${id}-title` : undefined}>
      <header class="page-head">
        <h1 id={id ? `${id}-title` : undefined}>{heading ?? title}</h1>
        {actions ? <div class="page-actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

/** Grey bars where a page's content will be, while it loads (aria-busy for assistive tech and tests). */
export function Skeleton({ lines = 4 }: { lines?: number }) {
  return (
    <div class="skeleton" aria-busy="true" aria-label="Loading">
      {Array.from({ length: lines }, (_, i) => (
        <div key={i} class={`bar-${i % 3}`} />
      ))}
    </div>
  );
}

/** onSubmit for a form whose browser validation is off: prevents the reload, runs `work`. */
export const submit = (work: () => void) => (e: Event) => {
  e.preventDefault();
  work();
};

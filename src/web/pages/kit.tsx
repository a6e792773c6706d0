// The pieces the management pages share: loading a resource into signals, a form's state with
// the API's field errors (by field, for components/ui's Field), a section of a page, the line
// saying what the person's role allows. The generic components are in src/web/components.
import type { ComponentChildren } from "preact";
import { useEffect, useRef } from "preact/hooks";
import { signal, useSignal, type Signal } from "@preact/signals";
import { ApiError, complaints, errorText } from "../app/api";
import { HeardMeanwhile } from "../app/live";
import { Time } from "../components/Time";
import "./kit.css";

export interface Resource<T> {
  data: Signal<T | undefined>;
  error: Signal<unknown>;
  loading: Signal<boolean>;
  reload: () => Promise<void>;
}

/** Loads `load()` when `key` changes (and on reload()); a late answer of an older key is dropped. */
export function useResource<T>(load: () => Promise<T>, key: unknown[]): Resource<T> {
  const ref = useRef<(Resource<T> & { run: number; load: () => Promise<T> }) | null>(null);
  if (!ref.current) {
    const r = {
      data: signal<T | undefined>(undefined),
      error: signal<unknown>(null),
      loading: signal(true),
      run: 0,
      load,
      reload: async () => {
        const run = ++r.run;
        r.loading.value = true;
        try {
          const value = await r.load();
          if (run !== r.run) return;
          r.data.value = value;
          r.error.value = null;
        } catch (err) {
          if (run === r.run) r.error.value = err;
        } finally {
          if (run === r.run) r.loading.value = false;
        }
      },
    };
    ref.current = r;
  }
  ref.current.load = load;
  useEffect(() => {
    ref.current!.data.value = undefined;
    void ref.current!.reload();
  }, key);
  return ref.current;
}

/** A Resource the live socket keeps current. */
export interface LiveResource<T> extends Resource<T> {
  /**
   * Applies a newer record's change to what is shown, and again over the answer of each load
   * under way: that answer may predate the record, and must not undo it.
   */
  change(fn: (value: T) => T): void;
}

/** useResource for what the live socket (or an answer of ours) changes between loads. */
export function useLiveResource<T>(load: () => Promise<T>, key: unknown[]): LiveResource<T> {
  const meanwhile = useRef<HeardMeanwhile<(value: T) => T> | null>(null);
  const heard = (meanwhile.current ??= new HeardMeanwhile());
  const resource = useResource(async () => {
    const { answer, heard: changes } = await heard.read(load);
    return changes.reduce((value, change) => change(value), answer);
  }, key);
  const change = (fn: (value: T) => T) => {
    heard.hear(fn);
    const shown = resource.data.value;
    if (shown !== undefined) resource.data.value = fn(shown);
  };
  return { ...resource, change };
}

/** A form's submission state: busy, the refusal as a sentence and the API's complaints by field. */
export interface FormState<F extends string = string> {
  busy: Signal<boolean>;
  error: Signal<string | null>;
  /** The complaints about the fields the form shows, by field. */
  fields: Signal<Partial<Record<F, string>>>;
  /**
   * Runs `work`; a refusal of the API fills fields (mapped by `fieldOf`) and, with what no field
   * shows, error. Answers whether it succeeded.
   */
  submit: (work: () => Promise<void>, fieldOf?: (apiField: string) => string) => Promise<boolean>;
}

/**
 * A form's state; `shown` names the fields it shows a complaint beside (as it shows them now). A
 * complaint about any other field is said in the form's error, naming the field: dropped, it
 * left the person with a form that did nothing and said nothing.
 */
export function useForm<F extends string = never>(shown: readonly F[]): FormState<F> {
  const busy = useSignal(false);
  const error = useSignal<string | null>(null);
  const fields = useSignal<Partial<Record<F, string>>>({});
  const showing = useRef(shown);
  showing.current = shown;
  const state = useRef<FormState<F> | null>(null);
  state.current ??= {
    busy,
    error,
    fields,
    submit: async (work, fieldOf) => {
      if (busy.value) return false;
      busy.value = true;
      error.value = null;
      fields.value = {};
      try {
        await work();
        return true;
      } catch (err) {
        const said = complaints(err, showing.current, fieldOf);
        fields.value = said.fields as Partial<Record<F, string>>;
        error.value = said.rest ?? (Object.keys(said.fields).length ? null : errorText(err));
        return false;
      } finally {
        busy.value = false;
      }
    },
  };
  return state.current;
}

/** The error of a form or an action, as an alert. */
export function Problem({ text, id }: { text: string | null | undefined; id?: string }) {
  if (!text) return null;
  return (
    <p class="error" role="alert" id={id}>
      {text}
    </p>
  );
}

/**
 * A form's last row and its error: the submit button (`label`; also off while `disabled`), Cancel
 * when `onCancel` is given, then the form's refusal as an alert.
 */
export function FormEnd({ form, label, primary, disabled, onCancel }: { form: FormState<string>; label: ComponentChildren; primary?: boolean; disabled?: boolean; onCancel?: () => void }) {
  return (
    <>
      <div class="form-actions">
        <button type="submit" class={primary ? "primary" : undefined} disabled={form.busy.value || disabled}>
          {label}
        </button>
        {onCancel ? (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
      <Problem text={form.error.value} />
    </>
  );
}

/** A select's options for `projects`, by name (the value is the project's id). */
export function ProjectOptions({ projects }: { projects: { id: string; name: string }[] }) {
  return (
    <>
      {projects.map((p) => (
        <option key={p.id} value={p.id}>
          {p.name}
        </option>
      ))}
    </>
  );
}

/** What a failed load shows, with a way to try again. */
export function LoadFailed({ error, retry }: { error: unknown; retry: () => void }) {
  return (
    <div class="error" role="alert">
      <p>{error instanceof ApiError && error.status === 404 ? "Not found in this organization." : errorText(error)}</p>
      <button type="button" onClick={retry}>
        Try again
      </button>
    </div>
  );
}

/** A section of a page with its heading and, on the right, its actions. */
export function Section({ title, id, actions, children }: { title: string; id: string; actions?: ComponentChildren; children: ComponentChildren }) {
  return (
    <section id={id} class="panel" aria-labelledby={`${id}-title`}>
      <header class="panel-head">
        <h2 id={`${id}-title`}>{title}</h2>
        {actions ? <div class="panel-actions">{actions}</div> : null}
      </header>
      {children}
    </section>
  );
}

/** The page's one line about what the person's role allows here, when it allows less than everything. */
export function RoleNote({ children }: { children: ComponentChildren }) {
  return (
    <p class="role-note muted" role="note">
      {children}
    </p>
  );
}

export const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A moment as "3 min ago" (exact on hover), or `empty` when there is none. */
export function When({ at, empty = "never" }: { at: string | null | undefined; empty?: string }) {
  return at ? <Time iso={at} /> : <span class="muted">{empty}</span>;
}

/** An empty list's one line saying what to do next (components/ui's EmptyState look). */
export function Empty({ children, id }: { children: ComponentChildren; id?: string }) {
  return (
    <div class="empty" id={id}>
      <p class="empty-title">{children}</p>
    </div>
  );
}

/** Copies `text` (a command, a URL) to the clipboard; says so for a moment. */
export function CopyButton({ text, label = "Copy" }: { text: string; label?: string }) {
  const done = useSignal(false);
  return (
    <button
      type="button"
      class="copy"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          done.value = true;
          setTimeout(() => (done.value = false), 1500);
        } catch {
          done.value = false;
        }
      }}
    >
      {done.value ? "Copied" : label}
    </button>
  );
}

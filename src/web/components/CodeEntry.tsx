// The one-time code of a decision page (/device, /pair): from the address (?code=...) or typed
// in; `lookUp` finds what it stands for. An unknown code asks again, saying why.
import { useSignal } from "@preact/signals";
import { useEffect, useRef } from "preact/hooks";
import { ApiError } from "../app/api";
import { setQuery } from "../app/router";
import { ErrorText, Field, submit } from "./ui";

export type Found<T> = { state: "asking"; error: unknown } | { state: "looking" } | { state: "found"; code: string; found: T };

/** The code's lookup, driven by the address and the code form. */
export function useCode<T>(given: string | null, lookUp: (code: string) => Promise<T>, unknownText: string) {
  const result = useSignal<Found<T>>(given ? { state: "looking" } : { state: "asking", error: null });
  const typed = useSignal(given ?? "");
  const look = async (code: string) => {
    result.value = { state: "looking" };
    try {
      result.value = { state: "found", code, found: await lookUp(code) };
    } catch (err) {
      const unknown = err instanceof ApiError && (err.code === "not_found" || err.code === "validation_failed");
      result.value = { state: "asking", error: unknown ? new Error(`The code ${code} is unknown, expired or already used. ${unknownText}`) : err };
    }
  };
  useEffect(() => {
    if (given) void look(given);
  }, []);
  const form = () => <CodeForm value={typed.value} onInput={(v) => (typed.value = v)} error={result.value.state === "asking" ? result.value.error : null} onSubmit={(code) => (setQuery({ code }), void look(code))} />;
  return { result, form };
}

function CodeForm({ value, onInput, error, onSubmit }: { value: string; onInput: (v: string) => void; error: unknown; onSubmit: (code: string) => void }) {
  const own = useSignal<unknown>(null);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    document.title = "Enter the code · ao";
    input.current?.focus();
  }, []);
  return (
    <section id="code-entry" class="card narrow-card" aria-labelledby="code-title">
      <h1 id="code-title">Enter the code</h1>
      <p id="code-why" class="muted">
        Type the code shown in your terminal.
      </p>
      <form
        id="code-form"
        noValidate
        onSubmit={submit(() => {
          const code = value.trim();
          if (!code) return void (own.value = new Error("Enter the code."));
          own.value = null;
          onSubmit(code);
        })}
      >
        <Field id="code-input" label="Code">
          <input ref={input} id="code-input" name="code" type="text" class="code" autoComplete="off" autoCapitalize="characters" spellcheck={false} placeholder="XXXX-XXXX" maxLength={20} required value={value} onInput={(e) => onInput(e.currentTarget.value)} />
        </Field>
        <ErrorText id="code-error" error={own.value ?? error} />
        <button type="submit" class="primary wide-button">
          Continue
        </button>
      </form>
    </section>
  );
}

/** The final word of a decision page. */
export function Outcome({ title, text }: { title: string; text: string }) {
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    document.title = `${title} · ao`;
    ref.current?.focus();
  }, [title]);
  return (
    <section id="outcome" ref={ref} class="card narrow-card" tabIndex={-1} aria-labelledby="outcome-title">
      <h1 id="outcome-title">{title}</h1>
      <p id="outcome-text">{text}</p>
      <p>
        <a href="/">Home</a>
      </p>
    </section>
  );
}

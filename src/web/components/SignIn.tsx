// The sign-in form every page shows to someone not signed in: email and password, then a
// two-factor code when the account has one (the server answers two_factor_required). Before
// first-run setup no account exists: it says so, and where the setup link is.
import { useSignal } from "@preact/signals";
import { useEffect, useRef } from "preact/hooks";
import { ApiError, signIn } from "../app/api";
import { checkSetup, sessionEnded, sessionError, setupPending } from "../app/session";
import { ErrorText, Field, submit } from "./ui";
import { useBusy } from "./hooks";

export function SignIn({ why }: { why?: string }) {
  const email = useSignal("");
  const password = useSignal("");
  const code = useSignal("");
  const needCode = useSignal(false);
  const error = useSignal<unknown>(sessionError.value);
  const [busy, run] = useBusy();
  const emailInput = useRef<HTMLInputElement>(null);
  const passwordInput = useRef<HTMLInputElement>(null);
  const codeInput = useRef<HTMLInputElement>(null);
  useEffect(() => {
    document.title = "Sign in · ao";
    emailInput.current?.focus();
    void checkSetup();
  }, []);
  useEffect(() => {
    if (needCode.value) codeInput.current?.focus();
  }, [needCode.value]);

  const go = () => {
    error.value = null;
    if (!email.value.trim() || !password.value) return void (error.value = new Error("Enter your email and password."));
    if (needCode.value && !code.value.trim()) {
      codeInput.current?.focus();
      return void (error.value = new Error("Enter your two-factor code."));
    }
    void run(async () => {
      try {
        const input = { email: email.value.trim(), password: password.value };
        await signIn(needCode.value ? { ...input, code: code.value.replace(/\s+/g, "") } : input);
      } catch (err) {
        if (err instanceof ApiError && err.code === "two_factor_required") {
          needCode.value = true;
          return;
        }
        if (err instanceof ApiError && err.code === "invalid_two_factor_code") {
          code.value = "";
          codeInput.current?.focus();
        } else if (err instanceof ApiError && err.code === "invalid_credentials") {
          password.value = "";
          passwordInput.current?.focus();
        }
        error.value = err;
      }
    });
  };

  return (
    <section id="signin" class="card narrow-card" aria-labelledby="signin-title">
      <h1 id="signin-title">Sign in</h1>
      {sessionEnded.value ? (
        <p id="signin-ended" class="notice" role="status">
          Your sign-in has ended (it was signed out elsewhere, or it expired). Sign in again to carry on here.
        </p>
      ) : null}
      {setupPending.value ? (
        <p id="signin-setup" class="notice" role="status">
          No account exists yet: this server awaits its first-run setup. Open the setup link it wrote to its log when it started (the line <code>no user yet: finish setup at …/setup?token=…</code>); a restart writes a new one. Or restart it with <code>AO_ADMIN_EMAIL</code> and <code>AO_ADMIN_PASSWORD</code> set.
        </p>
      ) : null}
      {why ? (
        <p id="signin-why" class="muted">
          {why}
        </p>
      ) : null}
      <form id="signin-form" noValidate onSubmit={submit(go)} aria-busy={busy.value}>
        <Field id="signin-email" label="Email">
          <input ref={emailInput} id="signin-email" name="email" type="email" autoComplete="username" required value={email.value} onInput={(e) => (email.value = e.currentTarget.value)} />
        </Field>
        <Field id="signin-password" label="Password">
          <input ref={passwordInput} id="signin-password" name="password" type="password" autoComplete="current-password" required value={password.value} onInput={(e) => (password.value = e.currentTarget.value)} />
        </Field>
        {needCode.value ? (
          <Field id="signin-code" label="Two-factor code" hint="The 6-digit code from your authenticator app, or one of your recovery codes.">
            <input ref={codeInput} id="signin-code" name="code" type="text" autoComplete="one-time-code" spellcheck={false} maxLength={64} required aria-describedby="signin-code-hint" value={code.value} onInput={(e) => (code.value = e.currentTarget.value)} />
          </Field>
        ) : null}
        <ErrorText id="signin-error" error={error.value} />
        <button type="submit" class="primary wide-button" disabled={busy.value}>
          Sign in
        </button>
      </form>
    </section>
  );
}

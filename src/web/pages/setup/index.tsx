// "/setup?token=...": first run (SPEC §2). Creates the first administrator and their
// organization with the one-time token the server printed, then signs them in.
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { ApiError, api, errorText, fieldErrors, signIn } from "../../app/api";
import { navigate } from "../../app/router";
import type { PageProps } from "../../app/routes";
import { Field, Skeleton, submit } from "../../components/ui";
import { Problem, useForm } from "../kit";

export function SetupPage({ address }: PageProps) {
  const token = address.query.get("token");
  const state = useSignal<"loading" | "open" | "closed" | "no-token">("loading");
  const v = useSignal({ name: "", email: "", password: "", password2: "", orgName: "default" });
  const form = useForm(["name", "email", "password", "orgName"]);
  useEffect(() => {
    api<{ required: boolean }>("GET", "/setup").then(
      (s) => (state.value = !s.required ? "closed" : token ? "open" : "no-token"),
      (err) => {
        state.value = "open";
        form.error.value = errorText(err);
      },
    );
  }, []);
  useEffect(() => {
    document.title = `${state.value === "closed" ? "Setup is complete" : state.value === "no-token" ? "Setup link needed" : "Set up ao"} · ao`;
  }, [state.value]);
  if (state.value === "loading") return <Skeleton />;
  if (state.value === "closed") {
    return (
      <section id="setup-closed" class="card narrow-card" aria-labelledby="setup-closed-title">
        <h1 id="setup-closed-title">Setup is complete</h1>
        <p>
          This server already has its administrator. <a href="/">Sign in</a>.
        </p>
      </section>
    );
  }
  if (state.value === "no-token") {
    return (
      <section id="setup-no-token" class="card narrow-card" aria-labelledby="setup-no-token-title">
        <h1 id="setup-no-token-title">Setup link needed</h1>
        <p>
          Open the setup link the server printed when it started (it ends in <code>/setup?token=…</code>).
        </p>
      </section>
    );
  }
  const set = (k: keyof typeof v.value) => (e: { currentTarget: HTMLInputElement }) => (v.value = { ...v.value, [k]: e.currentTarget.value });
  // As every form: the server's complaint about a field shows beside it, anything else below.
  const go = () =>
    void form.submit(async () => {
      const { email, password, password2, orgName, name } = { ...v.value, email: v.value.email.trim(), orgName: v.value.orgName.trim(), name: v.value.name.trim() };
      const problem = !email ? "Enter an email address." : password.length < 8 ? "The password needs at least 8 characters." : password !== password2 ? "The two passwords differ." : !orgName ? "Enter a name for the organization." : null;
      if (problem) throw new Error(problem);
      try {
        await api("POST", "/setup", { token, email, password, orgName, ...(name ? { name } : {}) });
      } catch (err) {
        if (err instanceof ApiError && err.code === "conflict") return void (state.value = "closed");
        // The token has no field here: a wrong one (or one too long to check) is the link's fault.
        if (err instanceof ApiError && (err.status === 401 || fieldErrors(err).token)) throw new Error("This setup link is not valid. Use the link the server printed most recently.");
        throw err;
      }
      try {
        await signIn({ email, password });
      } catch {
        // Created but not signed in (a rate limit, say): the sign-in form takes over.
      }
      navigate("/", { replace: true });
    });
  const f = form.fields.value;
  return (
    <section id="setup" class="card narrow-card" aria-labelledby="setup-title">
      <h1 id="setup-title">Set up ao</h1>
      <p class="muted">Create the first administrator and their organization. This link works once.</p>
      <form id="setup-form" noValidate onSubmit={submit(go)} aria-busy={form.busy.value}>
        <Field id="setup-name" label={<>Your name <span class="muted">(optional)</span></>} error={f.name}>
          <input id="setup-name" name="name" type="text" autoComplete="name" maxLength={100} value={v.value.name} onInput={set("name")} />
        </Field>
        <Field id="setup-email" label="Email" error={f.email}>
          <input id="setup-email" name="email" type="email" autoComplete="username" required maxLength={254} value={v.value.email} onInput={set("email")} />
        </Field>
        <Field id="setup-password" label="Password" hint="At least 8 characters." error={f.password}>
          <input id="setup-password" name="password" type="password" autoComplete="new-password" required minLength={8} aria-describedby="setup-password-hint" value={v.value.password} onInput={set("password")} />
        </Field>
        <Field id="setup-password2" label="Password again">
          <input id="setup-password2" name="password2" type="password" autoComplete="new-password" required minLength={8} value={v.value.password2} onInput={set("password2")} />
        </Field>
        <Field id="setup-org" label="Organization name" error={f.orgName}>
          <input id="setup-org" name="orgName" type="text" required maxLength={100} value={v.value.orgName} onInput={set("orgName")} />
        </Field>
        <Problem id="setup-error" text={form.error.value} />
        <button type="submit" class="primary wide-button" disabled={form.busy.value}>
          Create administrator
        </button>
      </form>
    </section>
  );
}

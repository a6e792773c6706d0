// /account: the signed-in person's own settings: name, two-factor sign-in, personal API tokens,
// and the sessions they are signed in with (sign out of every one at once).
import { useSignal } from "@preact/signals";
import { api, errorText, forgetSignIn, listAll } from "../../app/api";
import { user } from "../../app/session";
import type { SessionRecord, UserRecord } from "../../app/records";
import { LoadFailed, Problem, Section, useForm, useResource, When } from "../kit";
import type { PageProps } from "../../app/routes";
import { ConfirmButton, Field, Page } from "../../components/ui";
import { TwoFactor } from "./two-factor";
import { Tokens } from "./tokens";
import "./account.css";

function Profile() {
  const me = user.value!;
  const name = useSignal(me.name);
  const saved = useSignal(false);
  const form = useForm(["name"]);
  const save = (e: Event) => {
    e.preventDefault();
    saved.value = false;
    return form
      .submit(async () => {
        const u = await api<UserRecord>("PATCH", "/me", { name: name.value });
        user.value = { ...user.value!, name: u.name };
        name.value = u.name;
      })
      .then((ok) => (saved.value = ok));
  };
  return (
    <Section id="profile" title="Profile">
      <form onSubmit={save} class="inline-form" id="profile-form">
        <Field id="profile-email" label="Email">
          <input id="profile-email" value={me.email} readOnly />
        </Field>
        <Field id="profile-name" label="Name" error={form.fields.value.name} hint="Shown to your organizations instead of your email">
          <input id="profile-name" name="name" value={name.value} onInput={(e) => ((name.value = e.currentTarget.value), (saved.value = false))} maxLength={100} required />
        </Field>
        <button type="submit" disabled={form.busy.value}>
          Save
        </button>
        {saved.value ? (
          <span class="ok" role="status">
            Saved
          </span>
        ) : null}
        <Problem text={form.error.value} />
      </form>
    </Section>
  );
}

const CLIENTS: Record<string, string> = { web: "Browser", cli: "Command line", device: "Command line (device sign-in)" };

function Sessions() {
  const sessions = useResource(() => listAll<SessionRecord>("/me/sessions"), []);
  const failed = useSignal<string | null>(null);
  const everywhere = async () => {
    failed.value = null;
    try {
      await api("DELETE", "/me/sessions");
    } catch (err) {
      failed.value = errorText(err);
      return;
    }
    // This session ended with the others: forget it here too (the sign-in form shows).
    forgetSignIn();
  };
  const list = sessions.data.value;
  return (
    <Section
      id="sessions"
      title="Sessions"
      actions={<ConfirmButton danger label="Sign out everywhere" question="Sign out of every session, this one too?" confirmLabel="Yes, sign out everywhere" onConfirm={everywhere} />}
    >
      <p class="muted">Each sign-in in a browser or with ao on the command line. Personal API tokens are not sessions: revoke them above.</p>
      <Problem text={failed.value} />
      {sessions.error.value && !list ? <LoadFailed error={sessions.error.value} retry={sessions.reload} /> : null}
      {list ? (
        <ul class="list" id="sessions-list">
          {list.map((s) => (
            <li key={s.id} data-id={s.id}>
              <strong>{CLIENTS[s.client] ?? s.client}</strong>
              {s.current ? <span class="badge ok">this session</span> : null}
              <span class="muted">
                signed in <When at={s.createdAt} />, last active <When at={s.lastUsedAt} />
              </span>
            </li>
          ))}
        </ul>
      ) : null}
    </Section>
  );
}

export function AccountPage(_: PageProps) {
  if (!user.value) return null;
  return (
    <Page title="Account" id="account-page">
      <Profile />
      <TwoFactor />
      <Tokens />
      <Sessions />
    </Page>
  );
}

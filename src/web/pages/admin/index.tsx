// /admin: instance administration (administrators only): every user of this server, and a
// form to create one (then an owner adds them to an organization on its Settings page).
import { useSignal } from "@preact/signals";
import { api, listAll } from "../../app/api";
import { user } from "../../app/session";
import type { UserRecord } from "../../app/records";
import { Empty, FormEnd, LoadFailed, RoleNote, Section, useForm, useResource, When } from "../kit";
import type { PageProps } from "../../app/routes";
import { Field, Page } from "../../components/ui";

function CreateUser({ onCreated }: { onCreated: (u: UserRecord) => void }) {
  const email = useSignal("");
  const name = useSignal("");
  const password = useSignal("");
  const admin = useSignal(false);
  const form = useForm(["email", "name", "password"]);
  const create = (e: Event) => {
    e.preventDefault();
    return form.submit(async () => {
      const body: Record<string, unknown> = { email: email.value.trim(), password: password.value, isAdmin: admin.value };
      if (name.value.trim()) body.name = name.value.trim();
      onCreated(await api<UserRecord>("POST", "/admin/users", body));
      email.value = name.value = password.value = "";
      admin.value = false;
    });
  };
  return (
    <form onSubmit={create} class="grid-form" id="user-form">
      <Field id="user-email" label="Email" error={form.fields.value.email}>
        <input id="user-email" name="email" type="email" value={email.value} onInput={(e) => (email.value = e.currentTarget.value)} required maxLength={254} autocomplete="off" />
      </Field>
      <Field id="user-name" label="Name" error={form.fields.value.name}>
        <input id="user-name" name="name" value={name.value} onInput={(e) => (name.value = e.currentTarget.value)} maxLength={100} />
      </Field>
      <Field id="user-password" label="Initial password" error={form.fields.value.password} hint="At least 8 characters; tell it to them privately">
        <input id="user-password" name="password" type="password" value={password.value} onInput={(e) => (password.value = e.currentTarget.value)} required minLength={8} autocomplete="new-password" />
      </Field>
      <label class="check">
        <input type="checkbox" checked={admin.value} onChange={(e) => (admin.value = e.currentTarget.checked)} />
        <span>Instance administrator</span>
      </label>
      <FormEnd form={form} label="Create user" primary />
    </form>
  );
}

export function AdminPage(_: PageProps) {
  const me = user.value;
  const isAdmin = me?.isAdmin ?? false;
  const users = useResource(() => (isAdmin ? listAll<UserRecord>("/admin/users") : Promise.resolve([])), [isAdmin]);
  const created = useSignal<string | null>(null);
  if (!isAdmin) {
    return (
      <Page title="Administration" id="admin-page">
        <RoleNote>Only instance administrators manage this server's users. Ask one to create accounts for your team.</RoleNote>
      </Page>
    );
  }
  const list = users.data.value;
  return (
    <Page title="Administration" id="admin-page">
      <Section id="new-user" title="New user">
        <CreateUser
          onCreated={(u) => {
            users.data.value = [u, ...(users.data.value ?? [])];
            created.value = `${u.email} can sign in now. Add them to an organization on its Settings page.`;
          }}
        />
        {created.value ? (
          <p class="ok" role="status">
            {created.value}
          </p>
        ) : null}
      </Section>
      <Section id="users" title="Users">
        {users.error.value && !list ? <LoadFailed error={users.error.value} retry={users.reload} /> : null}
        {list && list.length === 0 ? <Empty>No users.</Empty> : null}
        {list && list.length > 0 ? (
          <div class="table-wrap">
            <table class="table" id="users-table">
              <thead>
                <tr>
                  <th>Email</th>
                  <th>Name</th>
                  <th>Administrator</th>
                  <th>Two-factor</th>
                  <th>Created</th>
                </tr>
              </thead>
              <tbody>
                {list.map((u) => (
                  <tr key={u.id} data-id={u.id}>
                    <td>{u.email}</td>
                    <td>{u.name || <span class="muted">—</span>}</td>
                    <td>{u.isAdmin ? "yes" : "no"}</td>
                    <td>{u.twoFactorEnabled ? "on" : "off"}</td>
                    <td>
                      <When at={u.createdAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </Section>
    </Page>
  );
}

// /settings: the organization: its name, whether new workers wait for approval, and its members
// with their roles (SPEC §3). Owners and admins change them; everyone else reads. Someone in no
// organization creates one here.
import { useSignal } from "@preact/signals";
import { api, ApiError, errorText, listAll } from "../../app/api";
import { canAdmin, loadOrgs, org, orgId, orgs, role, useOrg, user } from "../../app/session";
import type { Org, Role } from "../../app/types";
import type { Member, OrgRecord } from "../../app/records";
import { Empty, FormEnd, LoadFailed, Problem, RoleNote, Section, useForm, useResource, When } from "../kit";
import type { PageProps } from "../../app/routes";
import { ConfirmButton, Field, Page, Skeleton } from "../../components/ui";
import "./settings.css";

const ROLES: Role[] = ["owner", "admin", "member", "viewer"];
const ROLE_HELP: Record<Role, string> = {
  owner: "everything, including owners",
  admin: "everything but the owner role",
  member: "tasks and projects",
  viewer: "reads only",
};

function Organization({ record, manage, onSaved }: { record: OrgRecord; manage: boolean; onSaved: (o: OrgRecord) => void }) {
  const name = useSignal(record.name);
  const saved = useSignal<string | null>(null);
  const form = useForm(["name"]);
  const approval = useForm([]);
  const rename = (e: Event) => {
    e.preventDefault();
    saved.value = null;
    return form.submit(async () => {
      const o = await api<OrgRecord>("PATCH", `/orgs/${record.id}`, { name: name.value });
      onSaved(o);
      saved.value = "Saved";
      void loadOrgs();
    });
  };
  const setApproval = (value: boolean) =>
    approval.submit(async () => {
      // Optimistic: the box shows the choice at once and goes back if the server refuses.
      onSaved({ ...record, requireWorkerApproval: value });
      try {
        onSaved(await api<OrgRecord>("PATCH", `/orgs/${record.id}`, { requireWorkerApproval: value }));
      } catch (err) {
        onSaved(record);
        throw err;
      }
    });
  return (
    <Section id="organization" title="Organization">
      <form onSubmit={rename} class="inline-form" id="org-form">
        <Field id="org-name" label="Organization name" error={form.fields.value.name}>
          <input id="org-name" name="name" value={name.value} onInput={(e) => ((name.value = e.currentTarget.value), (saved.value = null))} readOnly={!manage} required maxLength={100} />
        </Field>
        {manage ? (
          <button type="submit" disabled={form.busy.value || name.value === record.name}>
            Rename
          </button>
        ) : null}
        {saved.value ? (
          <span class="ok" role="status">
            {saved.value}
          </span>
        ) : null}
        <Problem text={form.error.value} />
      </form>
      <label class="check" id="approval-rule">
        <input type="checkbox" checked={record.requireWorkerApproval} disabled={!manage || approval.busy.value} onChange={(e) => setApproval(e.currentTarget.checked)} />
        <span>
          <strong>New workers wait for approval</strong>
          <span class="muted"> — a newly paired worker gets no task until an owner or admin approves it on the Workers page.</span>
        </span>
      </label>
      <Problem text={approval.error.value} />
      <p class="muted small">
        Created <When at={record.createdAt} />. Id <code>{record.id}</code>
      </p>
    </Section>
  );
}

function Members({ id, manage, myRole }: { id: string; manage: boolean; myRole: Role }) {
  const members = useResource(() => listAll<Member>(`/orgs/${id}/members`), [id]);
  const email = useSignal("");
  const newRole = useSignal<Role>("member");
  const invite = useForm(["email", "role"]);
  /** A refusal of a change to a row, shown on it while the list is the one it was about: an add, a change or a removal that succeeds afterwards makes it stale. */
  const rowError = useSignal<{ userId: string; text: string; list: Member[] } | null>(null);
  const me = user.value?.id;
  // Only an owner gives or takes the owner role (the server says so too).
  const assignable = ROLES.filter((r) => r !== "owner" || myRole === "owner");

  const add = (e: Event) => {
    e.preventDefault();
    return invite.submit(
      async () => {
        try {
          const m = await api<Member>("POST", `/orgs/${id}/members`, { email: email.value.trim(), role: newRole.value });
          members.data.value = [m, ...(members.data.value ?? []).filter((x) => x.userId !== m.userId)];
          email.value = "";
        } catch (err) {
          if (err instanceof ApiError && err.code === "not_found") {
            throw new ApiError(400, "validation_failed", err.message, [{ field: "email", message: "No account has this email. An instance administrator creates accounts (Admin page), then add them here." }]);
          }
          if (err instanceof ApiError && err.code === "conflict") {
            throw new ApiError(409, "validation_failed", err.message, [{ field: "email", message: "Already a member of this organization." }]);
          }
          throw err;
        }
      },
    );
  };

  const change = async (m: Member, r: Role) => {
    const before = members.data.value ?? [];
    rowError.value = null;
    members.data.value = before.map((x) => (x.userId === m.userId ? { ...x, role: r } : x));
    try {
      const updated = await api<Member>("PATCH", `/orgs/${id}/members/${encodeURIComponent(m.userId)}`, { role: r });
      members.data.value = (members.data.value ?? []).map((x) => (x.userId === m.userId ? updated : x));
      if (m.userId === me) void loadOrgs();
    } catch (err) {
      members.data.value = before;
      rowError.value = { userId: m.userId, text: errorText(err), list: before };
    }
  };

  const remove = async (m: Member) => {
    const before = members.data.value ?? [];
    rowError.value = null;
    members.data.value = before.filter((x) => x.userId !== m.userId);
    try {
      await api("DELETE", `/orgs/${id}/members/${encodeURIComponent(m.userId)}`);
      if (m.userId === me) void loadOrgs();
    } catch (err) {
      members.data.value = before;
      rowError.value = { userId: m.userId, text: errorText(err), list: before };
    }
  };

  const list = members.data.value;
  const refusal = rowError.value?.list === list ? rowError.value : null;
  return (
    <Section id="members" title="Members">
      {manage ? (
        <form onSubmit={add} class="grid-form" id="invite-form">
          <Field id="org-email" label="Email" error={invite.fields.value.email}>
            <input id="org-email" name="email" type="email" value={email.value} onInput={(e) => (email.value = e.currentTarget.value)} required maxLength={254} placeholder="someone@example.com" />
          </Field>
          <Field id="org-role" label="Role" error={invite.fields.value.role}>
            <select id="org-role" name="role" value={newRole.value} onChange={(e) => (newRole.value = e.currentTarget.value as Role)}>
              {assignable.map((r) => (
                <option key={r} value={r}>
                  {r} — {ROLE_HELP[r]}
                </option>
              ))}
            </select>
          </Field>
          <FormEnd form={invite} label="Add member" />
        </form>
      ) : null}
      {members.error.value && !list ? <LoadFailed error={members.error.value} retry={members.reload} /> : null}
      {list && list.length === 0 ? <Empty>No members.</Empty> : null}
      {list && list.length > 0 ? (
        <div class="table-wrap">
          <table class="table" id="members-table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Email</th>
                <th>Role</th>
                <th>Joined</th>
                {manage ? (
                  <th>
                    <span class="sr-only">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {list.map((m) => {
                const locked = m.role === "owner" && myRole !== "owner";
                return (
                  <tr key={m.userId} data-id={m.userId} data-email={m.email}>
                    <td class="name">
                      {m.name || <span class="muted">—</span>}
                      {m.userId === me ? <span class="badge">you</span> : null}
                    </td>
                    <td>{m.email}</td>
                    <td>
                      {manage && !locked ? (
                        <select aria-label={`Role of ${m.email}`} value={m.role} onChange={(e) => change(m, e.currentTarget.value as Role)}>
                          {assignable.concat(m.role === "owner" && !assignable.includes("owner") ? ["owner"] : []).map((r) => (
                            <option key={r} value={r}>
                              {r}
                            </option>
                          ))}
                        </select>
                      ) : (
                        <span class="role">{m.role}</span>
                      )}
                      {refusal?.userId === m.userId ? (
                        <span class="field-error" role="alert">
                          {refusal.text}
                        </span>
                      ) : null}
                    </td>
                    <td>
                      <When at={m.joinedAt} />
                    </td>
                    {manage ? (
                      <td class="actions">
                        {!locked ? <ConfirmButton label="Remove" question={`Remove ${m.email}?`} confirmLabel="Yes, remove" onConfirm={() => remove(m)} /> : null}
                      </td>
                    ) : null}
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      ) : null}
    </Section>
  );
}

/** For someone in no organization: a new one, of which they are the owner, then in use. */
function CreateOrganization() {
  const name = useSignal("");
  const form = useForm(["name"]);
  const create = (e: Event) => {
    e.preventDefault();
    return form.submit(async () => {
      const o = await api<Org>("POST", "/orgs", { name: name.value });
      await loadOrgs();
      useOrg(o.id);
    });
  };
  return (
    <Section id="create-org" title="Create an organization">
      <p class="muted">You are in no organization yet. Ask an owner to add you, or create one: you become its owner and can add the others.</p>
      <form onSubmit={create} class="inline-form" id="create-org-form">
        <Field id="create-org-name" label="Organization name" error={form.fields.value.name}>
          <input id="create-org-name" name="name" value={name.value} onInput={(e) => (name.value = e.currentTarget.value)} required maxLength={100} placeholder="Acme" />
        </Field>
        <button type="submit" class="primary" disabled={form.busy.value}>
          Create organization
        </button>
        <Problem text={form.error.value} />
      </form>
    </Section>
  );
}

export function SettingsPage(_: PageProps) {
  const id = orgId.value;
  const record = useResource(() => (id ? api<OrgRecord>("GET", `/orgs/${id}`) : Promise.resolve(undefined)), [id]);
  const r = role.value;
  const manage = canAdmin(r);
  if (!id) {
    return (
      <Page title="Settings" id="settings-page">
        {orgs.value === undefined ? <Skeleton /> : <CreateOrganization />}
      </Page>
    );
  }
  const current = record.data.value;
  return (
    <Page title="Settings" id="settings-page">
      <p class="muted">{org.value?.name}</p>
      {!manage ? <RoleNote>You are a {r ?? "guest"} here: only owners and admins change these settings.</RoleNote> : null}
      {record.error.value && !current ? <LoadFailed error={record.error.value} retry={record.reload} /> : null}
      {current ? <Organization key={current.id} record={current} manage={manage} onSaved={(o) => (record.data.value = o)} /> : null}
      {current ? <Members id={id} manage={manage} myRole={current.role} /> : null}
    </Page>
  );
}

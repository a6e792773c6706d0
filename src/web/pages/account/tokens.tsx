// Personal API tokens (SPEC §4): for the command line and CI; the value is shown once, only its
// last four characters afterwards; revoking stops it at once.
import { useSignal } from "@preact/signals";
import { api, errorText, listAll } from "../../app/api";
import { orgs, orgId } from "../../app/session";
import type { Role } from "../../app/types";
import type { ApiToken } from "../../app/records";
import { Empty, FormEnd, LoadFailed, Problem, Section, useForm, useResource, When } from "../kit";
import { ConfirmButton, Field, SecretOnce } from "../../components/ui";

const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };
const ROLES: Role[] = ["owner", "admin", "member", "viewer"];

/**
 * The last second of a picked day (YYYY-MM-DD) in the person's own time zone, as an instant:
 * "expires on the 3rd" includes all of their 3rd (as UTC's, it ended early west of UTC and
 * showed as the 4th east of it).
 */
function endOfDay(day: string): string {
  const [y, m, d] = day.split("-").map(Number);
  return new Date(y!, m! - 1, d!, 23, 59, 59).toISOString();
}

export function Tokens() {
  const tokens = useResource(() => listAll<ApiToken>("/me/tokens"), []);
  const created = useSignal<{ token: string; name: string } | null>(null);
  const name = useSignal("");
  const org = useSignal(orgId.value ?? "");
  const role = useSignal<Role | "">("");
  const expires = useSignal("");
  const form = useForm(["name", "orgId", "role", "expiresAt"]);
  const revokeError = useSignal<string | null>(null);
  const myOrgs = orgs.value ?? [];
  const chosen = myOrgs.find((o) => o.id === (org.value || orgId.value)) ?? myOrgs[0];
  const orgName = (id: string) => myOrgs.find((o) => o.id === id)?.name ?? id;

  const create = (e: Event) => {
    e.preventDefault();
    return form.submit(async () => {
      const body: Record<string, unknown> = { name: name.value, orgId: chosen?.id ?? "" };
      if (role.value) body.role = role.value;
      if (expires.value) body.expiresAt = endOfDay(expires.value);
      const t = await api<ApiToken & { token: string }>("POST", "/me/tokens", body);
      created.value = { token: t.token, name: t.name };
      const { token: _secret, ...view } = t;
      tokens.data.value = [{ ...view, lastFour: t.token.slice(-4), lastUsedAt: null }, ...(tokens.data.value ?? [])];
      name.value = "";
      expires.value = "";
    });
  };

  const revoke = async (t: ApiToken) => {
    const before = tokens.data.value ?? [];
    revokeError.value = null;
    // Optimistic: the row goes at once and comes back if the server refuses.
    tokens.data.value = before.filter((x) => x.id !== t.id);
    try {
      await api("DELETE", `/me/tokens/${encodeURIComponent(t.id)}`);
    } catch (err) {
      tokens.data.value = before;
      revokeError.value = `Could not revoke ${t.name}: ${errorText(err)}`;
    }
  };

  const list = tokens.data.value;
  return (
    <Section id="tokens" title="Personal API tokens">
      <p class="muted">
        For <code>ao</code> in scripts and CI (<code>AO_TOKEN</code>). A token works in one organization, with at most the role you have there.
      </p>
      {created.value ? <SecretOnce id="token-secret" label={`Token “${created.value.name}” created.`} value={created.value.token} /> : null}
      <form onSubmit={create} class="grid-form" id="token-form">
        <Field id="token-name" label="Token name" error={form.fields.value.name}>
          <input id="token-name" name="name" value={name.value} onInput={(e) => (name.value = e.currentTarget.value)} required maxLength={100} placeholder="CI on main" />
        </Field>
        <Field id="token-orgId" label="Organization" error={form.fields.value.orgId}>
          <select id="token-orgId" name="orgId" value={chosen?.id ?? ""} onChange={(e) => (org.value = e.currentTarget.value)}>
            {myOrgs.map((o) => (
              <option key={o.id} value={o.id}>
                {o.name}
              </option>
            ))}
          </select>
        </Field>
        <Field id="token-role" label="Role" error={form.fields.value.role}>
          <select id="token-role" name="role" value={role.value} onChange={(e) => (role.value = e.currentTarget.value as Role | "")}>
            <option value="">my role ({chosen?.role ?? "—"})</option>
            {ROLES.filter((r) => chosen && RANK[r] < RANK[chosen.role]).map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </Field>
        <Field id="token-expires" label="Expires" error={form.fields.value.expiresAt} hint="Until the end of that day, your time; empty: never">
          <input id="token-expires" name="expires" type="date" value={expires.value} onInput={(e) => (expires.value = e.currentTarget.value)} />
        </Field>
        <FormEnd form={form} label="Create token" disabled={!chosen} />
      </form>
      <Problem text={revokeError.value} />
      {tokens.error.value && !list ? <LoadFailed error={tokens.error.value} retry={tokens.reload} /> : null}
      {list && list.length === 0 ? <Empty id="tokens-empty">No tokens yet. Create one above to use ao from a script or CI.</Empty> : null}
      {list && list.length > 0 ? (
        <div class="table-wrap">
          <table class="table" id="tokens-table">
            <thead>
              <tr>
                <th>Name</th>
                <th>Organization</th>
                <th>Role</th>
                <th>Ends with</th>
                <th>Last used</th>
                <th>Expires</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((t) => (
                <tr key={t.id} data-id={t.id}>
                  <td class="name">{t.name}</td>
                  <td>{orgName(t.orgId)}</td>
                  <td>{t.role}</td>
                  <td>
                    <code>…{t.lastFour}</code>
                  </td>
                  <td>
                    <When at={t.lastUsedAt} />
                  </td>
                  <td>
                    <When at={t.expiresAt} empty="never" />
                  </td>
                  <td class="actions">
                    <ConfirmButton label="Revoke" question={`Revoke ${t.name}?`} confirmLabel="Yes, revoke" onConfirm={() => revoke(t)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </Section>
  );
}

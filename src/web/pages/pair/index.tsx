// "/pair?code=XXXX-XXXX": a person approves a worker into one of their organizations, or denies
// it (`ao worker` pairing, SPEC §7).
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { ApiError, api } from "../../app/api";
import type { PageProps } from "../../app/routes";
import { orgs } from "../../app/session";
import { Outcome, useCode } from "../../components/CodeEntry";
import { useBusy } from "../../components/hooks";
import { ErrorText, Field, Skeleton, submit } from "../../components/ui";
import { whenText } from "../device";

interface Pairing {
  userCode: string;
  name: string | null;
  hostname: string | null;
  labels: string[];
  requestIp: string | null;
  createdAt: string;
  expiresAt: string;
}

/** Roles that may pair a worker into an org (the server checks task.create). */
const CAN_PAIR = new Set(["owner", "admin", "member"]);

export function PairPage({ address }: PageProps) {
  const { result, form } = useCode<Pairing>(address.query.get("code")?.trim() || null, (code) => api("GET", `/pairing/${encodeURIComponent(code)}`), "Check it, or restart ao worker for a new one.");
  const outcome = useSignal<{ title: string; text: string } | null>(null);
  const error = useSignal<unknown>(null);
  const chosen = useSignal("");
  const [busy, run] = useBusy();
  const r = result.value;
  const mine = (orgs.value ?? []).filter((o) => CAN_PAIR.has(o.role));
  useEffect(() => {
    if (r.state === "found") document.title = "Pair a worker? · ao";
  }, [r.state]);
  if (outcome.value) return <Outcome {...outcome.value} />;
  if (r.state === "asking") return form();
  if (r.state === "looking" || !orgs.value) return <Skeleton />;
  const p = r.found;
  const orgIdChosen = chosen.value || mine[0]?.id || "";
  const decide = (decision: "approve" | "deny") =>
    run(async () => {
      error.value = null;
      const org = mine.find((o) => o.id === orgIdChosen);
      try {
        if (decision === "approve") await api("POST", "/pairing/approve", { userCode: r.code, orgId: orgIdChosen });
        else await api("POST", "/pairing/deny", { userCode: r.code });
      } catch (err) {
        const gone = err instanceof ApiError && err.code === "not_found" && /pairing/.test(err.message);
        error.value = gone ? new Error("This request is no longer pending: it expired or was decided elsewhere.") : err;
        return;
      }
      const worker = p.name || "The worker";
      if (decision === "approve") {
        const next = org?.requireWorkerApproval ? `It gets work once an owner or admin of ${org.name} approves it.` : "It connects and takes work in a few seconds.";
        outcome.value = { title: "Worker paired", text: `${worker} joins ${org?.name ?? "the organization"}. ${next}` };
      } else outcome.value = { title: "Pairing denied", text: `${worker} was not paired. You can close this page.` };
    });
  return (
    <section id="pairing" class="card narrow-card" aria-labelledby="pairing-title">
      <h1 id="pairing-title">Pair a worker?</h1>
      <p>A worker asks to join an organization and run its tasks. Approve only if you started it yourself and the code matches.</p>
      <dl class="facts">
        <dt>Code</dt>
        <dd id="pairing-code" class="code">
          {p.userCode}
        </dd>
        <dt>Worker</dt>
        <dd id="pairing-name">{p.name || "(unnamed)"}</dd>
        <dt>Hostname</dt>
        <dd id="pairing-hostname">{p.hostname || "—"}</dd>
        <dt>Labels</dt>
        <dd id="pairing-labels">
          {p.labels.length
            ? p.labels.map((l) => (
                <span key={l} class="badge">
                  {l}
                </span>
              ))
            : "none"}
        </dd>
        <dt>From address</dt>
        <dd id="pairing-ip">{p.requestIp || "unknown"}</dd>
        <dt>Requested</dt>
        <dd id="pairing-created">{whenText(p.createdAt)}</dd>
        <dt>Expires</dt>
        <dd id="pairing-expires">{whenText(p.expiresAt)}</dd>
      </dl>
      <form id="pairing-form" noValidate onSubmit={submit(() => void decide("approve"))}>
        <Field id="pairing-org" label="Organization">
          <select id="pairing-org" name="orgId" required disabled={mine.length === 0} value={orgIdChosen} onChange={(e) => (chosen.value = e.currentTarget.value)}>
            {mine.map((o) => (
              <option key={o.id} value={o.id}>
                {`${o.name} (${o.role})`}
              </option>
            ))}
          </select>
        </Field>
        {mine.length === 0 ? (
          <p id="pairing-no-orgs" class="error">
            You can pair workers only into an organization where you are an owner, admin or member.
          </p>
        ) : null}
        <ErrorText id="pairing-error" error={error.value} />
        <div class="actions">
          <button type="submit" id="pairing-approve" class="primary" disabled={busy.value || mine.length === 0}>
            Approve
          </button>
          <button type="button" id="pairing-deny" class="danger" disabled={busy.value} onClick={() => void decide("deny")}>
            Deny
          </button>
        </div>
      </form>
    </section>
  );
}

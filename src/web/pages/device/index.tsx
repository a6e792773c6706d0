// "/device?code=XXXX-XXXX": a person approves or denies a device sign-in (`ao login`, SPEC §4).
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { ApiError, api } from "../../app/api";
import type { PageProps } from "../../app/routes";
import { Outcome, useCode } from "../../components/CodeEntry";
import { useBusy } from "../../components/hooks";
import { exactTime } from "../../components/Time";
import { ErrorText, Skeleton } from "../../components/ui";

interface Grant {
  userCode: string;
  clientName: string | null;
  requestIp: string | null;
  createdAt: string;
  expiresAt: string;
}

export function DevicePage({ address }: PageProps) {
  const { result, form } = useCode<Grant>(address.query.get("code")?.trim() || null, (code) => api("GET", `/auth/device/${encodeURIComponent(code)}`), "Check it, or run ao login again for a new one.");
  const outcome = useSignal<{ title: string; text: string } | null>(null);
  const error = useSignal<unknown>(null);
  const [busy, run] = useBusy();
  const r = result.value;
  useEffect(() => {
    if (r.state === "found") document.title = "Sign in a device? · ao";
  }, [r.state]);
  if (outcome.value) return <Outcome {...outcome.value} />;
  if (r.state === "asking") return form();
  if (r.state === "looking") return <Skeleton />;
  const grant = r.found;
  const decide = (decision: "approve" | "deny") =>
    run(async () => {
      error.value = null;
      try {
        await api("POST", `/auth/device/${decision}`, { userCode: r.code });
      } catch (err) {
        const gone = err instanceof ApiError && err.code === "not_found";
        error.value = gone ? new Error("This request is no longer pending: it expired or was decided elsewhere.") : err;
        return;
      }
      outcome.value =
        decision === "approve"
          ? { title: "Device signed in", text: "The program is now signed in as you. You can close this page." }
          : { title: "Sign-in denied", text: "The program was not signed in. You can close this page." };
    });
  return (
    <section id="grant" class="card narrow-card" aria-labelledby="grant-title">
      <h1 id="grant-title">Sign in a device?</h1>
      <p>
        A program asks to sign in to ao <strong>as you</strong>. Approve only if you started it yourself and the code matches.
      </p>
      <dl class="facts">
        <dt>Code</dt>
        <dd id="grant-code" class="code">
          {grant.userCode}
        </dd>
        <dt>Program</dt>
        <dd id="grant-client">{grant.clientName || "(unnamed program)"}</dd>
        <dt>Requested</dt>
        <dd id="grant-created">{whenText(grant.createdAt)}</dd>
        <dt>From address</dt>
        <dd id="grant-ip">{grant.requestIp || "unknown"}</dd>
        <dt>Expires</dt>
        <dd id="grant-expires">{whenText(grant.expiresAt)}</dd>
      </dl>
      <ErrorText id="grant-error" error={error.value} />
      <div class="actions">
        <button type="button" id="grant-approve" class="primary" disabled={busy.value} onClick={() => void decide("approve")}>
          Approve
        </button>
        <button type="button" id="grant-deny" class="danger" disabled={busy.value} onClick={() => void decide("deny")}>
          Deny
        </button>
      </div>
    </section>
  );
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
/** "24 Nov 2026, 14:03:10 (now)": the exact time and how long ago or until, for a decision. */
export function whenText(iso: string): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const sec = Math.round((t - Date.now()) / 1000);
  const abs = Math.abs(sec);
  const rel = abs < 45 ? relative.format(0, "second") : abs < 3600 ? relative.format(Math.round(sec / 60), "minute") : relative.format(Math.round(sec / 3600), "hour");
  return `${exactTime(iso)} (${rel})`;
}

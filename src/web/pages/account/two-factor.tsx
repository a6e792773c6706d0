// Two-factor sign-in (SPEC §4): set up with a QR code (or the key typed in), confirm with a code,
// the recovery codes shown once; turning it off needs a current code or a recovery code.
import { useSignal } from "@preact/signals";
import { api } from "../../app/api";
import { user } from "../../app/session";
import { CopyButton, Problem, Section, useForm } from "../kit";
import { Field, SecretOnce } from "../../components/ui";
import { QrCode } from "./qr";

/** "JBSWY3DPEHPK3PXP" as "JBSW Y3DP EHPK 3PXP", easier to type from the screen. */
const grouped = (secret: string) => secret.replace(/(.{4})(?=.)/g, "$1 ");

export function TwoFactor() {
  const enrolment = useSignal<{ secret: string; otpauthUrl: string } | null>(null);
  const recovery = useSignal<string[] | null>(null);
  const code = useSignal("");
  const start = useForm([]);
  const confirm = useForm(["code"]);
  const off = useForm(["code"]);
  const enabled = user.value?.twoFactorEnabled ?? false;

  const begin = () =>
    start.submit(async () => {
      enrolment.value = await api("POST", "/me/2fa/setup");
      code.value = "";
    });
  const enable = (e: Event) => {
    e.preventDefault();
    return confirm.submit(async () => {
      const r = await api<{ recoveryCodes: string[] }>("POST", "/me/2fa/enable", { code: code.value.trim() });
      recovery.value = r.recoveryCodes;
      enrolment.value = null;
      code.value = "";
      if (user.value) user.value = { ...user.value, twoFactorEnabled: true };
    });
  };
  const disable = (e: Event) => {
    e.preventDefault();
    return off.submit(async () => {
      await api("POST", "/me/2fa/disable", { code: code.value.trim() });
      code.value = "";
      recovery.value = null;
      if (user.value) user.value = { ...user.value, twoFactorEnabled: false };
    });
  };

  return (
    <Section id="two-factor" title="Two-factor sign-in">
      {recovery.value ? (
        <div id="recovery-codes">
          <SecretOnce id="recovery-secret" label="Two-factor sign-in is on. These are your recovery codes, all in one line." value={recovery.value.join(" ")} />
          <p class="muted">Each works once instead of a code, if you lose your authenticator. Keep them somewhere safe.</p>
          <ol class="codes">
            {recovery.value.map((c) => (
              <li key={c}>
                <code>{c}</code>
              </li>
            ))}
          </ol>
        </div>
      ) : null}

      {enabled && !recovery.value ? (
        <form onSubmit={disable} class="inline-form" id="two-factor-off">
          <p>
            <span class="badge ok">On</span> Signing in asks for a code from your authenticator app.
          </p>
          <Field id="tfa-code" label="Code to turn it off" error={off.fields.value.code} hint="A current code or a recovery code">
            <input id="tfa-code" name="code" autocomplete="one-time-code" value={code.value} onInput={(e) => (code.value = e.currentTarget.value)} required maxLength={64} />
          </Field>
          <button type="submit" class="danger" disabled={off.busy.value}>
            Turn off two-factor sign-in
          </button>
          <Problem text={off.error.value} />
        </form>
      ) : null}

      {!enabled && !enrolment.value ? (
        <div>
          <p>
            <span class="badge">Off</span> Add a code from an authenticator app to your password, so a stolen password alone is not enough.
          </p>
          <button type="button" onClick={begin} disabled={start.busy.value}>
            Set up two-factor sign-in
          </button>
          <Problem text={start.error.value} />
        </div>
      ) : null}

      {!enabled && enrolment.value ? (
        <form onSubmit={enable} id="two-factor-setup" class="two-factor-setup">
          <div class="qr-box">
            <QrCode text={enrolment.value.otpauthUrl} label="QR code for your authenticator app" />
          </div>
          <div class="stack">
            <p>1. Scan the code with an authenticator app, or on this device open it there:</p>
            <p>
              <a href={enrolment.value.otpauthUrl} id="otpauth-link">
                Open in authenticator app
              </a>
            </p>
            <p>
              Or type the key: <code id="totp-key">{grouped(enrolment.value.secret)}</code> <CopyButton text={enrolment.value.secret} label="Copy key" />
            </p>
            <p>2. Enter the 6-digit code it shows.</p>
            <Field id="tfa-code-from-the-app" label="Code from the app" error={confirm.fields.value.code}>
              <input id="tfa-code-from-the-app"
                name="code"
                inputMode="numeric"
                autocomplete="one-time-code"
                pattern="[0-9 ]{6,7}"
                value={code.value}
                onInput={(e) => (code.value = e.currentTarget.value)}
                required
              />
            </Field>
            <div class="row">
              <button type="submit" disabled={confirm.busy.value}>
                Turn on
              </button>
              <button type="button" onClick={() => (enrolment.value = null)}>
                Cancel
              </button>
            </div>
            <Problem text={confirm.error.value} />
          </div>
        </form>
      ) : null}
    </Section>
  );
}

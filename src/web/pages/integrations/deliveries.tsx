// A callback target's delivery log (SPEC §9): each delivery with its tries (when, status code or
// error, latency) and Redeliver, which sends the same body again with the same delivery id.
import { useSignal } from "@preact/signals";
import { api, errorText, type ApiError } from "../../app/api";
import type { Delivery, DeliveryTry, Page } from "../../app/records";
import { Empty, LoadFailed, Problem, useResource, When } from "../kit";

const OUTCOME: Record<DeliveryTry["outcome"], string> = { succeeded: "ok", retrying: "retrying", failed: "failed" };

function Try({ t }: { t: DeliveryTry }) {
  return (
    <li class={`try ${t.outcome}`}>
      <span class="try-n">#{t.attempt}</span>
      <span class={`badge ${t.outcome === "succeeded" ? "ok" : t.outcome === "failed" ? "bad" : ""}`}>{OUTCOME[t.outcome]}</span>
      <span>{t.statusCode !== null ? `HTTP ${t.statusCode}` : (t.error ?? "no answer")}</span>
      {t.statusCode !== null && t.error && !t.error.startsWith("HTTP") ? <span class="muted">{t.error}</span> : null}
      {t.latencyMs !== null ? <span class="muted">{t.latencyMs} ms</span> : null}
      <When at={t.at} />
    </li>
  );
}

/** The log's filter: every delivery, or those in one status (the API's ?status=). */
const SHOWN = [
  ["", "all"],
  ["failed", "failed"],
  ["pending", "pending"],
  ["delivering", "delivering"],
  ["succeeded", "succeeded"],
] as const;

/** `base`: the deliveries path of an integration or of the completion webhook. */
export function Deliveries({ base }: { base: string }) {
  const status = useSignal("");
  const page = useResource(() => api<Page<Delivery>>("GET", `${base}?limit=20${status.value ? `&status=${status.value}` : ""}`), [base, status.value]);
  const failed = useSignal<string | null>(null);
  const redeliver = async (d: Delivery) => {
    failed.value = null;
    const before = page.data.value;
    // Optimistic: the row says it is on its way; the answer replaces it.
    if (before) page.data.value = { ...before, items: before.items.map((x) => (x.id === d.id ? { ...x, status: "pending" } : x)) };
    try {
      const record = await api<Delivery>("POST", `${base}/${encodeURIComponent(d.id)}/redeliver`);
      const now = page.data.value;
      if (now) page.data.value = { ...now, items: now.items.map((x) => (x.id === d.id ? record : x)) };
    } catch (err) {
      if (before) page.data.value = before;
      failed.value = errorText(err as ApiError);
    }
  };
  const items = page.data.value?.items;
  return (
    <div class="deliveries">
      <div class="row">
        <h4>Deliveries</h4>
        <label>
          Show{" "}
          <select class="delivery-filter" value={status.value} onChange={(e) => (status.value = (e.target as HTMLSelectElement).value)}>
            {SHOWN.map(([value, label]) => (
              <option key={value} value={value}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <button type="button" class="link" onClick={page.reload} disabled={page.loading.value}>
          Refresh
        </button>
      </div>
      <Problem text={failed.value} />
      {page.error.value && !items ? <LoadFailed error={page.error.value} retry={page.reload} /> : null}
      {items && items.length === 0 ? (
        <Empty>{status.value ? `No ${status.value} deliveries.` : "No deliveries yet. One is sent when a task of this target completes, fails or needs attention."}</Empty>
      ) : null}
      {items && items.length > 0 ? (
        <ul class="delivery-list">
          {items.map((d) => (
            <li key={d.id} class="delivery" data-id={d.id}>
              <div class="delivery-head">
                <span class={`badge delivery-status ${d.status}`}>{d.status}</span>
                <span>{d.event.replace("_", " ")}</span>
                <a href={`/tasks/${d.taskId}`}>task</a>
                <span class="muted">{d.attempts === 1 ? "1 try" : `${d.attempts} tries`}</span>
                <When at={d.createdAt} />
                {d.nextAttemptAt && d.status !== "succeeded" ? (
                  <span class="muted">
                    next <When at={d.nextAttemptAt} />
                  </span>
                ) : null}
                <span class="spacer" />
                <button type="button" onClick={() => redeliver(d)} disabled={d.status === "pending" || d.status === "delivering"}>
                  Redeliver
                </button>
              </div>
              {d.recentTries.length ? (
                <ol class="tries" aria-label="Tries, newest first">
                  {d.recentTries.map((t) => (
                    <Try key={t.attempt} t={t} />
                  ))}
                </ol>
              ) : null}
              <code class="muted small">{d.id}</code>
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

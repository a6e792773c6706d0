// A moment as "3 min ago" (or "in 5 min"), with the exact local time on hover; never wraps.
import { now } from "./hooks";

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto", style: "short" });
const exact = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });

export function ago(iso: string, at = now.value): string {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const sec = Math.round((t - at) / 1000);
  const abs = Math.abs(sec);
  if (abs < 45) return "just now";
  if (abs < 3600) return relative.format(Math.round(sec / 60), "minute");
  if (abs < 86_400) return relative.format(Math.round(sec / 3600), "hour");
  if (abs < 30 * 86_400) return relative.format(Math.round(sec / 86_400), "day");
  return new Date(t).toLocaleDateString(undefined, { dateStyle: "medium" });
}

export function exactTime(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : exact.format(t);
}

export function Time({ iso, class: className }: { iso: string; class?: string }) {
  return (
    <time class={`when${className ? ` ${className}` : ""}`} dateTime={iso} title={exactTime(iso)}>
      {ago(iso)}
    </time>
  );
}

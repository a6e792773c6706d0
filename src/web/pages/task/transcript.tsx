// The agent's session as a readable transcript: messages as speech, tool calls and edits as
// folded rows, policy decisions and errors marked, log lines with their ANSI colours (anser
// parses them into text runs with classes: no HTML is produced or parsed). Long timelines
// show the last WINDOW entries, with a button for earlier ones; the browser skips laying out
// entries off screen (content-visibility).
import Anser from "anser";
import { useSignal } from "@preact/signals";
import type { TaskEvent } from "../../app/types";
import { exactTime } from "../../components/Time";
import { EmptyState } from "../../components/ui";
import { clock, dataOf, eventText, truncate, who } from "./model";

export const WINDOW = 300;

export function Transcript({ events }: { events: TaskEvent[] }) {
  const shown = useSignal(WINDOW);
  if (events.length === 0) {
    return (
      <ol id="timeline" class="timeline">
        <EmptyState id="timeline-empty" title="No events yet.">
          <p>The agent's messages, tool calls and log lines appear here as a worker runs the task.</p>
        </EmptyState>
      </ol>
    );
  }
  const hidden = Math.max(0, events.length - shown.value);
  return (
    <>
      {hidden > 0 ? (
        <button type="button" class="link earlier" id="timeline-earlier" onClick={() => (shown.value += WINDOW)}>
          Show {Math.min(hidden, WINDOW)} earlier event{hidden === 1 ? "" : "s"} ({hidden} hidden)
        </button>
      ) : null}
      <ol id="timeline" class="timeline">
        {events.slice(hidden).map((e) => (
          <Entry key={e.seq} e={e} />
        ))}
      </ol>
    </>
  );
}

function Head({ e, label }: { e: TaskEvent; label?: string }) {
  return (
    <>
      <span class="seq">#{e.seq}</span> <time dateTime={e.at} title={exactTime(e.at)}>{clock(e.at)}</time> <span class="type">{label ?? e.type}</span>{" "}
    </>
  );
}

const s = (v: unknown) => (typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v, null, 2));

function Entry({ e }: { e: TaskEvent }) {
  const d = dataOf(e);
  switch (e.type) {
    case "message": {
      const role = s(d.role) || "agent";
      return (
        <li data-seq={e.seq} data-type={e.type} class={`message role-${role === "user" ? "user" : "agent"}`}>
          <Head e={e} label={role} />
          <div class="bubble pre">{s(d.text ?? d.message ?? e.data)}</div>
        </li>
      );
    }
    case "tool":
      return (
        <li data-seq={e.seq} data-type={e.type} class="tool">
          <details>
            <summary>
              <Head e={e} />
              <span class="text">
                <strong>{s(d.name ?? "tool")}</strong> {s(d.status)} {d.input != null ? <code>{truncate(s(d.input), 140)}</code> : null}
              </span>
            </summary>
            {d.input != null ? <pre class="detail">{s(d.input)}</pre> : null}
            {d.output != null ? <pre class="detail output">{s(d.output)}</pre> : null}
          </details>
        </li>
      );
    case "edit": {
      const path = s(d.path ?? d.file);
      const diff = typeof d.diff === "string" ? d.diff : null;
      const counts = typeof d.additions === "number" || typeof d.deletions === "number" ? ` +${Number(d.additions ?? 0)} −${Number(d.deletions ?? 0)}` : "";
      const body = (
        <>
          <Head e={e} />
          <span class="text">
            <code>{path || eventText(e)}</code>
            <span class="counts">{counts}</span>
          </span>
        </>
      );
      return (
        <li data-seq={e.seq} data-type={e.type} class="edit">
          {diff ? (
            <details>
              <summary>{body}</summary>
              <pre class="detail">{diff}</pre>
            </details>
          ) : (
            body
          )}
        </li>
      );
    }
    case "decision": {
      const decision = s(d.decision);
      const tool = s(d.name ?? d.tool);
      const subject = s(d.subject);
      const rule = d.rule ? ` (rule ${s(d.rule)})` : d.by === "default" ? " (built-in rules)" : "";
      return (
        <li data-seq={e.seq} data-type={e.type} class={`decision decision-${decision || "other"}`}>
          <Head e={e} />
          <span class="text">
            {decision ? <strong>{decision}</strong> : eventText(e)} {tool} {subject ? <code>{truncate(subject, 160)}</code> : null}
            {rule}
            {e.actor ? ` by ${who(e.actor)}` : ""}
          </span>
        </li>
      );
    }
    case "error":
      return (
        <li data-seq={e.seq} data-type={e.type} class="error-event">
          <Head e={e} />
          <span class="text pre">{eventText(e)}</span>
        </li>
      );
    case "log":
      return (
        <li data-seq={e.seq} data-type={e.type} class={`log${d.stream === "stderr" ? " stderr" : ""}`}>
          <Head e={e} />
          <span class="text">
            <Ansi text={eventText(e)} />
          </span>
        </li>
      );
    default:
      return (
        <li data-seq={e.seq} data-type={e.type} class="system">
          <Head e={e} />
          <span class="text">{eventText(e)}</span>
        </li>
      );
  }
}

/** ANSI-coloured text as runs of plain text with anser's colour classes. */
export function Ansi({ text }: { text: string }) {
  // Most lines have no escape at all: skip the parser.
  if (!text.includes("\u001b[")) return <>{text}</>;
  const runs = Anser.ansiToJson(text, { use_classes: true, remove_empty: true });
  return (
    <>
      {runs.map((r, i) => {
        const classes = [r.fg ? `fg-${r.fg}` : "", r.bg ? `bg-${r.bg}` : "", ...(r.decorations ?? []).map((x) => `ansi-${x}`)].filter(Boolean).join(" ");
        return classes ? (
          <span key={i} class={classes}>
            {r.content}
          </span>
        ) : (
          r.content
        );
      })}
    </>
  );
}

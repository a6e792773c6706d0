// The task's changes: branch, commit and counts from the task record, and the current attempt's `changes.diff`
// artifact rendered by diff2html. diff2html escapes file contents, but not every string it
// places (a too-big hunk's header), so its output is sanitized before it is shown: only the
// elements and attributes its templates use survive (no script, no handler, no style).
import { html as diffHtml } from "diff2html";
import "diff2html/bundles/css/diff2html.min.css";
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { apiResponse } from "../../app/api";
import type { Artifact, Task } from "../../app/types";
import { ErrorText } from "../../components/ui";

export const DIFF_ARTIFACT = "changes.diff";
// Drawn in the page, a diff costs about half a second of a busy tab per 1,000 lines (mostly the
// browser's layout of diff2html's table: 10,000 lines froze the tab for 8 s); larger ones are
// left for download.
const MAX_DIFF_BYTES = 512 * 1024;
const MAX_DIFF_LINES = 3000;

export function Changes({ task, path }: { task: Task; path: string }) {
  const c = task.changes;
  const pr = task.pullRequest;
  const artifact = diffOf(task);
  if (!c && !pr && !artifact) return null;
  return (
    <div class="card" id="changes">
      {/* A review changes nothing: its card is the pull request it reviewed. */}
      <h2 class="first">{c || artifact ? "Changes" : "Pull request"}</h2>
      {c ? (
        <p id="changes-summary">
          <strong>
            {c.files} file{c.files === 1 ? "" : "s"}
          </strong>{" "}
          <span class="added">+{c.additions}</span> <span class="deleted">−{c.deletions}</span>
          {c.branch ? (
            <>
              {" "}
              on <code>{c.branch}</code>
            </>
          ) : null}
          {c.base ? (
            <>
              {" "}
              from <code>{c.base}</code>
            </>
          ) : null}
          {c.commit ? (
            <>
              {" "}
              · commit <code>{c.commit.slice(0, 12)}</code>
            </>
          ) : null}{" "}
          · {c.pushed ? "pushed" : "not pushed"}
        </p>
      ) : null}
      {pr ? (
        <p id="pull-request">
          {task.kind === "review" ? "Reviewed pull request" : "Pull request"}{" "}
          <a href={safeUrl(pr.url)} rel="noreferrer noopener" target="_blank">
            #{pr.number}
          </a>{" "}
          <span class="status" data-status={pr.state}>
            {pr.state}
          </span>{" "}
          <span class="muted">
            from <code>{pr.headBranch}</code>
          </span>
          {pr.reviewUrl ? (
            <>
              {" · "}
              <a href={safeUrl(pr.reviewUrl)} rel="noreferrer noopener" target="_blank">
                the review
              </a>
            </>
          ) : null}
        </p>
      ) : null}
      {artifact ? <DiffView key={artifact.createdAt} path={path} size={artifact.size} /> : null}
    </div>
  );
}

/**
 * The diff of the attempt the task is on, if it made one. Restart and Retry queue a new attempt
 * (its number comes when a worker claims it) and an attempt that changes nothing uploads no diff,
 * so an earlier attempt's changes.diff, still among the artifacts, is not shown as its changes.
 */
export function diffOf(task: Pick<Task, "status" | "attempt" | "artifacts">): Artifact | undefined {
  if (task.status === "queued") return undefined;
  return task.artifacts?.find((a) => a.name === DIFF_ARTIFACT && a.attempt === task.attempt);
}

/** Only http(s) links: a javascript: URL from a bad record must not become a link. */
const safeUrl = (url: string) => (/^https?:\/\//i.test(url) ? url : undefined);

function DiffView({ path, size }: { path: string; size: number }) {
  const html = useSignal<string | null>(null);
  const tooLong = useSignal(false);
  const error = useSignal<unknown>(null);
  useEffect(() => {
    if (size > MAX_DIFF_BYTES) return;
    apiResponse("GET", `${path}/artifacts/${encodeURIComponent(DIFF_ARTIFACT)}`)
      .then((r) => r.text())
      .then(
        (text) => (lineCount(text) > MAX_DIFF_LINES ? (tooLong.value = true) : (html.value = sanitize(diffHtml(text, { drawFileList: true, outputFormat: "line-by-line", matching: "lines", // Light or dark with the system, as the rest of the app.
            colorScheme: "auto" as Parameters<typeof diffHtml>[1] extends infer C ? (C extends { colorScheme?: infer T } ? T : never) : never })))),
        (err) => (error.value = err),
      );
  }, [path]);
  if (size > MAX_DIFF_BYTES || tooLong.value) return <p class="muted" id="diff-too-large">The diff is too large to show here; download {DIFF_ARTIFACT} from the artifacts.</p>;
  if (error.value) return <ErrorText id="diff-error" error={error.value} />;
  if (html.value === null) return <p class="muted">Loading the diff…</p>;
  // Sanitized above: only diff2html's own elements and attributes remain.
  return <div id="diff" class="diff" dangerouslySetInnerHTML={{ __html: html.value }} />;
}

function lineCount(text: string): number {
  let n = 1;
  for (let i = text.indexOf("\n"); i !== -1; i = text.indexOf("\n", i + 1)) n++;
  return n;
}

const ELEMENTS = new Set(["DIV", "SPAN", "TABLE", "TBODY", "THEAD", "TR", "TD", "TH", "A", "INS", "DEL", "OL", "UL", "LI", "SVG", "PATH", "LABEL", "INPUT", "COL", "COLGROUP", "P", "BR", "STRONG", "B", "I", "EM", "CODE", "PRE"]);
const ATTRIBUTES = new Set(["class", "id", "href", "viewbox", "version", "width", "height", "d", "aria-hidden", "type", "title", "fill", "fill-rule"]);

/** diff2html's output with everything but its own markup removed. */
export function sanitize(html: string): string {
  const doc = new DOMParser().parseFromString(`<body>${html}</body>`, "text/html");
  const walk = (el: Element) => {
    for (const child of [...el.children]) {
      if (!ELEMENTS.has(child.tagName.toUpperCase())) {
        child.remove();
        continue;
      }
      for (const attr of [...child.attributes]) {
        const name = attr.name.toLowerCase();
        const bad = !ATTRIBUTES.has(name) || (name === "href" && !attr.value.startsWith("#")) || (name === "type" && attr.value !== "checkbox");
        if (bad) child.removeAttribute(attr.name);
      }
      walk(child);
    }
  };
  walk(doc.body);
  return doc.body.innerHTML;
}

// "/tasks/:taskId/artifacts/:name": one artifact of a task, where the task page's artifact link
// lands when it is opened in a new tab or window (middle click, Ctrl/Cmd click, "Open link in
// new tab"). A plain tab sends no bearer token, so the link cannot be the API's file route: this
// page signs in like every page, finds the task in the person's organizations as the task page
// does, fetches the file with the token and offers it. It does not start the download by itself:
// the person opened a page (to look at an image, or to keep the file for later), a reload or a
// move back would download again, and browsers hold back downloads no click asked for.
import "./artifact.css";
import type { ComponentChildren } from "preact";
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { ApiError, apiResponse } from "../../app/api";
import type { PageProps } from "../../app/routes";
import type { Org, Task } from "../../app/types";
import { Time } from "../../components/Time";
import { ErrorText, Page, Skeleton } from "../../components/ui";
import { dataUrl, previewable } from "../task/artifacts";
import { useTaskInMyOrgs } from "../task/find";
import { sizeText } from "../task/model";

export function ArtifactPage({ params }: PageProps) {
  const taskId = params.taskId ?? "";
  const name = params.name ?? "";
  const { found, error } = useTaskInMyOrgs(taskId);
  if (found.value === undefined) {
    return (
      <Page title={name || "Artifact"} id="artifact-loading">
        <Skeleton lines={4} />
      </Page>
    );
  }
  if (found.value === null) {
    return (
      <Missing error={error.value}>
        <p id="missing-text">There is no such task, or it is not in one of your organizations.</p>
      </Missing>
    );
  }
  return <ArtifactView key={`${taskId}\n${name}`} org={found.value.org} task={found.value.task} name={name} />;
}

/** The file once it is here: an object URL for the Download link, and a data: URL for an image's preview. */
interface File {
  url: string;
  contentType: string;
  size: number;
  preview: string | null;
}

function ArtifactView({ org, task, name }: { org: Org; task: Task; name: string }) {
  const file = useSignal<File | null>(null);
  const error = useSignal<unknown>(null);
  const listed = task.artifacts?.find((a) => a.name === name) ?? null;
  useEffect(() => {
    let url: string | null = null;
    let gone = false;
    (async () => {
      const res = await apiResponse("GET", `/orgs/${encodeURIComponent(org.id)}/tasks/${encodeURIComponent(task.id)}/artifacts/${encodeURIComponent(name)}`);
      const blob = await res.blob();
      if (gone) return;
      url = URL.createObjectURL(blob);
      const contentType = res.headers.get("content-type") ?? listed?.contentType ?? "application/octet-stream";
      file.value = { url, contentType, size: blob.size, preview: null };
      // A preview that cannot be drawn still leaves the download.
      if (previewable(contentType, blob.size)) {
        const preview = await dataUrl(blob);
        if (!gone) file.value = { ...file.value, preview };
      }
    })().catch((err) => {
      if (!gone) error.value = err;
    });
    return () => {
      gone = true;
      if (url) URL.revokeObjectURL(url);
    };
  }, []);

  const back = `/tasks/${encodeURIComponent(task.id)}`;
  // Every organization that could show it answered: "artifact not found" (SPEC §1: also for one the person may not see).
  if (error.value instanceof ApiError && error.value.status === 404) {
    return (
      <Missing error={error.value} back={back} title={task.title}>
        <p id="missing-text">
          The task <a href={back}>{task.title}</a> has no artifact named <code>{name}</code>.
        </p>
      </Missing>
    );
  }
  const f = file.value;
  const contentType = f?.contentType ?? listed?.contentType;
  const size = f?.size ?? listed?.size;
  return (
    <Page title={name} id="artifact" heading={name}>
      <p class="muted artifact-where">
        {org.name} · <a id="artifact-task" href={back}>{task.title}</a>
      </p>
      <div class="card">
        <dl id="artifact-facts" class="facts">
          <dt>Type</dt>
          <dd id="artifact-type">{contentType ?? "—"}</dd>
          <dt>Size</dt>
          <dd id="artifact-size">{size === undefined ? "—" : sizeText(size)}</dd>
          {listed ? (
            <>
              <dt>Added</dt>
              <dd>
                <Time iso={listed.createdAt} /> (attempt {listed.attempt})
              </dd>
            </>
          ) : null}
        </dl>
        <div class="actions">
          {f ? (
            <a id="artifact-download" class="button primary" href={f.url} download={name}>
              Download
            </a>
          ) : error.value ? null : (
            <span id="artifact-fetching" class="muted" role="status">
              Fetching the file…
            </span>
          )}
          <a id="artifact-back" class="button" href={back}>
            Back to the task
          </a>
        </div>
        <ErrorText id="artifact-error" error={error.value} />
      </div>
      {f?.preview ? (
        <div class="card artifact-preview">
          <img alt={`Preview of ${name}`} src={f.preview} />
        </div>
      ) : null}
    </Page>
  );
}

function Missing({ error, back, title, children }: { error: unknown; back?: string; title?: string; children: ComponentChildren }) {
  return (
    <Page title="Artifact not found" id="missing">
      <div class="card">
        {children}
        <ErrorText id="missing-error" error={error} />
        <p class="row">
          {back ? <a href={back}>Back to {title}</a> : null}
          <a href="/tasks">All tasks</a>
        </p>
      </div>
    </Page>
  );
}

// The task's artifacts (SPEC §5): downloads and image previews. The files route wants the
// bearer token, which a plain link or <img src> cannot send, so files are fetched here. Each
// link's address is the artifact's own page (pages/artifact), which a new tab can open: a plain
// click downloads in place, any other way of opening the link goes there.
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { apiResponse } from "../../app/api";
import type { Artifact } from "../../app/types";
import { ErrorText } from "../../components/ui";
import { sizeText } from "./model";

/** Image types a browser shows in an <img> (SVG left out: it is a document, offered as a download). */
const PREVIEW_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"]);
const MAX_PREVIEW_BYTES = 10 * 1024 * 1024;

/** Whether a file of this type and size is shown as an image preview. */
export const previewable = (contentType: string, size: number) => PREVIEW_TYPES.has(contentType.split(";")[0]!.trim().toLowerCase()) && size <= MAX_PREVIEW_BYTES;

/** The web app's page of an artifact (a plain tab can open it; the API's file route wants a token). */
export const artifactPage = (taskId: string, name: string) => `/tasks/${encodeURIComponent(taskId)}/artifacts/${encodeURIComponent(name)}`;

/** A file as a data: URL: the page's policy allows img-src 'self' data:, not blob:. */
export function dataUrl(b: Blob): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error("the file could not be read"));
    reader.readAsDataURL(b);
  });
}

/** Whether a click asks the browser for something else than following the link here (a new tab or window). */
const opensElsewhere = (e: MouseEvent) => e.button !== 0 || e.ctrlKey || e.metaKey || e.shiftKey;

export function Artifacts({ path, taskId, list }: { path: string; taskId: string; list: Artifact[] }) {
  const error = useSignal<unknown>(null);
  if (list.length === 0) return null;
  const blob = async (name: string) => (await apiResponse("GET", `${path}/artifacts/${encodeURIComponent(name)}`)).blob();
  const download = async (name: string) => {
    error.value = null;
    try {
      const url = URL.createObjectURL(await blob(name));
      const a = document.createElement("a");
      a.href = url;
      a.download = name;
      a.hidden = true;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      error.value = err;
    }
  };
  return (
    <div id="artifacts-card" class="card">
      <h2 class="first">Artifacts</h2>
      <ul id="artifacts" class="artifacts">
        {list.map((a) => (
          <li key={`${a.name}\n${a.createdAt}`}>
            {/* No download attribute: the address is a page, which a new tab opens (Alt+click,
                the browser's "download the link", lands in the handler and downloads the file). */}
            <a
              href={artifactPage(taskId, a.name)}
              onClick={(e) => {
                if (opensElsewhere(e)) return;
                e.preventDefault();
                void download(a.name);
              }}
            >
              {a.name}
            </a>{" "}
            <span class="muted">{`${a.contentType}, ${sizeText(a.size)}`}</span>
            {previewable(a.contentType, a.size) ? <Preview a={a} load={blob} onError={(e) => (error.value = e)} /> : null}
          </li>
        ))}
      </ul>
      <ErrorText id="artifacts-error" error={error.value} />
    </div>
  );
}

function Preview({ a, load, onError }: { a: Artifact; load: (name: string) => Promise<Blob>; onError: (err: unknown) => void }) {
  const src = useSignal<string | null>(null);
  useEffect(() => {
    load(a.name)
      .then(dataUrl)
      .then((url) => (src.value = url), onError);
  }, [a.name, a.createdAt]);
  return src.value ? <img class="preview" alt={`Preview of ${a.name}`} src={src.value} /> : null;
}

// @ts-check
// The task page's artifacts (SPEC §5): the list, downloads and image previews. The files route
// wants the bearer token, which a plain link or <img src> cannot send, so files are fetched here.
import { apiResponse } from "./app.js";
import { $, el, showError } from "./ui.js";
import { sizeText } from "./task-model.js";

/** @typedef {import("./task-model.js").Artifact} Artifact */

/** Image types a browser shows in an <img> (SVG left out: it is a document, offered as a download). */
const PREVIEW_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"]);
const MAX_PREVIEW_BYTES = 10 * 1024 * 1024;

export class ArtifactList {
  /** @param {string} path the task's path under /api/v1 */
  constructor(path) {
    this.path = path;
    this.key = "";
    /** Previews already loaded, by name and creation time. @type {Map<string, string>} */
    this.previews = new Map();
  }

  /** @param {Artifact[]} list the task's artifacts; redrawn only when they changed */
  render(list) {
    const key = JSON.stringify(list);
    if (key === this.key) return;
    this.key = key;
    $("artifacts-card").hidden = list.length === 0;
    $("artifacts").replaceChildren(...list.map((a) => this.item(a)));
  }

  /** @param {Artifact} a */
  item(a) {
    const li = el("li");
    const link = /** @type {HTMLAnchorElement} */ (el("a", null, a.name));
    // The route wants the bearer token, which a plain link cannot send: the click fetches the
    // file and hands it to the browser as a download.
    link.href = `/api/v1${this.path}/artifacts/${encodeURIComponent(a.name)}`;
    link.download = a.name;
    link.addEventListener("click", (event) => {
      event.preventDefault();
      void this.download(a.name);
    });
    li.append(link, " ", el("span", "muted", `${a.contentType}, ${sizeText(a.size)}`));
    if (PREVIEW_TYPES.has(a.contentType.split(";")[0].trim().toLowerCase()) && a.size <= MAX_PREVIEW_BYTES) {
      const img = /** @type {HTMLImageElement} */ (el("img", "preview"));
      img.alt = `Preview of ${a.name}`;
      img.hidden = true;
      li.append(img);
      void this.preview(img, a);
    }
    return li;
  }

  /**
   * Shows an image artifact as a data: URL (the page's policy allows img-src 'self' data:).
   * @param {HTMLImageElement} img
   * @param {Artifact} a
   */
  async preview(img, a) {
    const key = `${a.name}\n${a.createdAt}`;
    try {
      let url = this.previews.get(key);
      if (!url) {
        url = await dataUrl(await this.blob(a.name));
        this.previews.set(key, url);
      }
      img.src = url;
      img.hidden = false;
    } catch (err) {
      showError("artifacts-error", err);
    }
  }

  /** @param {string} name */
  async download(name) {
    showError("artifacts-error", null);
    try {
      const url = URL.createObjectURL(await this.blob(name));
      const a = /** @type {HTMLAnchorElement} */ (el("a"));
      a.href = url;
      a.download = name;
      a.hidden = true;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (err) {
      showError("artifacts-error", err);
    }
  }

  /** @param {string} name */
  async blob(name) {
    return (await apiResponse("GET", `${this.path}/artifacts/${encodeURIComponent(name)}`)).blob();
  }
}

/**
 * @param {Blob} blob
 * @returns {Promise<string>}
 */
function dataUrl(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error ?? new Error("the file could not be read"));
    reader.readAsDataURL(blob);
  });
}

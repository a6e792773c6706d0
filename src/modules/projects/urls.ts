// Git repository URLs a project may hold: https://host/path, ssh://[user@]host[:port]/path and
// the scp-like [user@]host:path. Nothing that a git command line could read as an option, no
// local paths, no embedded passwords (they would be stored in plain text).

const HOST = /^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
const PATH_SEGMENT = /^[A-Za-z0-9._~+@-]+$/;
const SCP = /^(?:([A-Za-z0-9_][A-Za-z0-9._-]*)@)?([^:/@\s]+):(.+)$/;
export const MAX_URL_LENGTH = 2048;

export interface GitUrl {
  url: string;
  /** A name derived from the last path segment, without .git. */
  name: string;
}

function pathOk(path: string): string[] | null {
  const segments = path.split("/").filter((s, i) => !(i === 0 && s === ""));
  if (segments.length === 0 || segments.some((s) => s === "" || s === "." || s === ".." || !PATH_SEGMENT.test(s) || s.startsWith("-"))) return null;
  return segments;
}

function hostOk(host: string): boolean {
  if (host.startsWith("[") && host.endsWith("]")) return /^\[[0-9A-Fa-f:.]+\]$/.test(host);
  return HOST.test(host);
}

/** The URL (trimmed) and its derived name, or null when it is not an accepted git URL. */
export function parseGitUrl(raw: string): GitUrl | null {
  const url = raw.trim();
  if (url.length === 0 || url.length > MAX_URL_LENGTH || /[\s\x00-\x1f\x7f\\]/.test(url)) return null;
  // "." and ".." segments: the URL parser would resolve them away, so look at the raw text.
  if (/(^|[/:])\.\.?(\/|$)/.test(url)) return null;
  let segments: string[] | null;
  if (/^(https|ssh):\/\//i.test(url)) {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      return null;
    }
    if (u.password || u.search || u.hash || !hostOk(u.hostname)) return null;
    if (u.protocol === "https:" && u.username) return null;
    if (u.username && !/^[A-Za-z0-9_][A-Za-z0-9._-]*$/.test(u.username)) return null;
    segments = pathOk(decodeURIComponent(u.pathname));
  } else if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(url)) {
    return null; // http://, git://, file:// and the rest
  } else {
    const m = SCP.exec(url);
    // A one-letter "host" is a Windows drive letter to git (C:/path), i.e. a local path.
    if (!m || m[2].length < 2 || !hostOk(m[2])) return null;
    segments = pathOk(m[3]);
  }
  if (!segments) return null;
  return { url, name: nameFrom(segments[segments.length - 1]) };
}

export const REPOSITORY_NAME = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$/;

function nameFrom(segment: string): string {
  const bare = segment.replace(/\.git$/i, "").replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[.-]+/, "").slice(0, 100);
  return REPOSITORY_NAME.test(bare) ? bare : "repository";
}

/** Branch names git would accept, minus the exotic: no spaces, ~^:?*[\, "..", "//", "@{". */
export function isBranchName(branch: string): boolean {
  return (
    branch.length > 0 &&
    branch.length <= 255 &&
    /^[A-Za-z0-9._/+-]+$/.test(branch) &&
    !/^[-/.]|\/$|\.$|\.lock$|\.\.|\/\/|\/\./.test(branch)
  );
}

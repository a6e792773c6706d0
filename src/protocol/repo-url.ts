// One spelling per git remote, so that `git@host:Org/Repo.git`, `https://host/org/repo` and
// `ssh://git@host/org/repo.git` are recognised as the same repository (discovery, clones).

/** `host/path` in lower case, without scheme, user, port, trailing slash or `.git`; local paths keep theirs. */
export function normalizeRepoUrl(raw: string): string {
  let url = raw.trim();
  let host = "";
  let path = url;
  const scp = /^(?:[^@/]+@)?([^:/]+):(?!\/)(.+)$/.exec(url);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    try {
      const u = new URL(url);
      if (u.protocol === "file:") return "file:" + trimGit(decodeURIComponent(u.pathname));
      host = u.hostname;
      path = u.pathname;
    } catch {
      return url.toLowerCase();
    }
  } else if (scp && !url.startsWith("/")) {
    host = scp[1];
    path = scp[2];
  } else {
    return "file:" + trimGit(url);
  }
  return `${host.toLowerCase()}/${trimGit(path).replace(/^\/+/, "").toLowerCase()}`;
}

function trimGit(path: string): string {
  return path.replace(/\/+$/, "").replace(/\.git$/i, "").replace(/\/+$/, "");
}

/** The repository's name: the last path segment without `.git`. */
export function repoNameOf(raw: string): string {
  const path = trimGit(raw.trim()).replace(/^.*[:/]/, "");
  return path || "repository";
}

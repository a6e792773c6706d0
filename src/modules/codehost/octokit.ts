// The GitHub clients (octokit), an entry point of its own in the executable (src/lazy.ts): loaded
// when the server first talks to GitHub, so a server that never does carries none of it (190 kB of
// code, 1.6 MiB of idle memory).
export { Octokit } from "@octokit/rest";
export { createAppAuth } from "@octokit/auth-app";
export { OAuthApp } from "@octokit/oauth-app";

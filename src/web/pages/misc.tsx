// Small pages: "/" (straight on to the tasks), pages not built yet, the in-app 404, and the
// frame of the bare pages (a top bar with who is signed in).
import type { ComponentChildren } from "preact";
import { useEffect } from "preact/hooks";
import { signOut } from "../app/api";
import { user } from "../app/session";
import type { PageProps } from "../app/routes";
import { EmptyState, Page } from "../components/ui";

export const NotBuilt = (title: string) =>
  function NotBuiltPage(_: PageProps) {
    return (
      <Page title={title} id="not-built">
        <EmptyState title="This page is not built yet.">
          <p>
            Until it is, the <a href="/api/v1/docs">API reference</a> shows how to do this with the API.
          </p>
        </EmptyState>
      </Page>
    );
  };

export function NotFound() {
  useEffect(() => {
    document.title = "Page not found · ao";
  }, []);
  return (
    <section id="not-found" class="card narrow-card" aria-labelledby="not-found-title">
      <h1 id="not-found-title">Page not found</h1>
      <p>There is no page at this address. It may have been mistyped, or the link is out of date.</p>
      <ul class="links">
        <li>
          <a href="/">Home</a>
        </li>
        <li>
          <a href="/tasks">Tasks</a>
        </li>
      </ul>
    </section>
  );
}

export function Bare({ children }: { children: ComponentChildren }) {
  const me = user.value;
  return (
    <div class="bare">
      <header class="bar">
        <a class="brand" href="/">
          <img src="/assets/icon.svg" alt="" width="22" height="22" /> ao
        </a>
        {me ? (
          <div id="who" class="who">
            <span id="who-name">{me.name ? `${me.name} (${me.email})` : me.email}</span>
            <button type="button" id="sign-out" class="link" onClick={() => void signOut().finally(() => location.reload())}>
              Sign out
            </button>
          </div>
        ) : null}
      </header>
      <main class="narrow">{children}</main>
    </div>
  );
}

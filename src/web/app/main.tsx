// The web app's entry: restores the session, then shows the page the address names, inside the
// shell (sidebar) for signed-in pages, alone for the bare ones (setup, device, pair), or the
// sign-in form first.
import "./base.css";
import "./shell.css";
import "../components/components.css";
import { render } from "preact";
import { useEffect } from "preact/hooks";
import { matchPath } from "./paths";
import { ROUTES } from "./routes";
import { address, startRouter } from "./router";
import { loadOrgs, restoreSession, retryOrgs, user } from "./session";
import { Shell } from "./shell";
import { SignIn } from "../components/SignIn";
import { NeedsOrgs } from "../components/NeedsOrgs";
import { NotFound, Bare } from "../pages/misc";

function App() {
  const a = address.value;
  const me = user.value;
  useEffect(() => {
    if (me) void loadOrgs();
  }, [me?.id]);
  // Organizations that failed to load are asked for again on the way to another page.
  useEffect(() => {
    if (me) retryOrgs();
  }, [a.path]);
  const match = matchPath(a.path);
  if (!match) return <Bare>{<NotFound />}</Bare>;
  const route = ROUTES[match.pattern];
  const Page = route.page;
  if (route.public) return <Bare>{<Page params={match.params} address={a} />}</Bare>;
  if (me === undefined) return <p id="loading" class="muted loading">Loading…</p>;
  if (me === null) return <Bare>{<SignIn why={route.why} />}</Bare>;
  const shown = <Page key={match.pattern} params={match.params} address={a} />;
  const page = route.orgs ? <NeedsOrgs>{shown}</NeedsOrgs> : shown;
  return route.bare ? <Bare>{page}</Bare> : <Shell>{page}</Shell>;
}

// The entry's exports stay reachable as import("/assets/app.js") in the page: the browser tests
// check single-flight refreshes through it.
export { refresh } from "./api";

startRouter();
void restoreSession();
// app.html's static "Loading…" covers the moment before this script runs. Preact reused it only when
// the first render was that same <p>, so a public page kept it below itself: it goes for every path.
const root = document.getElementById("app")!;
root.replaceChildren();
render(<App />, root);

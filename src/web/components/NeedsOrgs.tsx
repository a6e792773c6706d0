// The pages that show one of the person's organizations wait for them here (routes.tsx marks
// them `orgs`): until they are loaded, grey bars; when they could not be, why, with Retry. A page
// never takes organizations that failed to load for none at all ("You are in no organization").
import type { ComponentChildren } from "preact";
import { errorText } from "../app/api";
import { orgs, orgsError, orgsLoading, retryOrgs } from "../app/session";
import { Page, Skeleton } from "./ui";

export function NeedsOrgs({ children }: { children: ComponentChildren }) {
  if (orgs.value) return <>{children}</>;
  if (!orgsError.value) return <Skeleton />;
  return (
    <Page title="Organizations not loaded" id="orgs-unavailable">
      <div class="card">
        <OrgsUnavailable />
      </div>
    </Page>
  );
}

/** Why the person's organizations could not be loaded, and Retry (they are asked again by themselves too). */
export function OrgsUnavailable() {
  return (
    <div id="orgs-error" role="alert">
      <p class="error">Could not load your organizations. {errorText(orgsError.value)}</p>
      <p class="muted">ao tries again by itself in a moment; Retry tries now.</p>
      <button type="button" onClick={retryOrgs} disabled={orgsLoading.value}>
        {orgsLoading.value ? "Retrying…" : "Retry"}
      </button>
    </div>
  );
}

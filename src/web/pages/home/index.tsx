// "/": who you are, your organizations (each opens its tasks) and, on a fresh instance, the
// steps from here to a first task, each a link to the page that does it.
import { useSignal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { listAll } from "../../app/api";
import type { PageProps } from "../../app/routes";
import { orgId, orgs, orgsError, user } from "../../app/session";
import type { Project } from "../../app/types";
import { Page } from "../../components/ui";
import { OrgsUnavailable } from "../../components/NeedsOrgs";

export function HomePage(_: PageProps) {
  const me = user.value!;
  const list = orgs.value;
  const projects = useSignal<Project[] | null>(null);
  const id = orgId.value;
  useEffect(() => {
    if (!id) return;
    listAll<Project>(`/orgs/${encodeURIComponent(id)}/projects`).then(
      (p) => (projects.value = p),
      () => (projects.value = null),
    );
  }, [id]);
  return (
    <Page title="Home" heading={`Welcome${me.name ? `, ${me.name}` : ""}`} id="home">
      <div class="card">
        <dl class="facts">
          <dt>Name</dt>
          <dd id="home-name">{me.name || "—"}</dd>
          <dt>Email</dt>
          <dd id="home-email">{me.email}</dd>
          <dt>Account</dt>
          <dd id="home-account">{[me.isAdmin ? "instance administrator" : "user", me.twoFactorEnabled ? "two-factor on" : "two-factor off"].join(", ")}</dd>
        </dl>
        <h2>Organizations</h2>
        {list && list.length > 0 ? (
          <ul id="home-orgs" class="plain">
            {list.map((o) => (
              <li key={o.id}>
                <strong>
                  <a href={`/tasks?org=${encodeURIComponent(o.id)}`}>{o.name}</a>
                </strong>{" "}
                <span class="badge">{o.role}</span>
              </li>
            ))}
          </ul>
        ) : list ? (
          <p id="home-no-orgs" class="muted">
            You are in no organization yet. Ask an administrator to add you.
          </p>
        ) : null}
        {orgsError.value ? <OrgsUnavailable /> : null}
      </div>
      {projects.value && projects.value.length === 0 ? (
        <div class="card" id="home-start">
          <h2 class="first">Getting started</h2>
          <ol class="steps">
            <li>
              <a href="/projects">Create a project</a> with the repository the agents work on.
            </li>
            <li>
              <a href="/workers">Pair a worker</a>: run <code>ao worker --server {location.origin}</code> on a machine with an agent, and approve its code.
            </li>
            <li>
              <a href="/tasks">Create a task</a> and follow it live.
            </li>
          </ol>
        </div>
      ) : null}
    </Page>
  );
}

// Which component each page address shows (the addresses are in paths.ts, shared with the
// server). `bare` pages are shown without the sidebar (one decision or form, reached from a
// link a program printed); `public` ones need no sign-in; `why` says why signing in is needed;
// `orgs` pages show one of the person's organizations, and wait for them (components/NeedsOrgs).
import type { FunctionComponent } from "preact";
import type { AppPath } from "./paths";
import type { Address } from "./router";
import { HomePage } from "../pages/home";
import { SetupPage } from "../pages/setup";
import { DevicePage } from "../pages/device";
import { PairPage } from "../pages/pair";
import { TasksPage } from "../pages/tasks";
import { TaskPage } from "../pages/task";
import { ArtifactPage } from "../pages/artifact";
import { ProjectsPage } from "../pages/projects";
import { ProjectPage } from "../pages/project";
import { WorkersPage } from "../pages/workers";
import { IntegrationsPage } from "../pages/integrations";
import { GitHubPage } from "../pages/github";
import { SettingsPage } from "../pages/settings";
import { AccountPage } from "../pages/account";
import { AdminPage } from "../pages/admin";

export interface PageProps {
  params: Record<string, string>;
  address: Address;
}

export interface Route {
  page: FunctionComponent<PageProps>;
  bare?: boolean;
  public?: boolean;
  why?: string;
  orgs?: boolean;
}

export const ROUTES: Record<AppPath, Route> = {
  "/": { page: HomePage },
  "/setup": { page: SetupPage, bare: true, public: true },
  "/device": { page: DevicePage, bare: true, why: "Sign in to approve the device sign-in." },
  "/pair": { page: PairPage, bare: true, why: "Sign in to pair the worker.", orgs: true },
  "/tasks": { page: TasksPage, why: "Sign in to see the tasks.", orgs: true },
  "/tasks/:taskId": { page: TaskPage, why: "Sign in to see the task.", orgs: true },
  "/tasks/:taskId/artifacts/:name": { page: ArtifactPage, why: "Sign in to see the artifact.", orgs: true },
  "/projects": { page: ProjectsPage, why: "Sign in to see the projects.", orgs: true },
  "/projects/:projectId": { page: ProjectPage, why: "Sign in to see the project.", orgs: true },
  "/workers": { page: WorkersPage, why: "Sign in to see the workers.", orgs: true },
  "/integrations": { page: IntegrationsPage, why: "Sign in to manage the integrations.", orgs: true },
  "/github": { page: GitHubPage, why: "Sign in to connect GitHub.", orgs: true },
  "/settings": { page: SettingsPage, why: "Sign in to see the organization's settings.", orgs: true },
  "/account": { page: AccountPage, why: "Sign in to manage your account." },
  "/admin": { page: AdminPage, why: "Sign in to administer this server." },
};

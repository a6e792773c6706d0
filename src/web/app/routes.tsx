// Which component each page address shows (the addresses are in paths.ts, shared with the
// server). `bare` pages are shown without the sidebar (one decision or form, reached from a
// link a program printed); `public` ones need no sign-in; `why` says why signing in is needed.
import type { FunctionComponent } from "preact";
import type { AppPath } from "./paths";
import type { Address } from "./router";
import { NotBuilt } from "../pages/misc";
import { HomePage } from "../pages/home";
import { SetupPage } from "../pages/setup";
import { DevicePage } from "../pages/device";
import { PairPage } from "../pages/pair";
import { TasksPage } from "../pages/tasks";
import { TaskPage } from "../pages/task";

export interface PageProps {
  params: Record<string, string>;
  address: Address;
}

export interface Route {
  page: FunctionComponent<PageProps>;
  bare?: boolean;
  public?: boolean;
  why?: string;
}

export const ROUTES: Record<AppPath, Route> = {
  "/": { page: HomePage },
  "/setup": { page: SetupPage, bare: true, public: true },
  "/device": { page: DevicePage, bare: true, why: "Sign in to approve the device sign-in." },
  "/pair": { page: PairPage, bare: true, why: "Sign in to pair the worker." },
  "/tasks": { page: TasksPage, why: "Sign in to see the tasks." },
  "/tasks/:taskId": { page: TaskPage, why: "Sign in to see the task." },
  // Built on this framework by the pages' own work (issue 11, part 2).
  "/projects": { page: NotBuilt("Projects") },
  "/projects/:projectId": { page: NotBuilt("Project") },
  "/workers": { page: NotBuilt("Workers") },
  "/integrations": { page: NotBuilt("Integrations") },
  "/github": { page: NotBuilt("GitHub") },
  "/settings": { page: NotBuilt("Settings") },
  "/account": { page: NotBuilt("Account") },
  "/admin": { page: NotBuilt("Admin") },
};

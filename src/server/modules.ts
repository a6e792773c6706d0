// The feature modules, in mounting order. Each is (core) => Elysia plugin; a module's factory
// may also register socket handlers (core.sockets), listeners (core.events) and timers (core.onClose).
import type { Core } from "./core";
import auth from "../modules/auth";
import orgs from "../modules/orgs";
import projects from "../modules/projects";
import tasks from "../modules/tasks";
import live from "../modules/live";
import workers from "../modules/workers";
import integrations from "../modules/integrations";
import codehost from "../modules/codehost";
import web from "../modules/web";
import backup from "../modules/backup";
import metrics from "../modules/metrics";
import usage from "../modules/usage";

export const MODULES: ((core: Core) => any)[] = [auth, orgs, projects, tasks, live, workers, integrations, codehost, backup, metrics, usage, web];

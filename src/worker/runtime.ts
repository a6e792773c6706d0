// The worker's main loop: one socket to the server (reconnected with jittered backoff, to the next
// of several servers when it drops), hello and heartbeats, offers claimed up to --capacity,
// controls routed to their attempt, clone and readiness requests served, the workspace reported.
import { mkdirSync, readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { CLOSE, PROTOCOL_VERSION, type Control, type Offer, type ReadinessRequest, type ServerMessage } from "../protocol/messages";
import { VERSION } from "../version";
import { Attempt } from "./attempt";
import { backoff, HttpError, type WorkerClient } from "./client";
import { inventory } from "./inventory";
import { killOrphan, killSandboxHelpers } from "./orphans";
import { credentialPath } from "./credential";
import { confinementFor, unconfined, unconfinedBecause, type Confinement } from "./confine";
import { assessReadiness } from "./readiness";
import { cloneIntoWorkspace, findClone, handleClone, reportWorkspace } from "./repos";
import type { Agent } from "./agents/types";
import type { ClaimResult } from "../protocol/requests";
import type { WorkerOptions } from "./options";
import { SocketRequests } from "./socket-requests";

/** How often the workspace is rescanned for discovered repositories. */
const SCAN_EVERY_MS = 60_000;
/** Kept checkouts of unfinished tasks (for retries that continue) beyond this many are pruned. */
const MAX_KEPT = 20;

export class WorkerRuntime {
  private ws: WebSocket | null = null;
  /** The server the socket goes to (requests may have moved on already). */
  private wsServer = "";
  /** Keyed by task and attempt: a restarted task's new attempt may start while the old one is still stopping. */
  private readonly attempts = new Map<string, Attempt>();
  private claiming = 0;
  private readonly cloning = new Set<string>();
  private heartbeat: ReturnType<typeof setInterval> | null = null;
  private scanner: ReturnType<typeof setInterval> | null = null;
  private stopped = false;
  private failures = 0;
  private inventory: Awaited<ReturnType<typeof inventory>> | null = null;
  private finished!: (code: number) => void;
  readonly exited = new Promise<number>((resolve) => (this.finished = resolve));
  readonly runsDir: string;
  /** The agents it runs, in order of preference (the first is the fallback for a task that names none). */
  private readonly agents: Agent[];
  /** The files no agent may read: the worker's credential. */
  private readonly unreadable: string[];
  /** Tried at the start: whether agents' commands run without those files. */
  private confinement: Confinement = unconfinedBecause("");
  /** Agents with a sandbox of their own that run outside the confinement (a bubblewrap cannot run inside it). */
  private readonly unwrapped = new Set<Agent>();

  constructor(
    private readonly options: WorkerOptions,
    private readonly client: WorkerClient,
    agents: Agent | Agent[],
    private readonly say: (line: string) => void,
  ) {
    this.agents = Array.isArray(agents) ? agents : [agents];
    this.runsDir = join(options.dataDir, "runs");
    this.unreadable = [credentialPath(options.dataDir)];
    mkdirSync(this.runsDir, { recursive: true });
    mkdirSync(options.workspace, { recursive: true });
    this.pruneRuns();
  }

  running() {
    return [...this.attempts.values()].map((a) => ({ taskId: a.taskId, attempt: a.attempt }));
  }

  async start() {
    this.inventory = await inventory();
    // Advertised: the agents it runs, in its order, with the versions the PATH probe found (exec is
    // no program on PATH: it describes itself). The server offers a task that names an agent only
    // to a worker that lists it.
    const found = new Map(this.inventory.agents.map((a) => [a.name, a]));
    this.inventory.agents = this.agents.map((a) => a.info ?? found.get(a.name) ?? { name: a.name, version: null });
    this.say(`ao worker: agent ${this.agents.map((a) => a.name).join(", ")}, capacity ${this.options.capacity}, workspace ${this.options.workspace}`);
    // Tried once. An agent with a sandbox of its own (Codex) runs it inside, where a bubblewrap can.
    this.confinement = this.options.confine
      ? confinementFor(this.unreadable, { hidden: this.runsDir })
      : unconfinedBecause("agent commands can read the worker's credential and other tasks' checkouts: --no-confine");
    this.say(`ao worker: ${this.confinement.status}`);
    for (const agent of this.agents.filter((a) => a.ownSandbox)) {
      const why = this.confinement.nestingRefused();
      if (!why) continue;
      this.unwrapped.add(agent);
      this.say(`ao worker: ${agent.name} runs outside bubblewrap, as its own sandbox cannot run inside it here (${why}): its commands can read other tasks' checkouts`);
    }
    if (this.options.requireConfine && (!this.confinement.confined || this.unwrapped.size > 0)) {
      void this.stop(5, "ao worker: --require-confine: an agent would run outside bubblewrap here, so this worker takes no tasks");
      return this.exited;
    }
    this.connect();
    this.scanner = setInterval(() => void this.report(), SCAN_EVERY_MS);
    return this.exited;
  }

  private connect() {
    if (this.stopped) return;
    const server = (this.wsServer = this.client.server);
    const url = server.replace(/^http/, "ws") + "/api/v1/worker/ws";
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${this.client.credential}` } } as unknown as string[]);
    this.ws = ws;
    ws.onopen = () => {
      const inv = this.inventory!;
      this.send({ type: "hello", protocol: PROTOCOL_VERSION, version: VERSION, ...inv, capacity: this.options.capacity, running: this.running() });
    };
    ws.onmessage = (e) => {
      let message: ServerMessage;
      try {
        message = JSON.parse(String(e.data));
      } catch {
        return;
      }
      // A reply belongs to the requests of the socket it came on.
      if (message.type === "reply") return void (this.client.socket?.ws === ws && this.client.socket.settle(message));
      this.onMessage(message);
    };
    ws.onclose = (e) => {
      if (this.client.socket?.ws === ws) {
        this.client.socket.close("the socket closed before the reply");
        this.client.socket = null;
      }
      if (this.ws !== ws) return;
      this.ws = null;
      if (this.heartbeat) clearInterval(this.heartbeat);
      this.heartbeat = null;
      if (e.code === CLOSE.revoked) return void this.stop(3, "ao worker: this worker's credential was revoked; pair it again to use it");
      if (e.code === CLOSE.unsupportedVersion) return void this.stop(4, "ao worker: the server speaks another protocol version; upgrade ao");
      // Any server of the service will do, and this one may be gone: the next is tried first.
      this.client.failover(server);
      void this.reconnectLater();
    };
    ws.onerror = () => {};
  }

  /** Reconnects after a jittered, growing wait; a refused credential (401) ends the worker. */
  private async reconnectLater() {
    if (this.stopped) return;
    const wait = backoff(this.failures++, 500, 30_000);
    this.say(`ao worker: disconnected; reconnecting in ${(wait / 1000).toFixed(1)} s`);
    await Bun.sleep(wait);
    try {
      await this.client.me();
    } catch (err) {
      if (err instanceof HttpError && err.status === 401) return void this.stop(3, `ao worker: the server refused this worker's credential (${err.message})`);
      // The server is unreachable: keep trying.
      return void this.reconnectLater();
    }
    this.connect();
  }

  private send(message: unknown) {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  private onMessage(m: ServerMessage) {
    switch (m.type) {
      case "welcome":
        this.failures = 0;
        // A second welcome (on approval) keeps the requests under way on the same socket.
        if (m.requests?.length && this.ws && this.client.socket?.ws !== this.ws) this.client.socket = new SocketRequests(this.ws, m.requests);
        if (this.heartbeat) clearInterval(this.heartbeat);
        this.heartbeat = setInterval(() => this.send({ type: "heartbeat", running: this.running() }), m.heartbeatMs);
        this.say(
          (m.status === "active" ? `ao worker: connected as ${m.workerId}` : "ao worker: connected; waiting for approval by the organization") +
            (this.client.servers.length > 1 ? ` (${this.wsServer})` : ""),
        );
        void this.report();
        return;
      case "offer":
        return void this.onOffer(m);
      case "control":
        return this.onControl(m);
      case "clone":
        // Sent again at every hello until reported: one clone of a repository at a time.
        if (this.cloning.has(m.repositoryId)) return;
        this.cloning.add(m.repositoryId);
        return void handleClone(this.client, this.options.workspace, m, this.say)
          .finally(() => this.cloning.delete(m.repositoryId))
          .then(() => this.report());
      case "readiness":
        return void this.onReadiness(m);
      case "error":
        this.say(`ao worker: server says ${m.code}: ${m.message}`);
        return;
    }
  }

  private async onOffer(offer: Offer) {
    if (this.stopped || this.attempts.size + this.claiming >= this.options.capacity) {
      return this.send({ type: "decline", offerId: offer.offerId });
    }
    this.claiming++;
    try {
      const claim = await this.client.claim(offer.taskId, offer.offerId);
      this.say(`ao worker: running ${claim.task.id} attempt ${claim.attempt}: ${claim.task.title}`);
      const agent = this.agentFor(claim);
      this.say(`ao worker: ${claim.task.id} runs with ${agent.name}`);
      const attempt = new Attempt(
        { client: this.client, agent, runsDir: this.runsDir, unreadable: this.unreadable, confineIn: this.unwrapped.has(agent) ? () => unconfined : this.confinement.confineIn, killGraceMs: this.options.killGraceMs, log: (l) => this.say(`ao worker: ${l}`) },
        claim,
      );
      const key = `${claim.task.id}:${claim.attempt}`;
      this.attempts.set(key, attempt);
      void attempt.done.finally(() => {
        this.attempts.delete(key);
        this.say(`ao worker: finished ${claim.task.id} attempt ${claim.attempt}`);
        this.pruneKept();
      });
    } catch (err) {
      if (!(err instanceof HttpError && err.status === 409)) this.say(`ao worker: claim of ${offer.taskId} failed: ${(err as Error).message}`);
    } finally {
      this.claiming--;
    }
  }

  /**
   * The agent for a claimed task: the one it names, else the project's preferredAgent when this
   * worker has it, else the first. A task naming an agent this worker lacks (it restarted with
   * other agents since its hello) fails with the reason rather than run with another.
   */
  private agentFor(claim: ClaimResult): Agent {
    const byName = (name: unknown) => (typeof name === "string" ? this.agents.find((a) => a.name === name) : undefined);
    const wanted = claim.task.agent;
    if (wanted) {
      return byName(wanted) ?? { name: wanted, start: () => { throw new Error(`this worker does not run the agent '${wanted}' the task asks for`); } };
    }
    return byName(claim.project.policy.preferredAgent) ?? this.agents[0];
  }

  private onControl(m: Control) {
    this.attempts.get(`${m.taskId}:${m.attempt}`)?.control(m);
  }

  private async onReadiness(m: ReadinessRequest) {
    try {
      await this.client.reportReadiness(m.runId, { status: "running" });
      const dir = (await findClone(this.options.workspace, m.url)) ?? (await cloneIntoWorkspace(this.options.workspace, m));
      const result = await assessReadiness(dir, { testTimeoutMs: m.testTimeoutMs });
      await this.client.reportReadiness(m.runId, { status: "completed", ...result });
      this.say(`ao worker: readiness of ${m.name}: ${result.score}/100`);
    } catch (err) {
      await this.client.reportReadiness(m.runId, { status: "failed", error: (err as Error).message }).catch(() => {});
    }
  }

  private async report() {
    try {
      await reportWorkspace(this.client, this.options.workspace);
    } catch (err) {
      this.say(`ao worker: workspace report failed: ${(err as Error).message}`);
    }
  }

  /** Old run directories (a crash mid-attempt) go; kept checkouts beyond MAX_KEPT go, oldest first (also after every attempt). */
  private pruneRuns() {
    for (const entry of readdirSync(this.runsDir)) {
      if (entry === "kept") continue;
      // A run directory left behind means this worker died mid-attempt: its agent may still run.
      if (killOrphan(join(this.runsDir, entry))) this.say(`ao worker: ended the agent a previous run left behind (${entry})`);
      const helpers = killSandboxHelpers(join(this.runsDir, entry));
      if (helpers > 0) this.say(`ao worker: ended ${helpers} sandbox helper${helpers === 1 ? "" : "s"} a previous run left behind (${entry})`);
      rmSync(join(this.runsDir, entry), { recursive: true, force: true });
    }
    this.pruneKept();
  }

  private pruneKept() {
    const keptRoot = join(this.runsDir, "kept");
    let kept: { path: string; at: number }[] = [];
    try {
      kept = readdirSync(keptRoot).map((n) => ({ path: join(keptRoot, n), at: statSync(join(keptRoot, n)).mtimeMs }));
    } catch {}
    kept.sort((a, b) => b.at - a.at);
    for (const k of kept.slice(MAX_KEPT)) {
      try {
        rmSync(k.path, { recursive: true, force: true });
      } catch (err) {
        this.say(`ao worker: could not remove ${k.path}: ${(err as Error).message}`);
      }
    }
  }

  async stop(code: number, message?: string) {
    if (this.stopped) return;
    this.stopped = true;
    if (message) this.say(message);
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.scanner) clearInterval(this.scanner);
    const ws = this.ws;
    this.ws = null;
    ws?.close();
    await Promise.all([...this.attempts.values()].map(async (a) => {
      a.control({ type: "control", taskId: a.taskId, attempt: a.attempt, action: "cancel" });
      await a.done;
    }));
    this.finished(code);
  }
}

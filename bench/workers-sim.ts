// The simulated workers of bench/workers-dispatch.ts, in a process of their own so the task
// creator's schedule is not delayed by the workers' traffic. Driven over IPC:
//   parent -> {cmd: "start", urls, paired, capacity, events,  child -> {ready: true}
//              requests?: "socket" | "http"}
//             (worker i connects to urls[i % urls.length]; claims, events and transitions go on
//             the socket when the server answers them there, as `ao worker` sends them, unless
//             requests is "http")
//   parent -> {cmd: "events", n}                               (events per task from now on)
//   parent -> {cmd: "dump"}                                    child -> {offered, claimed} (epoch ms)
//   child -> {completed: n} every 5 ms while tasks complete
import { SimWorker, type Paired } from "./workers-support";

const now = () => performance.timeOrigin + performance.now();
let offered: [string, number][] = [];
let claimed: [string, number][] = [];
let eventsPerTask = 0;
let completed = 0;
let reported = 0;
let errors = 0;
/** Claims, events and transitions as requests on the socket, as `ao worker` sends them; false: over HTTP. */
let overSocket = true;

/** One worker request, on the socket when the server answers it there and the run allows it, else over HTTP. */
async function send(w: SimWorker, op: string, taskId: string, body: unknown): Promise<{ status: number; body: any }> {
  if (overSocket && w.socketOps.has(op)) return w.request(op, taskId, body);
  const r = await w.api("POST", `/worker/tasks/${taskId}/${op}`, body);
  return { status: r.status, body: await r.json() };
}

async function work(w: SimWorker, m: { type: string; [k: string]: any }) {
  if (m.type !== "offer") return;
  offered.push([m.taskId, now()]);
  const claim = await send(w, "claim", m.taskId, { offerId: m.offerId });
  if (claim.status !== 200) {
    errors++;
    return;
  }
  claimed.push([m.taskId, now()]);
  const { leaseToken } = claim.body as { leaseToken: string };
  if (eventsPerTask > 0) {
    const events = Array.from({ length: eventsPerTask }, (_, i) => ({ seq: i + 1, type: "log", data: { line: `line ${i + 1}` } }));
    if ((await send(w, "events", m.taskId, { leaseToken, events })).status !== 200) errors++;
  }
  if ((await send(w, "transition", m.taskId, { leaseToken, to: "completed", summary: "ok" })).status !== 200) errors++;
  completed++;
}

setInterval(() => {
  if (completed !== reported) {
    reported = completed;
    process.send!({ completed });
  }
}, 5);

process.on("message", async (msg: any) => {
  if (msg.cmd === "start") {
    eventsPerTask = msg.events;
    overSocket = msg.requests !== "http";
    const workers = (msg.paired as Paired[]).map((p, i) => new SimWorker(msg.urls[i % msg.urls.length], p, msg.capacity, (w, m) => void work(w, m).catch(() => errors++)));
    await Promise.all(workers.map((w) => w.connect()));
    process.send!({ ready: true });
  } else if (msg.cmd === "events") {
    eventsPerTask = msg.n;
  } else if (msg.cmd === "dump") {
    process.send!({ offered, claimed, errors });
    offered = [];
    claimed = [];
  } else if (msg.cmd === "exit") {
    process.exit(0);
  }
});

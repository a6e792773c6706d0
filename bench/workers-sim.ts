// The simulated workers of bench/workers-dispatch.ts, in a process of their own so the task
// creator's schedule is not delayed by the workers' traffic. Driven over IPC:
//   parent -> {cmd: "start", urls, paired, capacity, events}  child -> {ready: true}
//             (worker i connects to urls[i % urls.length])
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

async function work(w: SimWorker, m: { type: string; [k: string]: any }) {
  if (m.type !== "offer") return;
  offered.push([m.taskId, now()]);
  const claim = await w.api("POST", `/worker/tasks/${m.taskId}/claim`, { offerId: m.offerId });
  if (claim.status !== 200) {
    errors++;
    await claim.arrayBuffer();
    return;
  }
  claimed.push([m.taskId, now()]);
  const { leaseToken } = (await claim.json()) as { leaseToken: string };
  if (eventsPerTask > 0) {
    const events = Array.from({ length: eventsPerTask }, (_, i) => ({ seq: i + 1, type: "log", data: { line: `line ${i + 1}` } }));
    const r = await w.api("POST", `/worker/tasks/${m.taskId}/events`, { leaseToken, events });
    if (r.status !== 200) errors++;
    await r.arrayBuffer();
  }
  const t = await w.api("POST", `/worker/tasks/${m.taskId}/transition`, { leaseToken, to: "completed", summary: "ok" });
  if (t.status !== 200) errors++;
  await t.arrayBuffer();
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

// A live-updates subscriber in its own process, for tests that need a client the test can
// freeze (SIGSTOP): it subscribes to AO_ORG over AO_WS with AO_TOKEN, prints "subscribed", counts
// what it receives, and prints {"closed": code, "received": n} when the server closes the socket.
const ws = new WebSocket(process.env.AO_WS!, { headers: { authorization: `Bearer ${process.env.AO_TOKEN}` } } as unknown as string[]);
let received = 0;
ws.onopen = () => ws.send(JSON.stringify({ type: "subscribe", orgId: process.env.AO_ORG }));
ws.onmessage = (e) => {
  if (String(e.data).startsWith('{"type":"subscribed"')) console.log("subscribed");
  else received++;
};
ws.onclose = (e) => {
  console.log(JSON.stringify({ closed: e.code, received }));
  process.exit(0);
};

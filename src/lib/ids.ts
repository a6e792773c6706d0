// Time-sortable identifiers: prefix + 10 chars of millisecond time + 16 random chars
// (Crockford base32, ULID layout). Monotonic within a process, so ids sort in creation
// order, which keyset pagination relies on.
const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

export type IdPrefix = "org" | "prj" | "tsk" | "rep" | "wkr" | "int" | "usr" | "tok" | "ses" | "dev" | "dlv" | "plg" | "rdy" | "dsc" | "evt";

let lastTime = 0;
const lastRandom = new Uint8Array(16);

export function newId(prefix: IdPrefix): string {
  let now = Date.now();
  if (now <= lastTime) {
    now = lastTime;
    incrementRandom();
  } else {
    lastTime = now;
    const bytes = crypto.getRandomValues(new Uint8Array(16));
    for (let i = 0; i < 16; i++) lastRandom[i] = bytes[i] & 31;
  }
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  let rand = "";
  for (let i = 0; i < 16; i++) rand += ALPHABET[lastRandom[i]];
  return `${prefix}_${time}${rand}`;
}

function incrementRandom() {
  for (let i = 15; i >= 0; i--) {
    if (lastRandom[i] < 31) {
      lastRandom[i]++;
      return;
    }
    lastRandom[i] = 0;
  }
}

// POST /reconcile by hand, as the watcher calls it: a snapshot key turned
// away during an admission burst (503 AdmissionBusy, Retry-After) is called
// again after the Retry-After, within a bound. Other answers (CacheBehind
// included, which some tests look for) come back as they are.

import { setTimeout as sleep } from "node:timers/promises";
import { httpsJson } from "../../tools/testenv/https-json.js";

type Answer = Awaited<ReturnType<typeof httpsJson>>;

/** The server asks for a second between calls (its Retry-After); the watcher waits that long too. */
const RETRY_MS = 1_000;

function isAdmissionBusy(r: Answer): boolean {
  const body = r.body as { reason?: unknown } | undefined;
  return r.status === 503 && body?.reason === "AdmissionBusy";
}

export async function reconcileCall(
  url: string,
  caPem: string,
  body: unknown,
  token: string,
  boundMs = 20_000,
): Promise<Answer> {
  const until = Date.now() + boundMs;
  for (;;) {
    const r = await httpsJson(url, caPem, "POST", body, token);
    if (!isAdmissionBusy(r) || Date.now() >= until) return r;
    await sleep(RETRY_MS);
  }
}

// How busy admission is: the /mutate and /validate calls of the last second,
// counted in ten slots of 100 ms. The server answers admission and
// writes statuses from one process on a shared machine, and the apiserver
// that calls the webhooks is the one that takes the status writes: during a
// burst of creates, a status write per create nearly doubled the apiserver's
// work per create. So while admission is busy, status writes are paced
// (reconcile/status-pace.ts), and they catch up once the burst is over.
//
// Only what the apiserver sends counts (answersAdmissionReview): anyone who
// reaches the port could otherwise switch "busy" on with a stream of `{}`.
// Conversions do not count: the apiserver converts for every served version's
// watch cache on each write, and each object again when such a cache relists
// (kubernetes/kubernetes#129979): at 10,000 routes, 11,163 /convert calls came
// during 20 creates, and "busy" held the snapshot reconcile back 5 s. A burst
// of writes shows in /validate, which every create and update calls.

import { isRecord } from "../api/is-record.js";
import type { Now } from "../kube/token-bucket.js";
import { clientCertVerified } from "./app.js";
import type { JsonHandler, JsonReply, RequestContext } from "./json-handler.js";

const SLOT_MS = 100;
const SLOTS = 10;

export class AdmissionPressure {
  private readonly counts = new Array<number>(SLOTS).fill(0);
  private slot = 0;

  constructor(
    /** Calls per second from which admission counts as busy. */
    readonly busyPerSecond = 50,
    private readonly now: Now = Date.now,
  ) {}

  /** One admission call arrived. */
  mark(): void {
    this.advance();
    this.counts[this.slot % SLOTS] = (this.counts[this.slot % SLOTS] ?? 0) + 1;
  }

  /** Calls in the last second. */
  perSecond(): number {
    this.advance();
    return this.counts.reduce((a, b) => a + b, 0);
  }

  busy(): boolean {
    return this.perSecond() >= this.busyPerSecond;
  }

  private advance(): void {
    const current = Math.floor(this.now() / SLOT_MS);
    if (current - this.slot >= SLOTS) this.counts.fill(0);
    else for (let s = this.slot + 1; s <= current; s++) this.counts[s % SLOTS] = 0;
    this.slot = Math.max(this.slot, current);
  }
}

/**
 * Whether `reply` answers an AdmissionReview as the apiserver sends them, with
 * a verdict. Not `{}`, garbage or a review without a uid (a 400 Status), nor a
 * review about something this webhook does not admit (the handlers deny those
 * with code 400, admission-review.ts), nor a ConversionReview (see above).
 */
export function answersAdmissionReview(reply: JsonReply): boolean {
  if (reply.status !== 200 || !isRecord(reply.body)) return false;
  const { kind, response } = reply.body;
  if (kind !== "AdmissionReview") return false;
  if (!isRecord(response) || typeof response.uid !== "string" || response.uid === "") return false;
  return response.allowed === true || !(isRecord(response.status) && response.status.code === 400);
}

/**
 * The handler, with each call counted in `pressure` that was what the
 * apiserver sends: an admission review answered as such
 * (answersAdmissionReview) and, with --client-ca, from a caller whose client
 * certificate verified.
 */
export function countedIn(
  pressure: AdmissionPressure,
  h: JsonHandler,
  opts: { readonly clientCertRequired: boolean },
): JsonHandler {
  const count = (reply: JsonReply, ctx: RequestContext): JsonReply => {
    if (answersAdmissionReview(reply) && (!opts.clientCertRequired || clientCertVerified(ctx)))
      pressure.mark();
    return reply;
  };
  return {
    ...h,
    handle: (body, ctx) => {
      const reply = h.handle(body, ctx);
      return reply instanceof Promise ? reply.then((r) => count(r, ctx)) : count(reply, ctx);
    },
  };
}

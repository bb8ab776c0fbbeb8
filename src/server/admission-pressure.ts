// How busy admission is: the /mutate, /validate and /convert calls of the last
// second, counted in ten slots of 100 ms. The server answers admission and
// writes statuses from one process on a shared machine, and the apiserver
// that calls the webhooks is the one that takes the status writes: during a
// burst of creates, a status write per create nearly doubled the apiserver's
// work per create. So while admission is busy, status writes are paced
// (reconcile/status-pace.ts), and they catch up once the burst is over.
//
// Only what the apiserver sends counts (answersApiserverReview): anyone who
// reaches the port could otherwise switch "busy" on with a stream of `{}`.

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
 * Whether `reply` answers a review as the apiserver sends them: an
 * AdmissionReview answered with a verdict, or a ConversionReview whose objects
 * were converted. Not `{}`, garbage or a review without a uid (a 400 Status),
 * nor a review about something this webhook does not admit (the handlers deny
 * those with code 400, admission-review.ts), nor a conversion that failed.
 */
export function answersApiserverReview(reply: JsonReply): boolean {
  if (reply.status !== 200 || !isRecord(reply.body)) return false;
  const { kind, response } = reply.body;
  if (!isRecord(response) || typeof response.uid !== "string" || response.uid === "") return false;
  if (kind === "AdmissionReview")
    return response.allowed === true || !(isRecord(response.status) && response.status.code === 400);
  if (kind === "ConversionReview") return isRecord(response.result) && response.result.status === "Success";
  return false;
}

/**
 * The handler, with each call counted in `pressure` that was what the
 * apiserver sends: a review answered as such (answersApiserverReview) and,
 * with --client-ca, from a caller whose client certificate verified. So
 * /convert does not count with --client-ca: the apiserver cannot present one
 * to it.
 */
export function countedIn(
  pressure: AdmissionPressure,
  h: JsonHandler,
  opts: { readonly clientCertRequired: boolean },
): JsonHandler {
  const count = (reply: JsonReply, ctx: RequestContext): JsonReply => {
    if (answersApiserverReview(reply) && (!opts.clientCertRequired || clientCertVerified(ctx)))
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

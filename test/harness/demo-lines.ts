// The demo as both demo tests run it (built, as a process), and the lines it
// prints for the lab's lifecycle and the break-glass, in order, in or out of a
// cluster: what both demo tests hold it to.

import path from "node:path";
import { REPO_ROOT } from "../../tools/testenv/testbin.js";

/** The demo's entry point as `npm run demo` runs it (tools/demo/main.ts, built). */
export const DEMO = path.join(REPO_ROOT, "dist/tools/demo/main.js");

export const LAB_LINES: readonly RegExp[] = [
  /^apply \(service missing\): {7}Accepted=false\(ServiceNotFound\) Programmed=false dpPushes=0 rpcs=fail\(UNAVAILABLE\)$/,
  /^service created \(self-heal\): {3}Accepted=true\(Valid\) Programmed=true\(Synced\) dpPushes=1 dpRoutes=1 rpcs=served\(2 backends\)$/,
  /^reconcile x2 \(idempotent\): {5}Accepted=true Programmed=true dpPushes=1$/,
  /^delete issued \(Terminating\): {3}exists=true deletionTimestamp=set finalizer=net\.10xdev\.io\/deprogram Programmed=false\(Pending\) dpRoutes=1 rpcs=served\(2 backends\)$/,
  /^ {2}why: deleted: waiting until every xDS client it was sent to holds a snapshot without it$/,
  /^link back \(finalizer cleanup\): exists=false dpPushes=2 dpRoutes=0 rpcs=fail\(UNAVAILABLE\)$/,
  // The order the finalizer is for: the client stopped reaching the route before the object went.
  /^ {2}order: the client's last RPC on the route \d+\.\d\d s before the object was gone$/,
  /^break-glass \(deprogram timeout 15s\):$/,
  /^legacy applied: {16}Programmed=true\(Synced\) rpcs=served\(2 backends\)$/,
  /^delete, link cut \(stuck\): {6}exists=true finalizer=net\.10xdev\.io\/deprogram Programmed=false\(DeprogramStuck\) rpcs=served\(2 backends\)$/,
  /^ {2}why: the data plane has not taken a snapshot without this route since it was deleted/,
  /^ {2}\$ edge-operator finalizer release default\/legacy --reason "demo: the data plane stays cut off"$/,
  /^ {2}edgeroute default\/legacy: finalizer net\.10xdev\.io\/deprogram released$/,
  /^ {2}Warning: a data plane that has not taken a snapshot without default\/legacy may still send its traffic/,
  /^finalizer released by hand: {4}exists=false rpcs=served\(2 backends\)$/,
  /^link back: {21}dpRoutes=0 rpcs=fail\(UNAVAILABLE\)$/,
  /^v1 \+ v2 routes applied: {8}web=true\(Valid\)\/true\(Synced\) canary=true\(Valid\)\/true\(Synced\)$/,
];

/** The lines after the lab's: both versions, the refused route, what the client and the servers hold. */
export const REST_OF_THE_SHOW: readonly RegExp[] = [
  /\$ kubectl get edgeroutes\.v1\.net\.10xdev\.io\n\s+NAME\s+HOSTS/,
  /canary as v1: \{"host":"shop\.example\.com"/,
  /canary as v2: \{"hostnames":\["shop\.example\.com"\],"rules"/,
  /invalid route refused: +The EdgeRoute "broken" is invalid: spec\.rules\[0\]\.backends\[0\]\.port: Invalid value: 70000/,
  /data plane \(xDS client edge-demo-client, from its CSDS\):\n {2}holds: lds=[0-9a-f]+ rds=[0-9a-f]+ cds=[0-9a-f]+ eds=[0-9a-f]+\n {2}routes: default\/canary default\/web\n/,
  // The 90/10 split of canary, on the real backends.
  /shop\.example\.com RPCs answered by: checkout-\S+ checkout-\S+ checkout-canary-\S+/,
];

export const nonEmptyLines = (text: string): string[] => text.split("\n").filter((l) => l.trim() !== "");

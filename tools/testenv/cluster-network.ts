// The real cluster's network: a bridge of its own that carries the node IP and
// every pod, the service range routed into it (so no ClusterIP packet can take
// the default route if kube-proxy is not there yet), and an nftables guard that
// drops anything forwarded between that bridge and any other interface.

import { APISERVER_PORT, BRIDGE, GUARD_TABLE, NODE_IP, POD_CIDR, SERVICE_CIDR } from "./cluster-config.js";
import { run } from "./process.js";

async function must(cmd: string, args: string[], input?: string): Promise<void> {
  const res = await run(cmd, args, { input });
  if (res.code !== 0)
    throw new Error(`${cmd} ${args.join(" ")} failed (exit ${res.code}): ${res.stderr.trim()}`);
}

export function guardRuleset(): string {
  // Priority -300: before kube-proxy's and anyone else's forward chains.
  return `table inet ${GUARD_TABLE} {
  chain forward {
    type filter hook forward priority -300; policy accept;
    iifname "${BRIDGE}" oifname != "${BRIDGE}" drop
    oifname "${BRIDGE}" iifname != "${BRIDGE}" drop
  }
}
`;
}

export async function setUpNetwork(): Promise<void> {
  const prefix = POD_CIDR.split("/")[1] ?? "24";
  // The guard goes first: the bridge plugin turns ip_forward on as soon as a pod starts.
  await must("nft", ["-f", "-"], guardRuleset());
  await must("ip", ["link", "add", BRIDGE, "type", "bridge"]);
  await must("ip", ["addr", "add", `${NODE_IP}/${prefix}`, "dev", BRIDGE]);
  await must("ip", ["link", "set", BRIDGE, "up"]);
  await must("ip", ["route", "add", SERVICE_CIDR, "dev", BRIDGE, "src", NODE_IP]);
}

/** https://NODE_IP:6443: the apiserver listens on the bridge only. */
export const APISERVER_URL = `https://${NODE_IP}:${APISERVER_PORT}`;

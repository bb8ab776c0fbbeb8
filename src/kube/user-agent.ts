// The User-Agent the apiserver logs and its audit records show for each
// request: which program, which version, which job (`serve`, `watch`, ...),
// so a flood or a failing client can be traced to its process.

import { VERSION } from "../observability/build-info.js";

export { VERSION };

let component = "cli";

/** Names the job this process does (the subcommand); set once, at start. */
export function setUserAgentComponent(name: string): void {
  component = name.replace(/[^A-Za-z0-9._-]/g, "-") || "cli";
}

/** `edge-operator/VERSION (JOB)`, as kubectl's `kubectl/vX (os/arch)`. */
export function userAgent(job: string = component): string {
  return `edge-operator/${VERSION} (${job})`;
}

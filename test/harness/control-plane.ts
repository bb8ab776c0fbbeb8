// The test control plane, with the binaries and run id that global-setup.ts
// provides to every test file. Outside vitest (benchmarks, the demo) the
// control plane is tools/testenv/control-plane.ts itself, which finds its own
// binaries.

import { inject } from "vitest";
import {
  startControlPlane as start,
  type ControlPlane,
  type ControlPlaneOptions,
} from "../../tools/testenv/control-plane.js";

export function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  return start({ binDir: inject("testbinDir") || undefined, runId: inject("runId") || undefined, ...opts });
}

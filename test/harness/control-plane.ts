// The test control plane, with the binaries and run id that global-setup.ts
// provides to every test file.

import { inject } from "vitest";
import {
  startControlPlane as start,
  type ControlPlane,
  type ControlPlaneOptions,
} from "../../src/testenv/control-plane.js";

export type { ControlPlane, ControlPlaneOptions, RunResult } from "../../src/testenv/control-plane.js";

function provided(key: "testbinDir" | "runId"): string | undefined {
  try {
    return inject(key) || undefined;
  } catch {
    // Outside vitest (benchmarks): the control plane finds its own binaries.
    return undefined;
  }
}

export function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  return start({ binDir: provided("testbinDir"), runId: provided("runId"), ...opts });
}

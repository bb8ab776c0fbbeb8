// Loaded with `node --import` into a process a benchmark starts (Node refuses
// --cpu-prof in NODE_OPTIONS): samples the CPU from start to exit and writes a
// .cpuprofile (Chrome DevTools' format) into $CPU_PROF_DIR. The in-process
// inspector answers synchronously, so the profile is written within 'exit'.

import inspector from "node:inspector";
import { writeFileSync } from "node:fs";
import path from "node:path";

const dir = process.env.CPU_PROF_DIR;
if (dir) {
  const session = new inspector.Session();
  session.connect();
  session.post("Profiler.enable");
  session.post("Profiler.setSamplingInterval", { interval: 1000 });
  session.post("Profiler.start");
  process.on("exit", () => {
    session.post("Profiler.stop", (err, res) => {
      if (!err) writeFileSync(path.join(dir, `serve-${process.pid}.cpuprofile`), JSON.stringify(res.profile));
    });
  });
}

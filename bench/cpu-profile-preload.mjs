// Loaded with `node --import` into a process a benchmark starts (Node refuses
// --cpu-prof in NODE_OPTIONS): samples the CPU from start to exit and writes a
// .cpuprofile (Chrome DevTools' format) into $CPU_PROF_DIR. The in-process
// inspector answers synchronously, so the profile is written within 'exit'.
// SIGUSR2 cuts the profile there: what was sampled so far is written as
// PROCESS-PID-N.cpuprofile and a new one starts (a benchmark signals it around
// a segment to get that segment alone).

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
  const role = process.argv.includes("--noop") ? "noop" : process.argv.includes("watch") ? "watch" : "serve";
  let part = 0;
  const cut = (name) => {
    session.post("Profiler.stop", (err, res) => {
      if (!err) writeFileSync(path.join(dir, `${name}.cpuprofile`), JSON.stringify(res.profile));
    });
  };
  process.on("SIGUSR2", () => {
    cut(`${role}-${process.pid}-${++part}`);
    session.post("Profiler.start");
  });
  process.on("exit", () => cut(`${role}-${process.pid}`));
}

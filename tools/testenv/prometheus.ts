// A real Prometheus for the tests (Debian's package, installed by
// scripts/prometheus.sh when missing): started on loopback with a scrape
// config the test writes, asked through its HTTP API; and promtool's lint of
// a /metrics text.

import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { stringify as toYaml } from "yaml";
import { freePort, supervise, waitFor, type Supervised } from "./process.js";
import { REPO_ROOT } from "./testbin.js";

/** The directory holding `prometheus` and `promtool`, installing them first if need be. */
export function ensurePrometheus(): string {
  const r = spawnSync("bash", [path.join(REPO_ROOT, "scripts/prometheus.sh")], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
    timeout: 600_000,
  });
  const dir = r.stdout.trim().split("\n").pop();
  if (r.status !== 0 || !dir) throw new Error(`scripts/prometheus.sh failed (exit ${r.status ?? r.signal})`);
  return dir;
}

/** promtool's lint of a /metrics text: its findings, one a line; empty when clean. */
export function promtoolCheckMetrics(binDir: string, text: string): { clean: boolean; findings: string[] } {
  const r = spawnSync(path.join(binDir, "promtool"), ["check", "metrics"], {
    input: text,
    encoding: "utf8",
    timeout: 30_000,
  });
  const findings = `${r.stdout}\n${r.stderr}`
    .split("\n")
    .map((l) => l.trim())
    .filter(Boolean);
  return { clean: r.status === 0 && findings.length === 0, findings };
}

export interface ScrapeJob {
  readonly job_name: string;
  readonly [k: string]: unknown;
}

export interface QueryResult {
  readonly metric: Record<string, string>;
  readonly value: [number, string];
}

export interface Prometheus {
  readonly url: string;
  /** An instant query (/api/v1/query): the vector it returns. Throws on a query Prometheus refuses. */
  query(expr: string): Promise<QueryResult[]>;
  output(): string;
  stop(): Promise<void>;
}

function getJson(url: string): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 10_000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (text += c));
      res.on("end", () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as unknown });
        } catch {
          resolve({ status: res.statusCode ?? 0, body: text });
        }
      });
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${url}: no answer in 10 s`)));
    req.on("error", reject);
  });
}

/** Starts Prometheus scraping `jobs` every `scrapeSeconds`, on a loopback port, with its data in a temporary directory. */
export async function startPrometheus(
  binDir: string,
  jobs: readonly ScrapeJob[],
  scrapeSeconds = 1,
): Promise<Prometheus> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "edge-prometheus-"));
  const config = path.join(dir, "prometheus.yml");
  writeFileSync(
    config,
    toYaml({
      global: { scrape_interval: `${scrapeSeconds}s`, scrape_timeout: `${scrapeSeconds}s` },
      scrape_configs: jobs,
    }),
  );
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const proc: Supervised = supervise("prometheus", path.join(binDir, "prometheus"), [
    `--config.file=${config}`,
    `--storage.tsdb.path=${path.join(dir, "data")}`,
    `--web.listen-address=127.0.0.1:${port}`,
    // The test asks at once what was just scraped.
    "--query.lookback-delta=30s",
  ]);
  const stop = async (): Promise<void> => {
    await proc.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitFor(
      "Prometheus to be ready",
      async () =>
        (await getJson(`${url}/-/ready`).catch(() => ({ status: 0 }))).status === 200 ? true : undefined,
      60_000,
      250,
    );
  } catch (err) {
    const out = proc.output();
    await stop();
    throw new Error(`${(err as Error).message}\n${out}`);
  }
  return {
    url,
    async query(expr) {
      const r = await getJson(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
      const body = r.body as {
        status?: string;
        error?: string;
        data?: { resultType: string; result: unknown };
      };
      if (r.status !== 200 || body.status !== "success")
        throw new Error(`query ${expr}: ${r.status} ${body.error ?? JSON.stringify(r.body)}`);
      const result = body.data?.result;
      if (body.data?.resultType === "scalar") return [{ metric: {}, value: result as [number, string] }];
      return result as QueryResult[];
    },
    output: () => proc.output(),
    stop,
  };
}

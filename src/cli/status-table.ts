// `edge-operator status` printed: kubectl's table habits (upper-case
// headers, columns two spaces apart, `<none>` for nothing, ages as 5m or 3d),
// or the report itself as JSON or YAML for scripts.

import { stringify as toYaml } from "yaml";
import type { ConditionCell, StatusReport } from "./status-report.js";

export const OUTPUTS = ["table", "json", "yaml"] as const;
export type Output = (typeof OUTPUTS)[number];

/** kubectl's short ages: 45s, 5m30s, 95m, 5h10m, 20h, 3d4h, 30d. */
export function age(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  const d = Math.floor(h / 24);
  if (s < 120) return `${s}s`;
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (h < 3) return `${m}m`;
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (d < 2) return `${h}h`;
  if (d < 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  return `${d}d`;
}

/** `True`, `False/ServiceNotFound`; `*` when it speaks of an older generation; `-` when absent. */
function conditionText(c: ConditionCell | undefined): string {
  if (!c) return "-";
  const text = c.status === "True" || !c.reason ? c.status : `${c.status}/${c.reason}`;
  return c.outdated ? `${text}*` : text;
}

function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((v, i) => (widths[i] = Math.max(widths[i] ?? 0, v.length)));
  return rows
    .map((r) =>
      r
        .map((v, i) => (i === r.length - 1 ? v : v.padEnd(widths[i] ?? 0)))
        .join("   ")
        .trimEnd(),
    )
    .join("\n");
}

/** One line of a NACK's words: a client's message can be long and span lines. */
function oneLine(text: string, max = 80): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function renderTable(report: StatusReport, nowMs: number, allNamespaces: boolean): string {
  const out: string[] = [];
  if (report.routes.length === 0) out.push("No EdgeRoutes found.");
  else {
    const head = [
      ...(allNamespaces ? ["NAMESPACE"] : []),
      "NAME",
      "HOSTS",
      "ACCEPTED",
      "PROGRAMMED",
      "RESOLVEDREFS",
      "AGE",
    ];
    const rows = report.routes.map((r) => [
      ...(allNamespaces ? [r.namespace] : []),
      r.name,
      r.hosts.length > 0 ? r.hosts.join(",") : "*",
      conditionText(r.accepted),
      conditionText(r.programmed),
      conditionText(r.resolvedRefs),
      r.createdAt ? age(nowMs - Date.parse(r.createdAt)) : "<unknown>",
    ]);
    out.push(table([head, ...rows]));
    if (report.routes.some((r) => [r.accepted, r.programmed, r.resolvedRefs].some((c) => c?.outdated)))
      out.push("* the condition is about an older generation of the route: the operator has not caught up");
  }
  out.push("");
  const dp = report.dataPlane;
  if (dp.replicas.length === 0) {
    out.push(`No xDS ACK records found${dp.note ? `: ${dp.note}` : "."}`);
  } else {
    const head = ["REPLICA", "SERVES", "RENEWED", "CLIENT", "ACKED", "STATE", "MESSAGE"];
    const rows: string[][] = [];
    for (const r of dp.replicas) {
      const replica = r.live ? r.replica : `${r.replica} (expired)`;
      const renewed = age(nowMs - Date.parse(r.renewedAt));
      if (r.clients.length === 0) rows.push([replica, r.served ?? "<none>", renewed, "<none>", "", "", ""]);
      for (const c of r.clients) {
        const message =
          c.state === "nacked" && c.nack
            ? `refused ${c.nack.version}: ${oneLine(c.nack.message)}`
            : c.state === "unreachable" && c.unreachableSince
              ? `silent for ${age(nowMs - Date.parse(c.unreachableSince))}`
              : c.nack
                ? `refused ${c.nack.version} before`
                : "";
        rows.push([replica, r.served ?? "<none>", renewed, c.id, c.acked ?? "<none>", c.state, message]);
      }
    }
    out.push(table([head, ...rows]));
    if (dp.servedVersions.length > 1)
      out.push(
        `Replicas serve ${dp.servedVersions.length} versions (${dp.servedVersions.join(", ")}): a push is on its way, or a replica is behind.`,
      );
  }
  return `${out.join("\n")}\n`;
}

export function render(report: StatusReport, output: Output, nowMs: number, allNamespaces: boolean): string {
  if (output === "json") return `${JSON.stringify(report, null, 2)}\n`;
  if (output === "yaml") return toYaml(report);
  return renderTable(report, nowMs, allNamespaces);
}

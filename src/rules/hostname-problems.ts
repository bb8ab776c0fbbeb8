// Why a hostname is not one a route may name: shared by the checks of a
// route's hostnames and of the ones its TLS serves.

import { LIMITS } from "../api/schema.js";

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Why a hostname is not a lowercase DNS-1123 subdomain or `*.` + one; empty when it is one. */
export function hostnameProblems(host: string): string[] {
  const problems: string[] = [];
  if (host.length > LIMITS.hostLength) problems.push(`must be no more than ${LIMITS.hostLength} characters`);
  if (host === "") return ["must not be empty"];
  if (host !== host.toLowerCase()) problems.push("must be lowercase");
  const labels = host.split(".");
  const wildcard = labels[0] === "*";
  if (wildcard && labels.length < 2) problems.push("a wildcard must be followed by a domain (*.example.com)");
  if (labels.slice(wildcard ? 1 : 0).some((l) => l.includes("*"))) {
    problems.push("a wildcard is allowed only as the whole first label (*.example.com)");
  }
  const bad = labels.slice(wildcard ? 1 : 0).filter((l) => !l.includes("*"));
  if (bad.some((l) => l.length > 63)) problems.push("each label must be no more than 63 characters");
  if (bad.some((l) => l.length <= 63 && !DNS1123_LABEL.test(l.toLowerCase()))) {
    problems.push(
      "must be a DNS-1123 subdomain: labels of lowercase letters, digits and '-', separated by '.', each starting and ending with a letter or digit",
    );
  }
  return problems;
}

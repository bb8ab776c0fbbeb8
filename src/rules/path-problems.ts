// Why a path cannot be matched (or written by a redirect or rewrite) safely:
// the one list of refusals for match paths and the paths filters produce.

import { LIMITS } from "../api/schema.js";

/** Why a path cannot be matched safely; empty when it can. */
export function pathProblems(path: string): string[] {
  const problems: string[] = [];
  if (!path.startsWith("/")) problems.push("must start with '/'");
  if (path.length > LIMITS.pathLength) problems.push(`must be no more than ${LIMITS.pathLength} characters`);
  for (const bad of ["//", "/./", "/../"]) {
    if (path.includes(bad)) problems.push(`must not contain '${bad}'`);
  }
  if (path.endsWith("/..") || path === "..") problems.push("must not end with '/..'");
  else if (path.endsWith("/.") || path === ".") problems.push("must not end with '/.'");
  if (/%2f/i.test(path)) problems.push("must not contain an encoded slash ('%2F')");
  if (path.includes("#")) problems.push("must not contain '#'");
  if (path.includes("?")) problems.push("must not contain '?'");
  // eslint-disable-next-line no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(path))
    problems.push("must not contain whitespace or control characters");
  return problems;
}

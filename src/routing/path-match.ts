// How a route's path match becomes an Envoy RouteMatch. The Gateway API's
// PathPrefix matches whole segments and ignores a trailing slash: `/abc` and
// `/abc/` both match `/abc`, `/abc/` and `/abc/def`, never `/abcd`. Envoy's
// `path_separated_prefix` does exactly that, but takes no trailing slash and no
// bare `/`, which is plain `prefix: "/"` (every path starts with it).

import type { PathMatchType } from "../api/types.js";

export type EnvoyPathMatch =
  | { readonly path: string }
  | { readonly prefix: "/" }
  | { readonly path_separated_prefix: string }
  | { readonly safe_regex: { readonly regex: string } };

/** The path a match means: a prefix loses its trailing slashes (`/abc/` is `/abc`, `//` is `/`). */
export function normalizePath(type: PathMatchType, value: string): string {
  if (type !== "PathPrefix") return value;
  let end = value.length;
  while (end > 1 && value.charCodeAt(end - 1) === 47 /* / */) end--;
  return end === value.length ? value : value.slice(0, end);
}

/** The Envoy path specifier for an already normalized path. */
export function envoyPathMatch(type: PathMatchType, path: string): EnvoyPathMatch {
  if (type === "Exact") return { path };
  // RE2 syntax; Envoy and gRPC match it against the whole path.
  if (type === "RegularExpression") return { safe_regex: { regex: path } };
  if (path === "/") return { prefix: "/" };
  return { path_separated_prefix: path };
}

/** Why a path cannot be programmed, or undefined when it can. Envoy matches the path without its query or fragment. */
export function pathProblem(value: string): string | undefined {
  if (!value.startsWith("/")) return "must start with '/'";
  if (value.includes("?") || value.includes("#")) return "must not contain '?' or '#'";
  return undefined;
}

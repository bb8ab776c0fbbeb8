// Envoy's own protos (the .proto files @grpc/grpc-js-xds ships) as a checker
// for the JSON we generate: every field name must exist, every value must have
// the field's type, enums must name a value, a oneof takes one member, and the
// protoc-gen-validate rules that Envoy enforces on load (a subset: string
// pattern and length, required messages and oneofs, repeated min_items, number
// bounds, positive durations) must hold. Then JSON → binary → JSON must give
// back the same JSON: a field Envoy would drop shows up as a difference.

import { existsSync } from "node:fs";
import { join } from "node:path";
import protobuf from "protobufjs";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Plain = Record<string, unknown>;

const DEPS = join(import.meta.dirname, "../../node_modules/@grpc/grpc-js-xds/deps");
const INCLUDE = [
  join(DEPS, "envoy-api"),
  join(DEPS, "xds"),
  join(DEPS, "googleapis"),
  join(DEPS, "protoc-gen-validate"),
  join(import.meta.dirname, "../../node_modules/protobufjs"),
];
const FILES = [
  "envoy/config/listener/v3/listener.proto",
  "envoy/config/route/v3/route.proto",
  "envoy/config/cluster/v3/cluster.proto",
  "envoy/config/endpoint/v3/endpoint.proto",
  "envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto",
  "envoy/extensions/filters/http/router/v3/router.proto",
  "envoy/config/bootstrap/v3/bootstrap.proto",
  // What the chart's ADS bootstrap puts in Anys: TLS to the ADS server, HTTP/2 to it.
  "envoy/extensions/transport_sockets/tls/v3/tls.proto",
  "envoy/extensions/transport_sockets/tls/v3/secret.proto",
  "envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto",
  "envoy/extensions/upstreams/http/v3/http_protocol_options.proto",
  "envoy/service/discovery/v3/discovery.proto",
];

const WRAPPERS = new Set(
  ["Double", "Float", "Int64", "UInt64", "Int32", "UInt32", "Bool", "String", "Bytes"].map(
    (n) => `.google.protobuf.${n}Value`,
  ),
);
const DURATION = /^(-?)(\d+)(?:\.(\d{3}|\d{6}|\d{9}))?s$/;

export class EnvoyProtos {
  private constructor(private readonly root: protobuf.Root) {}

  static load(): EnvoyProtos {
    const root = new protobuf.Root();
    root.resolvePath = (_origin, target) => {
      if (existsSync(target)) return target;
      for (const dir of INCLUDE) if (existsSync(join(dir, target))) return join(dir, target);
      return target;
    };
    root.loadSync(FILES, { keepCase: true });
    root.resolveAll();
    return new EnvoyProtos(root);
  }

  /** `type.googleapis.com/envoy.config.cluster.v3.Cluster` or `envoy.config.cluster.v3.Cluster` → its Type. */
  type(name: string): protobuf.Type {
    return this.root.lookupType(name.slice(name.lastIndexOf("/") + 1));
  }

  /** Problems, as `path: what`; empty when the JSON is a valid message of this type. */
  check(typeName: string, json: unknown): string[] {
    const problems: string[] = [];
    this.toPlain(this.type(typeName), withoutType(typeName, json, problems), typeName, problems);
    return problems;
  }

  /** JSON → protobuf binary → JSON. Throws when the JSON does not check. */
  roundTrip(typeName: string, json: unknown): Json {
    const type = this.type(typeName);
    const problems: string[] = [];
    const plain = this.toPlain(type, withoutType(typeName, json, problems), typeName, problems);
    if (problems.length > 0) throw new Error(problems.join("\n"));
    const bytes = type.encode(type.fromObject(plain)).finish();
    const back = this.toJson(type, type.decode(bytes)) as Record<string, Json>;
    return hasType(json) ? { "@type": json["@type"], ...back } : back;
  }

  // JSON (proto3 mapping) → the plain object protobufjs's fromObject takes.
  private toPlain(type: protobuf.Type, json: unknown, path: string, problems: string[]): Plain {
    if (typeof json !== "object" || json === null || Array.isArray(json)) {
      problems.push(`${path}: expected an object for ${type.fullName}`);
      return {};
    }
    const obj = json as Record<string, unknown>;
    if (type.fullName === ".google.protobuf.Any") return this.anyToPlain(obj, path, problems);
    const out: Plain = {};
    for (const [key, value] of Object.entries(obj)) {
      const field = type.fields[key];
      if (field === undefined) {
        problems.push(`${path}.${key}: unknown field of ${type.fullName}`);
        continue;
      }
      out[key] = this.fieldToPlain(field, value, `${path}.${key}`, problems);
      checkFieldRules(field, value, `${path}.${key}`, problems);
    }
    for (const field of type.fieldsArray)
      if (!(field.name in obj)) checkFieldRules(field, undefined, `${path}.${field.name}`, problems);
    for (const oneof of type.oneofsArray) {
      const set = oneof.fieldsArray.filter((f) => obj[f.name] !== undefined).map((f) => f.name);
      if (set.length > 1) problems.push(`${path}: oneof ${oneof.name} has ${set.join(" and ")}`);
      if (set.length === 0 && oneof.options?.["(validate.required)"] === true)
        problems.push(`${path}: oneof ${oneof.name} is required`);
    }
    return out;
  }

  private anyToPlain(obj: Record<string, unknown>, path: string, problems: string[]): Plain {
    const url = obj["@type"];
    if (typeof url !== "string") {
      problems.push(`${path}: an Any needs "@type"`);
      return {};
    }
    let inner: protobuf.Type;
    try {
      inner = this.type(url);
    } catch {
      problems.push(`${path}: unknown type ${url}`);
      return {};
    }
    const rest: Record<string, unknown> = { ...obj };
    delete rest["@type"];
    const plain = this.toPlain(inner, rest, `${path}<${inner.name}>`, problems);
    return { type_url: url, value: inner.encode(inner.fromObject(plain)).finish() };
  }

  private fieldToPlain(field: protobuf.FieldBase, value: unknown, path: string, problems: string[]): unknown {
    if (field instanceof protobuf.MapField) {
      if (typeof value !== "object" || value === null || Array.isArray(value)) {
        problems.push(`${path}: expected a map`);
        return {};
      }
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, this.valueToPlain(field, v, `${path}[${k}]`, problems)]),
      );
    }
    if (field.repeated) {
      if (!Array.isArray(value)) {
        problems.push(`${path}: expected a list`);
        return [];
      }
      return value.map((v, i) => this.valueToPlain(field, v, `${path}[${i}]`, problems));
    }
    return this.valueToPlain(field, value, path, problems);
  }

  private valueToPlain(field: protobuf.FieldBase, value: unknown, path: string, problems: string[]): unknown {
    const resolved = field.resolvedType;
    if (resolved instanceof protobuf.Enum) {
      if (typeof value !== "string" || !(value in resolved.values))
        problems.push(`${path}: ${JSON.stringify(value)} is not a value of ${resolved.fullName}`);
      return value;
    }
    if (resolved instanceof protobuf.Type) {
      if (resolved.fullName === ".google.protobuf.Duration") {
        const m = typeof value === "string" ? DURATION.exec(value) : null;
        if (m === null) {
          problems.push(`${path}: ${JSON.stringify(value)} is not a Duration such as "1.500s"`);
          return {};
        }
        const sign = m[1] === "-" ? -1 : 1;
        return { seconds: sign * Number(m[2]), nanos: sign * Number((m[3] ?? "").padEnd(9, "0")) };
      }
      if (WRAPPERS.has(resolved.fullName)) {
        const inner = resolved.fields.value;
        if (inner !== undefined) checkScalar(inner.type, value, path, problems);
        return { value };
      }
      return this.toPlain(resolved, value, path, problems);
    }
    checkScalar(field.type, value, path, problems);
    return value;
  }

  // A decoded message → proto3 JSON, the inverse of toPlain.
  private toJson(type: protobuf.Type, message: protobuf.Message | Plain): Json {
    const plain = (
      message instanceof protobuf.Message ? type.toObject(message, { enums: String, longs: String }) : message
    ) as Plain;
    if (type.fullName === ".google.protobuf.Any") {
      const url = plain.type_url as string;
      const inner = this.type(url);
      const decoded = this.toJson(inner, inner.decode(plain.value as Uint8Array)) as Record<string, Json>;
      return { "@type": url, ...decoded };
    }
    const out: Record<string, Json> = {};
    for (const [key, value] of Object.entries(plain)) {
      const field = type.fields[key];
      if (field === undefined) continue;
      if (field instanceof protobuf.MapField)
        out[key] = Object.fromEntries(
          Object.entries(value as Plain).map(([k, v]) => [k, this.valueToJson(field, v)]),
        );
      else if (field.repeated) out[key] = (value as unknown[]).map((v) => this.valueToJson(field, v));
      else out[key] = this.valueToJson(field, value);
    }
    return out;
  }

  private valueToJson(field: protobuf.FieldBase, value: unknown): Json {
    const resolved = field.resolvedType;
    if (resolved instanceof protobuf.Type) {
      const v = value as Plain;
      if (resolved.fullName === ".google.protobuf.Duration") {
        const seconds = Number(v.seconds ?? 0);
        const nanos = Number(v.nanos ?? 0);
        if (nanos === 0) return `${seconds}s`;
        const digits = String(Math.abs(nanos))
          .padStart(9, "0")
          .replace(/(000)+$/, "");
        return `${seconds}.${digits}s`;
      }
      if (WRAPPERS.has(resolved.fullName))
        return (v.value ?? (resolved.fullName === ".google.protobuf.BoolValue" ? false : 0)) as Json;
      return this.toJson(resolved, v);
    }
    return value as Json;
  }
}

function hasType(json: unknown): json is { "@type": string } {
  return (
    typeof json === "object" &&
    json !== null &&
    typeof (json as Record<string, unknown>)["@type"] === "string"
  );
}

/** A resource as it travels in a DiscoveryResponse carries its own `@type`; it must name the type checked. */
function withoutType(typeName: string, json: unknown, problems: string[]): unknown {
  if (!hasType(json)) return json;
  if (
    json["@type"].slice(json["@type"].lastIndexOf("/") + 1) !== typeName.slice(typeName.lastIndexOf("/") + 1)
  )
    problems.push(`${typeName}: "@type" is ${json["@type"]}`);
  const rest: Record<string, unknown> = { ...json };
  delete rest["@type"];
  return rest;
}

function checkScalar(type: string, value: unknown, path: string, problems: string[]): void {
  const fail = (what: string) => problems.push(`${path}: ${JSON.stringify(value)} is not ${what}`);
  switch (type) {
    case "string":
      if (typeof value !== "string") fail("a string");
      return;
    case "bool":
      if (typeof value !== "boolean") fail("a boolean");
      return;
    case "uint32":
    case "fixed32":
      if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > 0xffffffff)
        fail("a uint32");
      return;
    case "int32":
    case "sint32":
    case "sfixed32":
      if (!Number.isInteger(value) || Math.abs(value as number) > 0x7fffffff) fail("an int32");
      return;
    case "int64":
    case "uint64":
    case "sint64":
    case "fixed64":
    case "sfixed64":
      if (!(typeof value === "string" && /^-?\d+$/.test(value)) && !Number.isInteger(value))
        fail("a 64-bit integer");
      return;
    case "double":
    case "float":
      if (typeof value !== "number") fail("a number");
      return;
    case "bytes":
      if (typeof value !== "string") fail("base64 bytes");
      return;
    default:
      fail(type);
  }
}

interface Rules {
  readonly message?: { readonly required?: boolean };
  readonly string?: {
    readonly min_len?: number | string;
    readonly max_len?: number | string;
    readonly pattern?: string;
  };
  readonly repeated?: { readonly min_items?: number | string };
  readonly uint32?: Bounds;
  readonly int32?: Bounds;
  readonly duration?: { readonly gt?: object; readonly gte?: object; readonly required?: boolean };
}
interface Bounds {
  readonly gt?: number;
  readonly gte?: number;
  readonly lt?: number;
  readonly lte?: number;
}

function rulesOf(field: protobuf.FieldBase): Rules | undefined {
  for (const opt of (field.parsedOptions ?? []) as unknown[]) {
    const rules = (opt as Record<string, unknown>)["(validate.rules)"];
    if (rules !== undefined) return rules as Rules;
  }
  return undefined;
}

function checkFieldRules(field: protobuf.FieldBase, value: unknown, path: string, problems: string[]): void {
  const rules = rulesOf(field);
  if (rules === undefined) return;
  if (value === undefined) {
    // A rule on a oneof member applies only when that member is set.
    if (field.partOf !== null) return;
    if (rules.message?.required === true || rules.duration?.required === true)
      problems.push(`${path}: required`);
    if (rules.string?.min_len !== undefined && Number(rules.string.min_len) > 0)
      problems.push(`${path}: required`);
    if (rules.repeated?.min_items !== undefined && Number(rules.repeated.min_items) > 0)
      problems.push(`${path}: required`);
    return;
  }
  const values = field.repeated && Array.isArray(value) ? value : [value];
  if (
    rules.repeated?.min_items !== undefined &&
    Array.isArray(value) &&
    value.length < Number(rules.repeated.min_items)
  )
    problems.push(`${path}: needs at least ${rules.repeated.min_items} items`);
  for (const v of values) {
    if (rules.string !== undefined && typeof v === "string") {
      const s = rules.string;
      if (s.min_len !== undefined && v.length < Number(s.min_len))
        problems.push(`${path}: shorter than ${s.min_len}`);
      if (s.max_len !== undefined && v.length > Number(s.max_len))
        problems.push(`${path}: longer than ${s.max_len}`);
      if (s.pattern !== undefined && !new RegExp(s.pattern, "u").test(v))
        problems.push(`${path}: ${JSON.stringify(v)} does not match ${s.pattern}`);
    }
    const bounds = rules.uint32 ?? rules.int32;
    const n =
      typeof v === "number"
        ? v
        : typeof v === "object" && v !== null
          ? (v as { value?: unknown }).value
          : undefined;
    if (bounds !== undefined && typeof n === "number") {
      if (bounds.gt !== undefined && !(n > bounds.gt)) problems.push(`${path}: must be > ${bounds.gt}`);
      if (bounds.gte !== undefined && !(n >= bounds.gte)) problems.push(`${path}: must be >= ${bounds.gte}`);
      if (bounds.lt !== undefined && !(n < bounds.lt)) problems.push(`${path}: must be < ${bounds.lt}`);
      if (bounds.lte !== undefined && !(n <= bounds.lte)) problems.push(`${path}: must be <= ${bounds.lte}`);
    }
    if (rules.duration?.gt !== undefined && typeof v === "string" && /^-?0+(\.0+)?s$/.test(v))
      problems.push(`${path}: must be above 0s`);
  }
}

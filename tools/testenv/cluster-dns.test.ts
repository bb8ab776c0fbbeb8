import { describe, expect, it } from "vitest";
import { answer, serviceOf } from "./cluster-dns.js";

function query(name: string, type = 1, id = 0x1234): Buffer {
  const labels = name.split(".").map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)]));
  const tail = Buffer.alloc(4);
  tail.writeUInt16BE(type, 0);
  tail.writeUInt16BE(1, 2);
  const header = Buffer.from([id >> 8, id & 0xff, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
  return Buffer.concat([header, ...labels, Buffer.from([0]), tail]);
}

const services: Record<string, string> = { "web/shop": "10.96.0.17", "kubernetes/default": "10.96.0.1" };
const lookup = async (name: string, ns: string) => services[`${name}/${ns}`];

describe("the cluster's DNS responder", () => {
  it("answers a Service's name with its ClusterIP, as an A record under the same id", async () => {
    const r = await answer(query("web.shop.svc.cluster.local"), lookup);
    expect(r.readUInt16BE(0)).toBe(0x1234);
    expect(r[3]! & 0x0f).toBe(0); // NOERROR
    expect(r.readUInt16BE(6)).toBe(1); // one answer
    expect([...r.subarray(r.length - 4)].join(".")).toBe("10.96.0.17");
  });

  it("says NXDOMAIN for names it does not know, so the resolver tries its next search domain", async () => {
    for (const name of [
      "web.shop.svc.shop.svc.cluster.local",
      "nope.shop.svc.cluster.local",
      "example.com",
      "cluster.local",
    ]) {
      const r = await answer(query(name), lookup);
      expect(r[3]! & 0x0f, name).toBe(3);
      expect(r.readUInt16BE(6), name).toBe(0);
    }
  });

  it("gives an existing name no AAAA record, without NXDOMAIN", async () => {
    const r = await answer(query("kubernetes.default.svc.cluster.local", 28), lookup);
    expect(r[3]! & 0x0f).toBe(0);
    expect(r.readUInt16BE(6)).toBe(0);
  });

  it("refuses a malformed query with FORMERR instead of crashing", async () => {
    const r = await answer(Buffer.from([1, 2, 3]), lookup);
    expect(r[3]! & 0x0f).toBe(1);
  });

  it("reads service and namespace from the name, case-insensitively upstream", () => {
    expect(serviceOf("a.b.svc.cluster.local")).toEqual(["a", "b"]);
    expect(serviceOf("a.svc.cluster.local")).toBeUndefined();
    expect(serviceOf("x.a.b.svc.cluster.local")).toBeUndefined();
  });
});

import { describe, expect, it } from "vitest";
import { Teardown } from "./teardown.js";

describe("Teardown", () => {
  it("undoes newest first, once, and keeps going past a failure", async () => {
    const order: string[] = [];
    const t = new Teardown();
    t.defer("control plane", async () => order.push("control plane"));
    t.defer("server", async () => {
      order.push("server");
      throw new Error("already gone");
    });
    t.defer("watcher", async () => order.push("watcher"));
    const [a, b] = await Promise.all([t.run(), t.run()]);
    expect(order).toEqual(["watcher", "server", "control plane"]);
    expect(a).toEqual(["server: already gone"]);
    expect(b).toBe(a);
    expect(() => t.defer("late", async () => undefined)).toThrow(/teardown has started/);
  });

  it("moves a name registered again to the front, and runs it once", async () => {
    const order: string[] = [];
    const t = new Teardown();
    t.defer("control plane", async () => order.push("control plane (first)"));
    t.defer("server", async () => order.push("server"));
    t.defer("control plane", async () => order.push("control plane"));
    t.defer("watcher", async () => order.push("watcher"));
    await t.run();
    expect(order).toEqual(["watcher", "control plane", "server"]);
  });
});

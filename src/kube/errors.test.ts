import { describe, expect, it } from "vitest";
import { KubeError } from "./client.js";
import { errorMessage } from "./errors.js";

describe("errorMessage", () => {
  it("gives the apiserver's own Status message with its code, not the request line", () => {
    const status = {
      kind: "Status",
      reason: "NotFound",
      message: 'namespaces "nowhere" not found',
      code: 404,
    };
    const err = new KubeError(
      404,
      "NotFound",
      `POST /api/v1/namespaces/nowhere/configmaps: 404 ${status.message}`,
      status,
    );
    expect(errorMessage(err)).toBe('404: namespaces "nowhere" not found');
  });

  it("falls back to the first line of the error when there is no Status", () => {
    expect(errorMessage(new KubeError(502, "", "GET /api/v1/x: 502 <html>bad gateway</html>"))).toBe(
      "GET /api/v1/x: 502 <html>bad gateway</html>",
    );
    expect(errorMessage(new Error("connect ECONNREFUSED 127.0.0.1:6443\n    at ..."))).toBe(
      "connect ECONNREFUSED 127.0.0.1:6443",
    );
    expect(errorMessage("plain")).toBe("plain");
  });
});

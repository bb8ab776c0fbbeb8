// The chart's webhook registration pieces are generated (npm run gen) from
// src/api/webhook-registration.ts: a change there that is not regenerated into
// the chart fails here, as the CRD's does in crd-files.test.ts.

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { WEBHOOK_TIMEOUT_SECONDS } from "../../src/api/webhook-registration.js";
import { WEBHOOK_FILE, webhookFile, webhookValues } from "../../scripts/webhook-files.js";

describe("the chart's generated webhook file", () => {
  it("is committed exactly as the generator makes it (run `npm run gen` after a change)", () => {
    expect(readFileSync(WEBHOOK_FILE, "utf8"), `${WEBHOOK_FILE} is stale: run npm run gen`).toBe(
      webhookFile(),
    );
  });

  it("parses back to what the source says", () => {
    expect(parse(webhookFile())).toEqual(JSON.parse(JSON.stringify(webhookValues())));
  });

  it("leaves the chart's timeout default at the source's", () => {
    const values = parse(readFileSync("charts/edge-operator/values.yaml", "utf8")) as {
      webhook: { timeoutSeconds: number };
    };
    expect(values.webhook.timeoutSeconds).toBe(WEBHOOK_TIMEOUT_SECONDS);
  });
});

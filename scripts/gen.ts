// `npm run gen`: writes the files generated from the TypeScript sources into
// the chart (the CRD's pieces, the webhook registrations' pieces), and the xDS
// sink's protobuf descriptor, and the chart README's generated blocks (its
// values table). Unit tests (test/unit/crd-files.test.ts,
// test/unit/webhook-files.test.ts, test/unit/xds-descriptor.test.ts,
// test/unit/chart-readme.test.ts) fail when what is committed differs from
// what this writes.

import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { README_FILE, chartReadme } from "./chart-readme.js";
import { CRD_FILES_DIR, crdFiles } from "./crd-files.js";
import { WEBHOOK_FILE, webhookFile } from "./webhook-files.js";
import { XDS_DESCRIPTOR_FILE, xdsDescriptor } from "./xds-descriptor.js";

const files = crdFiles();
mkdirSync(CRD_FILES_DIR, { recursive: true });
// Remove what the generator no longer makes, so a dropped version cannot linger.
for (const old of readdirSync(CRD_FILES_DIR)) if (!files.has(old)) rmSync(join(CRD_FILES_DIR, old));
for (const [name, text] of files) {
  writeFileSync(join(CRD_FILES_DIR, name), text);
  process.stdout.write(`wrote ${join(CRD_FILES_DIR, name)}\n`);
}
writeFileSync(WEBHOOK_FILE, webhookFile());
process.stdout.write(`wrote ${WEBHOOK_FILE}\n`);
writeFileSync(XDS_DESCRIPTOR_FILE, xdsDescriptor());
process.stdout.write(`wrote ${XDS_DESCRIPTOR_FILE}\n`);
writeFileSync(README_FILE, chartReadme(readFileSync(README_FILE, "utf8")));
process.stdout.write(`wrote ${README_FILE}\n`);

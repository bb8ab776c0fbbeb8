export * from "../../src/testenv/process.js";

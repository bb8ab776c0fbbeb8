export * from "../../src/testenv/testbin.js";

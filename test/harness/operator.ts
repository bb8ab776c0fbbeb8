export * from "../../src/testenv/operator.js";

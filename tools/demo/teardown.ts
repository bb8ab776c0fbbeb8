// Undo what was started, newest first, exactly once, whatever ended the demo
// (the last step, a failed step, Ctrl-C). A failing undo does not stop the others.

export class Teardown {
  private readonly undo: { what: string; fn: () => Promise<unknown> }[] = [];
  private running: Promise<string[]> | undefined;

  /** Registers `fn` to run at teardown; later registrations run first. Registering `what` again moves it to the front. */
  defer(what: string, fn: () => Promise<unknown>): void {
    if (this.running) throw new Error(`cannot defer ${what}: teardown has started`);
    const i = this.undo.findIndex((u) => u.what === what);
    if (i !== -1) this.undo.splice(i, 1);
    this.undo.push({ what, fn });
  }

  /** Runs every undo once, telling `done` how long each took; resolves with the errors, `what: message`. */
  run(done?: (what: string, ms: number) => void): Promise<string[]> {
    this.running ??= (async () => {
      const errors: string[] = [];
      for (const { what, fn } of [...this.undo].reverse()) {
        const t0 = Date.now();
        try {
          await fn();
        } catch (e) {
          errors.push(`${what}: ${(e as Error).message}`);
        }
        done?.(what, Date.now() - t0);
      }
      return errors;
    })();
    return this.running;
  }
}

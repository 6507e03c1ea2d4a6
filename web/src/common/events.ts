/** A minimal typed event emitter for components (FlameGraph, HeatMap). */
export class Emitter<E extends { [K in keyof E]: unknown }> {
  private handlers: { [K in keyof E]?: ((payload: E[K]) => void)[] } = {};

  /** Registers a handler; returns a function that removes it. */
  on<K extends keyof E>(type: K, fn: (payload: E[K]) => void): () => void {
    const list = (this.handlers[type] ??= []);
    list.push(fn);
    return () => {
      const i = list.indexOf(fn);
      if (i >= 0) list.splice(i, 1);
    };
  }

  protected emit<K extends keyof E>(type: K, payload: E[K]): void {
    for (const fn of this.handlers[type] ?? []) fn(payload);
  }
}

// The package's one error type: a message naming what is wrong and a code.
//   bad_file, unsupported, too_large, invalid_argument, invalid_input,
//   context_full, grammar, fetch_failed, aborted, worker_failed,
//   model_lost (the wasm instance trapped: load the model again), error

export class TernError extends Error {
  constructor(code, message) {
    super(message);
    this.name = 'TernError';
    this.code = code;
  }

  /** Any thrown value as a TernError (wasm errors carry their code). */
  static from(e) {
    if (e instanceof TernError) return e;
    if (e && typeof e === 'object' && typeof e.code === 'string' && e.name === 'TernError') {
      return new TernError(e.code, e.message);
    }
    if (e && e.name === 'AbortError') return new TernError('aborted', e.message || 'aborted');
    return new TernError('error', String(e?.message ?? e));
  }

  toJSON() {
    return { name: this.name, code: this.code, message: this.message };
  }
}

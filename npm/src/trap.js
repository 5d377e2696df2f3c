// A wasm trap (an out-of-bounds access, `unreachable` — how a Rust panic
// ends here —, an exhausted stack) leaves the instance's memory as it was
// mid-call: borrow flags set, allocator half-updated. Nothing on it can be
// trusted again, so the instance is dropped, whatever ran on it is lost
// and says so, and the next load instantiates the module afresh.

import { TernError } from './errors.js';
import { dropWasm, isLost } from './runtime.js';

// what wasm-bindgen throws on an object a trapped call left borrowed
const BORROWED = /recursive use of an object detected|attempted to take ownership of Rust value while it was borrowed/;

/** Whether thrown `e` says the instance trapped. */
export function isTrap(e) {
  if (e instanceof WebAssembly.RuntimeError) return true;
  if (e instanceof RangeError && /call stack/i.test(e.message)) return true;
  return e instanceof Error && BORROWED.test(e.message);
}

function lostError(what, why) {
  const cause = why ? ` (${why})` : '';
  return new TernError(
    'model_lost',
    `the wasm instance running this ${what} trapped${cause} and was dropped: load the ${what} again`,
  );
}

/** What to throw for `e`, thrown by a call on `glue`'s instance (dropped if `e` is a trap). */
function judge(glue, what, e) {
  if (!isTrap(e)) return e;
  dropWasm(glue);
  return lostError(what, e.message);
}

/**
 * Call `f`, which uses `glue`'s instance for a `what` ('model',
 * 'encoder'): its errors as TernErrors; a trap drops the instance and is a
 * `model_lost` error, as is every call after it.
 */
export function guard(glue, what, f) {
  if (isLost(glue)) throw lostError(what);
  try {
    return f();
  } catch (e) {
    throw TernError.from(judge(glue, what, e));
  }
}

/** `guard` for an async `f` (loading: a trap while the file streams in); other errors as they are. */
export async function guardAsync(glue, what, f) {
  if (isLost(glue)) throw lostError(what);
  try {
    return await f();
  } catch (e) {
    throw judge(glue, what, e);
  }
}

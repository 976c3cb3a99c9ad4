// The caveat grammar (core/conditions.ts's, as `name=value`): what mintToken mints, what the verifier
// reads, and what the hosted POST /api/verify accepts as expectations. A caveat
// is `name=value`: a lower-case name that cannot hold `=`, then printable ASCII.
// Printable ASCII only, so a token is ASCII JSON (no UTF-8 decoding when
// verifying) and caveats joined with "\n" for the signature cannot run into
// each other.

import { CONDITION_NAME, CONDITION_PAIR, CONDITION_VALUE, MAX_CONDITIONS, isConditionName, isConditionValue } from '../../core/conditions.js';

/** A caveat's name, whole (for schemas that check with a pattern, e.g. POST /api/verify's expectations). */
export const CAVEAT_NAME = CONDITION_NAME;
/** A caveat's value, whole. */
export const CAVEAT_VALUE = CONDITION_VALUE;

/** The most caveats a token carries. */
export const MAX_CAVEATS = MAX_CONDITIONS;

/** `name=value` in the grammar. */
export function isCaveat(caveat: string): boolean {
  return CONDITION_PAIR.test(caveat);
}

/** A caveat's name: a lower-case letter, then up to 31 lower-case letters, digits or `_`. */
export const isCaveatName: (name: string) => boolean = isConditionName;

/** A caveat's value: up to 512 printable ASCII characters. */
export const isCaveatValue: (value: string) => boolean = isConditionValue;

/**
 * What the token reader checks of a list before the signature: the count, and
 * no newline. The signed string joins caveats with one, so ["a=1\nb=2"] and
 * ["a=1","b=2"] must never both reach the signature check. Each caveat's full
 * grammar (isCaveat) is checked once per list, when its signing key is derived.
 */
export function isReadableCaveatList(caveats: readonly string[]): boolean {
  return caveats.length <= MAX_CAVEATS && caveats.every((c) => !c.includes('\n'));
}

/** Every caveat in the grammar, and no more than MAX_CAVEATS. */
export function isCaveatList(caveats: readonly string[]): boolean {
  return caveats.length <= MAX_CAVEATS && caveats.every(isCaveat);
}

// The libmacaroons version 2 binary format (what go-macaroon's MarshalBinary,
// js-macaroon's exportBinary and Aperture write): the bytes of an L402 token.
//
//   0x02
//   [0x01 varint-length location]  0x02 varint-length identifier  0x00
//   per caveat: [0x01 location] 0x02 varint-length caveat [0x04 verification id] 0x00
//   0x00
//   0x06 0x20 signature (32 bytes)
//
// Field types are one byte; lengths are unsigned LEB128 varints. A verification
// id marks a third-party caveat, which nothing here discharges: the reader
// refuses it rather than skip it. The reader records where each field lies in
// the bytes (no copies), so the signature chain is MACed where it stands.

const VERSION_2 = 2;
const EOS = 0;
const LOCATION = 1;
const IDENTIFIER = 2;
const SIGNATURE = 6;
const SIGNATURE_BYTES = 32;

/** The most caveats a macaroon read here may carry: minted ones, an expiry, a preimage, and what a client appended. */
export const MAX_MACAROON_CAVEATS = 32;

/** Where the fields of the macaroon last read lie in its bytes: [from, to) each. */
export class MacaroonLayout {
  identifierFrom = 0;
  identifierTo = 0;
  caveatCount = 0;
  readonly caveatFrom = new Int32Array(MAX_MACAROON_CAVEATS);
  readonly caveatTo = new Int32Array(MAX_MACAROON_CAVEATS);
  signatureFrom = 0;

  /**
   * Reads bytes[0, length) as a version 2 binary macaroon with first-party
   * caveats only, and nothing after its signature: whether it is one.
   */
  read(bytes: Uint8Array, length: number): boolean {
    if (length < 1 || bytes[0] !== VERSION_2) return false;
    const cursor = { at: 1 };
    if (!this.readSection(bytes, length, cursor, true)) return false;
    this.caveatCount = 0;
    while (cursor.at < length && bytes[cursor.at] !== EOS) {
      if (this.caveatCount === MAX_MACAROON_CAVEATS || !this.readSection(bytes, length, cursor, false)) return false;
    }
    // The caveats' end, then the signature field, then nothing.
    const at = cursor.at + 1;
    if (at + 2 + SIGNATURE_BYTES !== length || bytes[at] !== SIGNATURE || bytes[at + 1] !== SIGNATURE_BYTES) return false;
    this.signatureFrom = at + 2;
    return true;
  }

  /** One section (the macaroon's head or a caveat) up to and past its EOS: an optional location, the identifier, no verification id. */
  private readSection(bytes: Uint8Array, length: number, cursor: { at: number }, head: boolean): boolean {
    if (bytes[cursor.at] === LOCATION && readField(bytes, length, cursor) < 0) return false;
    if (bytes[cursor.at] !== IDENTIFIER) return false;
    const from = readField(bytes, length, cursor);
    if (from < 0) return false;
    // A verification id (third-party caveat), or anything else, where the section must end.
    if (cursor.at >= length || bytes[cursor.at] !== EOS) return false;
    cursor.at++;
    if (head) {
      this.identifierFrom = from;
      this.identifierTo = cursor.at - 1;
    } else {
      this.caveatFrom[this.caveatCount] = from;
      this.caveatTo[this.caveatCount++] = cursor.at - 1;
    }
    return true;
  }
}

/** Reads the field at cursor.at (type byte, varint length, data), moving past it: where its data starts, or -1. */
function readField(bytes: Uint8Array, length: number, cursor: { at: number }): number {
  let at = cursor.at + 1;
  let size = 0;
  for (let shift = 0; ; shift += 7) {
    if (at >= length || shift > 21) return -1; // no field here is near 2^28 bytes
    const b = bytes[at++]!;
    size |= (b & 0x7f) << shift;
    if (b < 0x80) break;
  }
  if (at + size > length) return -1;
  cursor.at = at + size;
  return at;
}

/** A macaroon's parts, to be written: the identifier, the first-party caveats, the signature. */
export interface MacaroonParts {
  identifier: Uint8Array;
  caveats: readonly Uint8Array[];
  signature: Uint8Array;
}

/** The version 2 binary form of a macaroon without location. */
export function encodeMacaroon({ identifier, caveats, signature }: MacaroonParts): Uint8Array {
  const out: number[] = [VERSION_2];
  pushField(out, IDENTIFIER, identifier);
  out.push(EOS);
  for (const caveat of caveats) {
    pushField(out, IDENTIFIER, caveat);
    out.push(EOS);
  }
  out.push(EOS);
  pushField(out, SIGNATURE, signature);
  return Uint8Array.from(out);
}

function pushField(out: number[], type: number, data: Uint8Array): void {
  out.push(type);
  let size = data.length;
  while (size >= 0x80) {
    out.push((size & 0x7f) | 0x80);
    size >>>= 7;
  }
  out.push(size);
  for (const b of data) out.push(b);
}

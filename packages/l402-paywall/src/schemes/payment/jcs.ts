// RFC 8785, the JSON Canonicalization Scheme: the one byte sequence for a JSON
// value that the Payment scheme's `request`, `opaque`, credential and receipt
// are encoded from (draft-httpauth-payment; draft-lightning-charge "Encoding
// Conventions"). Challenge ids are HMACs over those encodings, so two servers
// or a server and a client must produce the same text for the same value.
//
// JCS is ECMAScript's JSON.stringify for every primitive (RFC 8785 section
// 3.2.2 defines number and string serialization as exactly that) with object
// members sorted by their names' UTF-16 code units (section 3.2.3), which is
// what Array.prototype.sort compares by default. No whitespace anywhere.

/** The RFC 8785 text of a JSON value; throws a TypeError for anything JSON cannot hold (undefined, functions, bigints, non-finite numbers). */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      // RFC 8785 section 3.2.2.3: NaN and Infinity have no JSON form and must be an error, not JSON.stringify's null.
      if (!Number.isFinite(value)) throw new TypeError(`JCS: ${value} is not a JSON number`);
      return JSON.stringify(value);
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
      const members: string[] = [];
      for (const name of Object.keys(value).sort()) {
        const member = (value as Record<string, unknown>)[name];
        // JSON.stringify leaves out undefined members; so do we, so an optional field left undefined is simply absent.
        if (member !== undefined) members.push(`${JSON.stringify(name)}:${canonicalJson(member)}`);
      }
      return `{${members.join(',')}}`;
    }
    default:
      throw new TypeError(`JCS: a ${typeof value} is not a JSON value`);
  }
}

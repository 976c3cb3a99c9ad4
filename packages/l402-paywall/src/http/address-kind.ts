// What kind of destination an address or a URL's host is: the public Internet,
// or somewhere a request from outside must not be steered to (this machine, a
// private network, a cloud metadata service). One classification for the
// library's client (client/destinations.ts) and the hosted service's outbound
// fetches; edge-safe (no Node built-ins).

export type AddressKind = 'public' | 'loopback' | 'private' | 'link-local' | 'shared (CGNAT)' | 'multicast' | 'unspecified' | 'reserved';

type Range = [prefix: number[], bits: number, kind: Exclude<AddressKind, 'public'>];

// IPv4 ranges that are not the public Internet (IANA special-purpose registry).
// Cloud metadata services live in 169.254.0.0/16 (AWS, GCP, Azure) and
// 100.64.0.0/10 (Alibaba's 100.100.100.200).
const IPV4_RANGES: Range[] = [
  [[0], 8, 'unspecified'],
  [[10], 8, 'private'],
  [[100, 64], 10, 'shared (CGNAT)'],
  [[127], 8, 'loopback'],
  [[169, 254], 16, 'link-local'],
  [[172, 16], 12, 'private'],
  [[192, 0, 0], 24, 'reserved'],
  [[192, 0, 2], 24, 'reserved'],
  [[192, 88, 99], 24, 'reserved'],
  [[192, 168], 16, 'private'],
  [[198, 18], 15, 'reserved'],
  [[198, 51, 100], 24, 'reserved'],
  [[203, 0, 113], 24, 'reserved'],
  [[224], 4, 'multicast'],
  [[240], 4, 'reserved'],
];

// IPv6 ranges, as byte prefixes. Forms that embed an IPv4 address (mapped,
// compatible, NAT64, 6to4) are judged by the IPv4 address inside.
const IPV6_RANGES: Range[] = [
  [[0x01, 0x00, 0, 0, 0, 0, 0, 0], 64, 'reserved'], // discard-only
  [[0x20, 0x01, 0x00, 0x00], 32, 'reserved'], // Teredo: tunnels to an obfuscated IPv4 address
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'reserved'], // documentation
  [[0x20, 0x01, 0x00, 0x10], 28, 'reserved'], // ORCHID
  [[0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, 'private'], // local-use NAT64
  [[0xfc], 7, 'private'], // unique local (AWS metadata fd00:ec2::254 too)
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xfe, 0xc0], 10, 'private'], // site-local (deprecated)
  [[0xff], 8, 'multicast'],
];

// Dotted decimal without leading zeros (0177.0.0.1 is no address here; URLs have made it 127.0.0.1 already).
const OCTET = '(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)';
const IPV4 = new RegExp(`^${OCTET}\\.${OCTET}\\.${OCTET}\\.${OCTET}$`);

/** What kind of address `ip` (an IPv4 or IPv6 literal, brackets and zone allowed) is; anything unparsable counts as reserved. */
export function classifyAddress(ip: string): AddressKind {
  const text = ip.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const ipv4 = ipv4Bytes(text);
  if (ipv4) return classifyIpv4(ipv4);
  const bytes = ipv6Bytes(text);
  if (!bytes) return 'reserved';
  const zeros = (from: number, to: number) => bytes.slice(from, to).every((b) => b === 0);
  if (zeros(0, 16)) return 'unspecified';
  if (zeros(0, 15) && bytes[15] === 1) return 'loopback';
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64)
  if (zeros(0, 10) && ((bytes[10] === 0xff && bytes[11] === 0xff) || (bytes[10] === 0 && bytes[11] === 0))) return classifyIpv4([...bytes.slice(12)]);
  if (bytes[0] === 0x00 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zeros(4, 12)) return classifyIpv4([...bytes.slice(12)]);
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return classifyIpv4([...bytes.slice(2, 6)]); // 6to4
  return matchRanges([...bytes], IPV6_RANGES) ?? 'public';
}

/** Whether `text` is an IPv4 or IPv6 literal (brackets allowed), as opposed to a name. */
export function isIpLiteral(text: string): boolean {
  const bare = text.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  return ipv4Bytes(bare) !== null || ipv6Bytes(bare) !== null;
}

// Names that never lead to the public Internet: RFC 6761's localhost, mDNS's
// .local (RFC 6762), .home.arpa (RFC 8375), .internal (reserved for private use
// by ICANN in 2024; metadata.google.internal is the GCP metadata service).
const LOOPBACK_NAME = /(^|\.)localhost$/;
const PRIVATE_NAME = /(^|\.)(local|internal|home\.arpa)$/;

/**
 * What a URL's host (`url.hostname`: WHATWG has already turned 2130706433 or
 * 0x7f.1 into 127.0.0.1) is by its spelling alone: an address literal by its
 * kind; localhost names loopback; names of private-use domains and names of a
 * single label private; any other name 'public' (what it resolves to decides).
 */
export function classifyHost(hostname: string): AddressKind {
  if (isIpLiteral(hostname)) return classifyAddress(hostname);
  const name = hostname.toLowerCase().replace(/\.$/, '');
  if (LOOPBACK_NAME.test(name)) return 'loopback';
  if (PRIVATE_NAME.test(name) || !name.includes('.')) return 'private';
  return 'public';
}

function ipv4Bytes(text: string): number[] | null {
  const match = IPV4.exec(text);
  return match ? match.slice(1).map(Number) : null;
}

function classifyIpv4(bytes: number[]): AddressKind {
  if (bytes.every((b) => b === 255)) return 'reserved'; // broadcast
  return matchRanges(bytes, IPV4_RANGES) ?? 'public';
}

function matchRanges(bytes: number[], ranges: Range[]): AddressKind | undefined {
  for (const [prefix, bits, kind] of ranges) {
    let fits = true;
    for (let bit = 0; bit < bits && fits; bit += 8) {
      const i = bit / 8;
      const mask = bits - bit >= 8 ? 0xff : (0xff << (8 - (bits - bit))) & 0xff;
      fits = ((bytes[i] ?? 0) & mask) === ((prefix[i] ?? 0) & mask);
    }
    if (fits) return kind;
  }
  return undefined;
}

/** The 16 bytes of an IPv6 literal (no brackets or zone), or null when it is not one. */
export function ipv6Bytes(text: string): Uint8Array | null {
  if (!text.includes(':')) return null;
  // An IPv4 tail (::ffff:10.0.0.1) becomes its two hex groups.
  let tailInvalid = false;
  const withoutDots = text.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (dotted) => {
    const tail = ipv4Bytes(dotted);
    if (!tail) {
      tailInvalid = true;
      return dotted;
    }
    return `${((tail[0]! << 8) | tail[1]!).toString(16)}:${((tail[2]! << 8) | tail[3]!).toString(16)}`;
  });
  if (tailInvalid) return null;
  const [left, right, extra] = withoutDots.split('::');
  if (extra !== undefined) return null;
  const parse = (part: string | undefined) => (part ? part.split(':').map((g) => (/^[0-9a-f]{1,4}$/i.test(g) ? parseInt(g, 16) : NaN)) : []);
  const l = parse(left);
  const r = right === undefined ? [] : parse(right);
  const fill = right === undefined ? 0 : 8 - l.length - r.length;
  if (fill < 0) return null;
  const groups = [...l, ...new Array<number>(fill).fill(0), ...r];
  if (groups.length !== 8 || groups.some((g) => Number.isNaN(g))) return null;
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return bytes;
}

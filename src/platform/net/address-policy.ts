// Which IP addresses the service may connect to on a user's behalf (SSRF guard). Pure parsing, no DNS.
// Fail closed: anything that is not a canonical IP address (IPv4 with leading zeros, octal or hex parts,
// fewer than four parts; malformed IPv6) is not public, so an ambiguous spelling can never slip through.

type Cidr4 = readonly [base: number, bits: number];
type Cidr6 = readonly [base: bigint, bits: number];

// IPv4 ranges that are not globally reachable unicast (IANA special-purpose registry, RFC 6890).
const BLOCKED_V4: readonly Cidr4[] = [
  cidr4('0.0.0.0', 8), // "this network"
  cidr4('10.0.0.0', 8), // private
  cidr4('100.64.0.0', 10), // carrier-grade NAT
  cidr4('127.0.0.0', 8), // loopback
  cidr4('169.254.0.0', 16), // link-local (cloud metadata lives here)
  cidr4('172.16.0.0', 12), // private
  cidr4('192.0.0.0', 24), // IETF protocol assignments
  cidr4('192.0.2.0', 24), // documentation (TEST-NET-1)
  cidr4('192.88.99.0', 24), // deprecated 6to4 relay anycast
  cidr4('192.168.0.0', 16), // private
  cidr4('198.18.0.0', 15), // benchmarking
  cidr4('198.51.100.0', 24), // documentation (TEST-NET-2)
  cidr4('203.0.113.0', 24), // documentation (TEST-NET-3)
  cidr4('224.0.0.0', 4), // multicast
  cidr4('240.0.0.0', 4), // reserved, and 255.255.255.255 broadcast
];

// IPv6 prefixes whose last 32 bits are an IPv4 address the packet really goes to: judge that address.
const EMBEDS_V4_LOW: readonly Cidr6[] = [
  cidr6('::ffff:0:0', 96), // IPv4-mapped
  cidr6('::', 96), // IPv4-compatible (deprecated); also covers :: and ::1
  cidr6('::ffff:0:0:0', 96), // IPv4-translated (SIIT)
  cidr6('64:ff9b::', 96), // NAT64 well-known prefix
];
const SIX_TO_FOUR = cidr6('2002::', 16); // 6to4: the IPv4 address sits in bits 16..47
const GLOBAL_UNICAST = cidr6('2000::', 3); // everything outside (ULA, link-local, multicast...) is refused
const BLOCKED_V6: readonly Cidr6[] = [
  cidr6('2001::', 23), // IETF protocol assignments: Teredo, benchmarking, ORCHID
  cidr6('2001:db8::', 32), // documentation
  cidr6('3fff::', 20), // documentation (RFC 9637)
];

/** True when `ip` is a canonical IPv4/IPv6 address that is globally reachable unicast (safe to fetch from). */
export function isPublicAddress(ip: string): boolean {
  const v4 = parseIPv4(ip);
  if (v4 !== undefined) return isPublicV4(v4);
  const v6 = parseIPv6(ip);
  return v6 !== undefined && isPublicV6(v6);
}

/**
 * Special-use domain names that never name a public host (docs/webhooks.md#the-url): `localhost` (RFC 6761),
 * `local` (mDNS, RFC 6762), `internal` (private use, ICANN 2024), `home.arpa` (home networks, RFC 8375) and
 * `onion` (Tor, RFC 7686). The names themselves and every name under them are refused.
 */
const SPECIAL_USE_SUFFIXES = ['localhost', 'local', 'internal', 'home.arpa', 'onion'] as const;

/**
 * True when `hostname` is, or is under, a special-use name that never reaches a public host (`localhost`,
 * `printer.local`, `db.internal`, `x.home.arpa`, `abc.onion`), in any case, with or without final dots.
 * Judged from the text alone: such a name is refused before any DNS query is made for it.
 */
export function isSpecialUseName(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.+$/, '');
  return SPECIAL_USE_SUFFIXES.some((suffix) => host === suffix || host.endsWith(`.${suffix}`));
}

/**
 * True when a URL's host, as WHATWG URL parsing gives it (`url.hostname`: IPv4 in dotted decimal whatever
 * its spelling, IPv6 in brackets), names a non-public target without any DNS lookup: a literal address that
 * {@link isPublicAddress} refuses (loopback, private, link-local, unspecified, IPv4-mapped...) or a special-use
 * name ({@link isSpecialUseName}). Other names are judged where they are resolved, at connection time. Fail
 * closed: a host that looks like a number but is not a canonical address (which WHATWG parsing never leaves
 * behind) counts as non-public.
 */
export function isNonPublicHost(hostname: string): boolean {
  if (isSpecialUseName(hostname)) return true;
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host.startsWith('[') || host.includes(':')) return !isPublicAddress(host.replace(/^\[(.*)\]$/, '$1'));
  const last = host.slice(host.lastIndexOf('.') + 1);
  if (/^(\d+|0x[0-9a-f]*)$/.test(last)) return !isPublicAddress(host);
  return false;
}

function isPublicV4(value: number): boolean {
  return !BLOCKED_V4.some((range) => inCidr4(value, range));
}

function isPublicV6(value: bigint): boolean {
  if (EMBEDS_V4_LOW.some((range) => inCidr6(value, range))) return isPublicV4(Number(value & 0xffffffffn));
  if (inCidr6(value, SIX_TO_FOUR)) return isPublicV4(Number((value >> 80n) & 0xffffffffn));
  if (!inCidr6(value, GLOBAL_UNICAST)) return false;
  return !BLOCKED_V6.some((range) => inCidr6(value, range));
}

/** Strict dotted-decimal IPv4 (four parts, 0..255, no leading zeros) as an unsigned 32-bit number. */
function parseIPv4(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

/** IPv6 (optionally in brackets, with a zone id, with a trailing dotted IPv4) as a 128-bit number. */
function parseIPv6(text: string): bigint | undefined {
  let body = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const zone = body.indexOf('%');
  if (zone >= 0) body = body.slice(0, zone);
  if (!body.includes(':')) return undefined;
  const halves = body.split('::');
  if (halves.length > 2) return undefined;
  const head = groupsOf(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? groupsOf(halves[1]!, true) : [];
  if (head === undefined || tail === undefined) return undefined;
  const explicit = head.length + tail.length;
  if (halves.length === 1 ? explicit !== 8 : explicit > 7) return undefined;
  const groups = [...head, ...new Array<number>(8 - explicit).fill(0), ...tail];
  return groups.reduce((acc, group) => (acc << 16n) | BigInt(group), 0n);
}

/** The 16-bit groups of one side of `::`; a dotted IPv4 is allowed as the very last part of the address. */
function groupsOf(side: string, mayEndWithV4: boolean): number[] | undefined {
  if (side === '') return [];
  const parts = side.split(':');
  const groups: number[] = [];
  for (const [index, part] of parts.entries()) {
    if (mayEndWithV4 && index === parts.length - 1 && part.includes('.')) {
      const v4 = parseIPv4(part);
      if (v4 === undefined) return undefined;
      groups.push(v4 >>> 16, v4 & 0xffff);
    } else if (/^[0-9a-f]{1,4}$/i.test(part)) {
      groups.push(parseInt(part, 16));
    } else {
      return undefined;
    }
  }
  return groups;
}

function cidr4(base: string, bits: number): Cidr4 {
  return [parseIPv4(base)!, bits];
}

function cidr6(base: string, bits: number): Cidr6 {
  return [parseIPv6(base)!, bits];
}

function inCidr4(value: number, [base, bits]: Cidr4): boolean {
  const shift = 32 - bits;
  return Math.floor(value / 2 ** shift) === Math.floor(base / 2 ** shift);
}

function inCidr6(value: bigint, [base, bits]: Cidr6): boolean {
  const shift = BigInt(128 - bits);
  return value >> shift === base >> shift;
}

import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { isPublicAddress, isSpecialUseName } from './address-policy.ts';
import { FetchRefused } from './fetch-refused.ts';

/** Resolves a host name to every address it has (the system's `dns.lookup` with `all: true` by default). */
export type HostResolver = (hostname: string) => Promise<LookupAddress[]>;

/** How a target is judged: name resolution and the address policy (tests replace either). */
export interface TargetPolicy {
  resolve: HostResolver;
  isPublic: (ip: string) => boolean;
}

/** The system resolver and the SSRF address policy. */
export const defaultTargetPolicy: TargetPolicy = {
  resolve: (hostname) => dnsLookup(hostname, { all: true, verbatim: true }),
  isPublic: isPublicAddress,
};

/** Refuses every scheme but https (and http when private targets are allowed, which is for tests). */
export function checkScheme(url: URL, allowPrivate: boolean): void {
  if (url.protocol === 'https:') return;
  if (url.protocol === 'http:' && allowPrivate) return;
  throw new FetchRefused('the URL must use https', 'scheme');
}

const PRIVATE_TARGET = 'the URL points to a private or local address';

/**
 * Every address the URL's host resolves to, all checked: one non-public address refuses the whole host, so a
 * name that answers both a public and a private address cannot be used to reach the private one. A special-use
 * name (`*.localhost`, `*.local`, `*.internal`, `*.home.arpa`, `*.onion`) is refused before it is resolved:
 * whatever a resolver would answer, it names this machine or a private network, and its query would go to the
 * local resolvers (hosts file, mDNS, split-horizon DNS) that hold those answers (docs/webhooks.md#the-url).
 */
export async function checkedAddresses(
  url: URL,
  allowPrivate: boolean,
  policy: TargetPolicy,
): Promise<LookupAddress[]> {
  // WHATWG URL has already turned decimal/octal/hex IPv4 spellings into dotted decimal; IPv6 keeps brackets.
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!allowPrivate && isSpecialUseName(host)) throw new FetchRefused(PRIVATE_TARGET, 'address');
  const family = isIP(host);
  const addresses = family !== 0 ? [{ address: host, family }] : await resolveName(host, policy.resolve);
  if (!allowPrivate && addresses.some(({ address }) => !policy.isPublic(address)))
    throw new FetchRefused(PRIVATE_TARGET, 'address');
  return addresses;
}

async function resolveName(host: string, resolve: HostResolver): Promise<LookupAddress[]> {
  let addresses: LookupAddress[];
  try {
    addresses = await resolve(host);
  } catch {
    throw new FetchRefused('the host name does not resolve', 'network');
  }
  if (addresses.length === 0) throw new FetchRefused('the host name does not resolve', 'network');
  return addresses;
}

/**
 * A `lookup` for http(s).request that answers only the already-checked addresses, so the connection goes
 * where the check looked (no second DNS query, no rebinding) while Host and TLS SNI keep the host name.
 */
export function pinnedLookup(addresses: LookupAddress[]): LookupFunction {
  return (_hostname: string, options: LookupOptions, callback) => {
    const wanted = familyNumber(options.family);
    const usable = wanted === 0 ? addresses : addresses.filter((entry) => entry.family === wanted);
    const first = usable[0];
    if (first === undefined) {
      const error: NodeJS.ErrnoException = new Error('no checked address of the requested family');
      error.code = 'ENOTFOUND';
      callback(error, '', 0);
    } else if (options.all) {
      callback(null, usable);
    } else {
      callback(null, first.address, first.family);
    }
  };
}

function familyNumber(family: LookupOptions['family']): number {
  if (family === 4 || family === 'IPv4') return 4;
  if (family === 6 || family === 'IPv6') return 6;
  return 0;
}
